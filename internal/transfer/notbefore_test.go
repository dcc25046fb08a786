package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// takenOverAsync leaves key an async item taken by a submitter that died before building anything
// (in_flight, no envelope, its lease expired), and returns its message.
func takenOverAsync(t *testing.T, h *harness, key string) transfer.QueueMessage {
	t.Helper()
	ctx := context.Background()
	if res, err := h.orch.Enqueue(ctx, input(key, "1")); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	rec := h.item(t, key)
	m := transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}
	h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
		if s == transfer.StepClaimed {
			return errCrash
		}
		return nil
	}
	if _, err := h.orch.RunQueued(ctx, m); !errors.Is(err, errCrash) {
		t.Fatalf("run = %v, want the crash after the take", err)
	}
	h.orch.Hooks = nil
	rec = h.item(t, key)
	h.clock.Advance(rec.LeaseExpiresAt.Sub(h.clock.Now()) + time.Second)
	return m
}

// A synchronous call that takes over an async item's expired lease and meets a failure on the
// service's side (its envelope included FAILED op_bad_auth) requeues the item, and the item
// waits that failure's Retry-After before anything runs it again: its own message, which found
// the caller's live lease and comes back once that lease ends (about half a minute, not the
// minute), is put back for the time remaining and runs nothing; a synchronous call meanwhile is
// answered the stored failure with the remaining Retry-After, building nothing. Only after the
// Retry-After does the message build a new envelope. (Without the hold, the message builds at the
// lease's end against the unchanged cause: another FAILED inclusion, another fee, another page.)
func TestRequeuedItemRunsNotBeforeItsFailuresRetryAfter(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	m := takenOverAsync(t, h, "payout-notbefore-1")
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_bad_auth"}

	_, err := h.orch.Transfer(ctx, input("payout-notbefore-1", "1"))
	failed := unavailable(t, err, transfer.CodeServiceSideFailure)
	failedAt := h.clock.Now()
	rec := h.item(t, "payout-notbefore-1")
	if rec.Status != transfer.StatusQueued {
		t.Fatalf("item %s, want queued again", rec.Status)
	}
	prepares, sends := h.ledger.counts()

	// A synchronous call within the Retry-After: the stored failure, at once, nothing built.
	h.clock.Advance(10 * time.Second)
	start := h.clock.Now()
	_, err = h.orch.Transfer(ctx, input("payout-notbefore-1", "1"))
	u := unavailable(t, err, transfer.CodeServiceSideFailure)
	if waited := h.clock.Now().Sub(start); waited != 0 {
		t.Errorf("the call waited %v, want the stored failure at once", waited)
	}
	if want := failed.RetryAfter - 10*time.Second; u.RetryAfter < want || u.RetryAfter > want+time.Second {
		t.Errorf("Retry-After %v, want the remaining %v (to the whole second)", u.RetryAfter, want)
	}
	if u.Detail != failed.Detail {
		t.Errorf("detail %q, want the stored failure's %q", u.Detail, failed.Detail)
	}

	// The item's own message, back once the taking call's lease ended: put back, never run.
	h.clock.Advance(20 * time.Second)
	d, err := h.orch.RunQueued(ctx, m)
	left := failedAt.Add(failed.RetryAfter).Sub(h.clock.Now())
	if d != transfer.DeliveryRetry || transfer.RetryAfter(err) < left || transfer.RetryAfter(err) > left+time.Second {
		t.Fatalf("run at %v = %s, %v (RetryAfter %v); want a retry after the remaining %v",
			h.clock.Now().Sub(failedAt), d, err, transfer.RetryAfter(err), left)
	}
	if p, s := h.ledger.counts(); p != prepares || s != sends {
		t.Fatalf("built %d and sent %d envelopes before the Retry-After, want none", p-prepares, s-sends)
	}
	if got := h.item(t, "payout-notbefore-1"); got.Status != transfer.StatusQueued || got.Version != rec.Version {
		t.Fatalf("item %s v%d, want queued v%d unchanged", got.Status, got.Version, rec.Version)
	}

	// After the Retry-After the message runs it, once the cause is gone.
	h.ledger.failResult = nil
	h.clock.Advance(left + time.Second)
	if d, err := h.orch.RunQueued(ctx, m); d != transfer.DeliveryDone || err != nil {
		t.Fatalf("run after the Retry-After = %s, %v; want done", d, err)
	}
	if got := h.item(t, "payout-notbefore-1"); got.Status != transfer.StatusReplayable {
		t.Fatalf("item %s, want replayable", got.Status)
	}
}
