package transfer_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// storeOps records the operations h's store is asked for, in order, by name (transfertest's Fail
// hook), failing those fail names.
func storeOps(h *harness, fail ...string) func() []string {
	var mu sync.Mutex
	var ops []string
	h.store.Fail(func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		ops = append(ops, op)
		if slices.Contains(fail, op) {
			return errors.New("read timed out")
		}
		return nil
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ops)
	}
}

// beforeFirst is ops up to the first op named name.
func beforeFirst(ops []string, name string) []string {
	if i := slices.Index(ops, name); i >= 0 {
		return ops[:i]
	}
	return ops
}

// The submitter reads an event's items with one GetMany (one BatchGetItem on DynamoDB), not a Get
// per message, and pays them in one batch.
func TestRunQueuedBatchReadsTheItemsInOneRequest(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 5)
	ops := storeOps(h)
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if got := beforeFirst(ops(), "replace"); !slices.Equal(got, []string{"getmany"}) {
		t.Fatalf("the store was asked %v before the first take, want one getmany", got)
	}
	if len(fb.built) != 1 || len(fb.built[0]) != 5 {
		t.Fatalf("built %v, want one batch of 5", fb.built)
	}
	for i, ans := range answers {
		if ans.Delivery != transfer.DeliveryDone || ans.Err != nil || h.batchItem(t, i).Status != transfer.StatusReplayable {
			t.Fatalf("message %d: %+v, item %s", i, ans, h.batchItem(t, i).Status)
		}
	}
}

// A GetMany that fails leaves nothing unread: each item is read with Get, and the batch is formed
// as it would have been.
func TestRunQueuedBatchReadsEachItemWhenGetManyFails(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 4)
	ops := storeOps(h, "getmany")
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if got := beforeFirst(ops(), "replace"); !slices.Equal(got, []string{"getmany", "get", "get", "get", "get"}) {
		t.Fatalf("the store was asked %v before the first take, want the failed getmany then a get per message", got)
	}
	if len(fb.built) != 1 || len(fb.built[0]) != 4 {
		t.Fatalf("built %v, want one batch of 4", fb.built)
	}
	for i, ans := range answers {
		if ans.Delivery != transfer.DeliveryDone || ans.Err != nil {
			t.Fatalf("message %d: %+v", i, ans)
		}
	}
}

// A message whose item is gone (no item at its key) is answered by RunQueued, alone, as stale;
// the others are batched.
func TestRunQueuedBatchMessageWithoutItemRunsAlone(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	h.store.Remove(msgs[1].StoreKey)
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if answers[1].Delivery != transfer.DeliveryStale {
		t.Fatalf("message without an item: %+v, want stale", answers[1])
	}
	if len(fb.built) != 1 || len(fb.built[0]) != 2 {
		t.Fatalf("built %v, want one batch of the 2 others", fb.built)
	}
}
