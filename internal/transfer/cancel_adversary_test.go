package transfer_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// Two DELETEs of one queued key by the same principal (one IAM role behind two workers, or the
// anonymous caller of a stack without authorization) in the same millisecond: the second writes
// between the first's read and its write, so the first's write fails its condition and its read
// back finds the second's cancellation. Only one DELETE cancelled the transfer; the other must be
// answered Replayed (Idempotent-Replayed: true), as Cancellation.Replayed promises ("cancelled
// before this call"). The read back recognises "its own" write by incarnation, version, caller
// and millisecond, which the other DELETE shares; each DELETE's request ID (Audit.RequestID) is
// what tells them apart.
func TestCancelReplayedUnlessThisCallCancelled(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	enqueued(t, h, "twice-0001")
	first := transfer.Canceller{Caller: ops.Caller, RequestID: "req-first"}
	second := transfer.Canceller{Caller: ops.Caller, RequestID: "req-second"}
	var secondGot transfer.Cancellation
	var secondErr error
	var fired atomic.Bool
	h.store.Fail(func(op string) error {
		if op == "replace" && fired.CompareAndSwap(false, true) {
			secondGot, secondErr = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "twice-0001", second)
		}
		return nil
	})
	firstGot, firstErr := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "twice-0001", first)
	h.store.Fail(nil)
	if !fired.Load() || firstErr != nil || secondErr != nil {
		t.Fatalf("interleaving fired %v; first %v, second %v", fired.Load(), firstErr, secondErr)
	}
	rec := h.item(t, "twice-0001")
	if rec.Status != transfer.StatusCancelled || rec.Audit == nil || rec.Audit.RequestID != second.RequestID {
		t.Fatalf("item %+v (audit %+v): want the second DELETE's cancellation", rec, rec.Audit)
	}
	if secondGot.Replayed {
		t.Errorf("the DELETE whose write applied answered Replayed")
	}
	if !firstGot.Replayed {
		t.Errorf("the DELETE whose write failed its condition answered as the one that cancelled (Replayed false): two DELETEs each claim the cancellation")
	}
}

// cancelOnClaimStore applies a claim, then, before its answer reaches the caller, lets cancel run
// (a DELETE from a client that saw the transfer pending), then answers the claim as the DynamoDB
// store does after the SDK retried a write whose first attempt applied: the retry failed its
// condition and the holder (the item as it now is) comes back, won false.
type cancelOnClaimStore struct {
	*transfertest.Store
	cancel func()
	done   atomic.Bool
}

func (s *cancelOnClaimStore) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	got, won, err := s.Store.Claim(ctx, rec, now)
	if err != nil || !won || !s.done.CompareAndSwap(false, true) {
		return got, won, err
	}
	s.cancel()
	held, gerr := s.Store.Get(ctx, rec.StoreKey)
	if gerr != nil {
		return transfer.Record{}, false, gerr
	}
	return held, false, nil
}

// An async POST whose claim applied, whose answer was lost, and whose transfer a DELETE cancelled
// before the POST read its key back must not answer 202 Accepted (pending, "it will run"): the
// transfer is cancelled and never runs. Enqueue takes any holder of its own ClaimID for its own
// queued claim, whatever its status; the answer the key holds is TRANSFER_CANCELLED.
func TestEnqueueNeverAcceptsACancelledTransfer(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	q := &recordingQueue{}
	h.orch.Queue = q
	var cancelErr error
	s := &cancelOnClaimStore{Store: h.store}
	s.cancel = func() { _, cancelErr = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "lostclaim-0001", ops) }
	h.orch.Store = s
	res, err := h.orch.Enqueue(ctx, input("lostclaim-0001", "5"))
	if cancelErr != nil {
		t.Fatalf("the DELETE between the claim and its answer: %v", cancelErr)
	}
	if rec := h.item(t, "lostclaim-0001"); rec.Status != transfer.StatusCancelled {
		t.Fatalf("item %+v, want cancelled", rec)
	}
	if res.Accepted || res.View.Status == "pending" {
		t.Errorf("POST answered %+v, %v: 202 pending for a transfer already cancelled", res, err)
	}
	if !errors.As(err, new(*transfer.CancelledError)) {
		t.Errorf("POST error %v, want TRANSFER_CANCELLED", err)
	}
}
