package transfer_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An event of more messages than TransactionsPerInvocation batches of BATCH_SIZE carry (10
// messages, batches of 3, at most 2 per invocation: template.yaml's k when BATCH_OPS_PER_LEDGER
// made the batches smaller than TransfersPerTransaction): exactly 2 batches are built and paid, and
// every other message is answered DeliveryRetry (CHANNELS_BUSY, Retry-After one ledger) with its
// item exactly as it was, still queued under its claim, and nothing paid for it. Delivered again,
// they are paid, each once.
func TestRunQueuedBatchFormsAtMostTransactionsPerInvocation(t *testing.T) {
	h, fb, msgs := batchHarness(t, 3, 10)
	s := h.orch.Settings()
	s.TransactionsPerInvocation = 2
	h.orch.Settings = func() transfer.Settings { return s }
	before := make([]transfer.Record, len(msgs))
	for i := range msgs {
		before[i] = h.batchItem(t, i)
	}

	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(fb.built) != 2 || len(fb.built[0]) != 3 || len(fb.built[1]) != 3 {
		t.Fatalf("built %v, want two batches of 3", fb.built)
	}
	if n := h.ledger.landedCount(); n != 2 {
		t.Fatalf("%d transactions landed, want 2", n)
	}
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if i < 6 {
			if ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable || rec.Batch == nil {
				t.Errorf("message %d: %+v; item %s, batch %+v; want done, paid in a batch", i, ans, rec.Status, rec.Batch)
			}
			continue
		}
		var busy *transfer.UnavailableError
		if ans.Delivery != transfer.DeliveryRetry || !errors.As(ans.Err, &busy) || busy.Code != transfer.CodeChannelsBusy ||
			transfer.RetryAfter(ans.Err) != transfer.DefaultLedgerInterval {
			t.Errorf("message %d: %+v, want DeliveryRetry with CHANNELS_BUSY after %v", i, ans, transfer.DefaultLedgerInterval)
		}
		if !reflect.DeepEqual(rec, before[i]) {
			t.Errorf("item %d was touched:\n%+v\nwant\n%+v", i, rec, before[i])
		}
		for _, b := range fb.built {
			for _, req := range b {
				if req.WalletAddress == walletN(i) {
					t.Errorf("item %d's transfer was built into a batch", i)
				}
			}
		}
	}

	h.clock.Advance(transfer.DefaultLedgerInterval)
	again := h.orch.RunQueuedBatch(context.Background(), msgs[6:])
	for j, ans := range again {
		if rec := h.batchItem(t, 6+j); ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable {
			t.Errorf("message %d delivered again: %+v, item %s; want done and paid", 6+j, ans, rec.Status)
		}
	}
	// 6 + 3 in batches and the last alone (a batch of one runs alone): 4 transactions in all.
	if n := h.ledger.landedCount(); n != 4 {
		t.Errorf("%d transactions landed in all, want 4", n)
	}
}

// With no bound (TransactionsPerInvocation 0, the default) every batch the event fills is formed.
func TestRunQueuedBatchUnboundedFormsEveryBatch(t *testing.T) {
	h, fb, msgs := batchHarness(t, 3, 9)
	for i, ans := range h.orch.RunQueuedBatch(context.Background(), msgs) {
		if ans.Delivery != transfer.DeliveryDone {
			t.Errorf("message %d: %+v", i, ans)
		}
	}
	if len(fb.built) != 3 {
		t.Errorf("built %d batches, want 3", len(fb.built))
	}
}

// An event of more than MaxBatchOperations batchable items has its destinations checked at most a
// hundred at a time (one getLedgerEntries holds at most 200 keys: a chunk's trustlines, then its
// missing accounts), each line's payments in one check (150 keys to 26 wallets, 5 or 6 each:
// 16 lines, 96 keys, then 10 lines, 54), and a destination refused in any chunk runs alone.
func TestRunQueuedBatchChecksDestinationsInChunks(t *testing.T) {
	h, fb, msgs := batchHarness(t, 100, 150)
	fb.refuse[walletN(120)] = "op_no_trust"
	h.orch.RunQueuedBatch(context.Background(), msgs)
	slices.Sort(fb.checks)
	if !slices.Equal(fb.checks, []int{54, 96}) {
		t.Errorf("CheckDestinations calls of %v requests, want 96 and 54", fb.checks)
	}
	for _, b := range fb.built {
		for _, req := range b {
			if req.WalletAddress == walletN(120) && len(b) > 1 {
				t.Errorf("the refused destination was batched with %d others", len(b)-1)
			}
		}
	}
}
