package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// wholeSeconds is d rounded up to the whole second, as a hold's time left is answered.
func wholeSeconds(d time.Duration) time.Duration {
	if r := d % time.Second; r > 0 {
		d += time.Second - r
	}
	return d
}

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
	if rec.Status != transfer.StatusQueued || rec.NotBefore != failedAt.Add(failed.RetryAfter).Unix() || rec.Result == nil || rec.Result.Code != failed.Code {
		t.Fatalf("item %s, notBefore %d, result %+v; want queued again, held back until %d with its failure",
			rec.Status, rec.NotBefore, rec.Result, failedAt.Add(failed.RetryAfter).Unix())
	}
	heldUntil := time.Unix(rec.NotBefore, 0)
	prepares, sends := h.ledger.counts()

	// A synchronous call within the Retry-After: the stored failure, at once, nothing built.
	h.clock.Advance(10 * time.Second)
	start := h.clock.Now()
	_, err = h.orch.Transfer(ctx, input("payout-notbefore-1", "1"))
	u := unavailable(t, err, transfer.CodeServiceSideFailure)
	if waited := h.clock.Now().Sub(start); waited != 0 {
		t.Errorf("the call waited %v, want the stored failure at once", waited)
	}
	if want := wholeSeconds(heldUntil.Sub(h.clock.Now())); u.RetryAfter != want {
		t.Errorf("Retry-After %v, want the time left, %v", u.RetryAfter, want)
	}
	if u.Detail != failed.Detail {
		t.Errorf("detail %q, want the stored failure's %q", u.Detail, failed.Detail)
	}

	// The item's own message, back once the taking call's lease ended: put back, never run.
	h.clock.Advance(20 * time.Second)
	d, err := h.orch.RunQueued(ctx, m)
	left := wholeSeconds(heldUntil.Sub(h.clock.Now()))
	if d != transfer.DeliveryRetry || transfer.RetryAfter(err) != left {
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
	h.clock.Advance(left)
	if d, err := h.orch.RunQueued(ctx, m); d != transfer.DeliveryDone || err != nil {
		t.Fatalf("run after the Retry-After = %s, %v; want done", d, err)
	}
	if got := h.item(t, "payout-notbefore-1"); got.Status != transfer.StatusReplayable {
		t.Fatalf("item %s, want replayable", got.Status)
	}
}

// refusedHolder runs key's async transfer (accepted, then run by the submitter) against a network
// that refuses every send with txBAD_AUTH (a signer rotated before the send), and returns the item
// as its holder held it just before its send (in_flight, its envelope attached) and the item its
// refusal left.
func refusedHolder(t *testing.T, h *harness, key string) (holding, after transfer.Record) {
	t.Helper()
	ctx := context.Background()
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendError, Code: "txBAD_AUTH"}, false, nil
	}
	h.orch.Hooks = func(_ context.Context, s transfer.Step, rec transfer.Record) error {
		if s == transfer.StepAttached {
			holding = rec
		}
		return nil
	}
	defer func() { h.orch.Hooks = nil }()
	if res, err := h.orch.Enqueue(ctx, input(key, "1")); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	rec := h.item(t, key)
	d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	if d != transfer.DeliveryRetry {
		t.Fatalf("the holder's run = %s, want retry (requeued)", d)
	}
	unavailable(t, err, transfer.CodeServiceSideFailure)
	if holding.Envelope == nil {
		t.Fatal("the holder attached no envelope")
	}
	return holding, h.item(t, key)
}

// A call waiting on the submitter that holds its key, whose first send the network refused as the
// service's side (txBAD_AUTH: SERVICE_SIDE_FAILURE, paged), answers the holder's failure once the
// holder queues the item again, as a waiter on a FAILED inclusion does (heldShortfall): at once,
// building, sending and paging nothing. A refusal leaves nothing on the ledger to look up, so the
// answer comes from what the holder wrote: the requeue held back with its failure (RequeuedAfter).
// Without it the waiter finds the envelope NOT_FOUND, goes back to the key, meets the queued item
// and waits on it until its budget ends, for a message held back a minute.
func TestWaiterOnARequeuedHolderRefusedAsTheServicesSideAnswersItsFailure(t *testing.T) {
	ctx := context.Background()
	h, logs := pagingHarness(t)
	h.orch.Queue = &recordingQueue{}
	key := "payout-waiter-refused"
	holding, after := refusedHolder(t, h, key)
	pages := len(logs.alerts(t))
	prepares, sends := h.ledger.counts()

	// The holder's requeue as the waiter sees it: the item under a live lease with its envelope,
	// then, on the waiter's first read, what the holder's refusal wrote.
	holding.LeaseOwner, holding.LeaseExpiresAt = "alive", h.clock.Now().Add(time.Minute)
	h.store.Put(holding)
	freed := false
	h.store.Fail(func(op string) error {
		if op == "get" && !freed {
			freed = true
			h.store.Put(after)
		}
		return nil
	})
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input(key, "1"))
	if !freed {
		t.Fatal("the call never waited on the holder")
	}
	u := unavailable(t, err, transfer.CodeServiceSideFailure)
	if !strings.Contains(u.Detail, "txBAD_AUTH") {
		t.Errorf("detail %q: want the holder's refusal (txBAD_AUTH)", u.Detail)
	}
	if u.RetryAfter < 59*time.Second || u.RetryAfter > time.Minute {
		t.Errorf("Retry-After %v, want what is left of the holder's minute", u.RetryAfter)
	}
	if p, s := h.ledger.counts(); p != prepares || s != sends {
		t.Errorf("the waiter built %d and sent %d envelopes against the unchanged signers, want none", p-prepares, s-sends)
	}
	if got := len(logs.alerts(t)); got != pages {
		t.Errorf("the waiter paged %d more times, want none (its holder paged)", got-pages)
	}
	if waited := h.clock.Now().Sub(start); waited > time.Second {
		t.Errorf("the waiter answered after %v, want within its first poll", waited)
	}
}

// The same rule for a batched key: a synchronous call that takes over a key of a batch the ledger
// included FAILED on the service's side (tx_bad_auth) requeues the key held back for the
// failure's Retry-After, so its message, back before then, runs nothing.
func TestRequeuedBatchedKeyRunsNotBeforeItsFailuresRetryAfter(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, _ := forgedBatch(t, h, "batch-held-1", "batch-held-2")
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_bad_auth"}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second) // the lease ends; a ledger closes with the batch in it, FAILED

	_, err := h.orch.Transfer(ctx, input("batch-held-2", "5"))
	failed := unavailable(t, err, transfer.CodeServiceSideFailure)
	rec := h.item(t, "batch-held-2")
	if rec.Status != transfer.StatusQueued {
		t.Fatalf("item %s, want queued again", rec.Status)
	}
	if rec.NotBefore != h.clock.Now().Add(failed.RetryAfter).Unix() {
		t.Fatalf("notBefore %d, want the failure's Retry-After away, %d", rec.NotBefore, h.clock.Now().Add(failed.RetryAfter).Unix())
	}
	prepares, sends := h.ledger.counts()
	h.clock.Advance(30 * time.Second)
	d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	if want := wholeSeconds(time.Unix(rec.NotBefore, 0).Sub(h.clock.Now())); d != transfer.DeliveryRetry || transfer.RetryAfter(err) != want {
		t.Fatalf("run 30 s after the failure = %s, %v (RetryAfter %v); want a retry after the remaining %v", d, err, transfer.RetryAfter(err), want)
	}
	if p, s := h.ledger.counts(); p != prepares || s != sends {
		t.Fatalf("built %d and sent %d envelopes before the Retry-After, want none", p-prepares, s-sends)
	}
}
