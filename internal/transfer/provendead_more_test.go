package transfer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// deadTakenOver seeds the key of in with an expired claim whose envelope an earlier invocation
// sent and which can no longer land (its maxTime passed): the call takes it over and proves it
// dead on its first lookup.
func deadTakenOver(h *harness, in transfer.Input) string {
	now := h.clock.Now()
	key := transfer.StoreKey(wallet, in.ClientKey)
	h.store.Put(transfer.Record{
		StoreKey: key, ClaimID: "dead-invocation", Status: transfer.StatusInFlight,
		Fingerprint: in.Request.Fingerprint(), Request: in.Request, ClientKey: in.ClientKey,
		LeaseOwner: "dead", LeaseExpiresAt: now.Add(-time.Minute), Version: 2, CreatedAt: now.Add(-2 * time.Minute), UpdatedAt: now.Add(-2 * time.Minute),
		Envelope: &transfer.Envelope{XDR: "xdr-sent", InnerHash: strings.Repeat("ab", 32), MaxTime: now.Add(-time.Minute).Unix(), SubmittedLedger: 90, Channel: "GVAULT"},
	})
	return key
}

func wantNothingMoved(t *testing.T, err error, code string) {
	t.Helper()
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	if strings.Contains(u.Detail, "nothing was submitted") || !strings.Contains(u.Detail, "nothing moved") {
		t.Fatalf("detail %q: an envelope of this transfer was submitted and proven dead; want \"nothing moved\", never \"nothing was submitted\"", u.Detail)
	}
}

// TestNothingWasSubmittedIsNeverSaidWhenTheClaimAfterAProvenDeadEnvelopeFails: the call proves
// the taken-over envelope dead, releases the key, and its claim of a new envelope fails with the
// key read back free: STORE_UNAVAILABLE, but an envelope of this transfer was submitted.
func TestNothingWasSubmittedIsNeverSaidWhenTheClaimAfterAProvenDeadEnvelopeFails(t *testing.T) {
	h := newHarness(t)
	in := input("order-dead-then-claim-fails", "5")
	deadTakenOver(h, in)
	var mu sync.Mutex
	claims := 0
	h.store.Fail(func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		if op == "claim" {
			if claims++; claims > 1 {
				return errors.New("dynamodb: throttled")
			}
		}
		return nil
	})
	_, err := h.orch.Transfer(context.Background(), in)
	wantNothingMoved(t, err, transfer.CodeStoreUnavailable)
	if claims < 2 {
		t.Fatalf("%d claims, want the second one to fail", claims)
	}
}

// TestNothingWasSubmittedIsNeverSaidWhenTheNextEnvelopeCannotReachTheNetwork: the call proves the
// taken-over envelope dead, builds the next, and every send of it fails before reaching the
// network: NETWORK_UNAVAILABLE, but an envelope of this transfer was submitted.
func TestNothingWasSubmittedIsNeverSaidWhenTheNextEnvelopeCannotReachTheNetwork(t *testing.T) {
	h := newHarness(t)
	in := input("order-dead-then-unreachable", "5")
	deadTakenOver(h, in)
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if env.InnerHash == strings.Repeat("ab", 32) {
			return transfer.SendResult{Status: transfer.SendPending}, false, nil
		}
		return transfer.SendResult{}, false, transfer.ErrNotSent
	}
	_, err := h.orch.Transfer(context.Background(), in)
	wantNothingMoved(t, err, transfer.CodeNetworkUnavailable)
}

// TestNothingWasSubmittedIsNeverSaidAfterAnInDoubtEnvelopeWasProvenDeadInline: the key holds this
// request's in-doubt item (an earlier invocation sent its envelope, the answer was lost); the
// call proves that envelope dead inline, releases the key, and then cannot prepare the next one:
// an envelope of this transfer was submitted, so the answer says "nothing moved".
func TestNothingWasSubmittedIsNeverSaidAfterAnInDoubtEnvelopeWasProvenDeadInline(t *testing.T) {
	h := newHarness(t)
	in := input("order-in-doubt-dead-then-cap", "5")
	key := deadTakenOver(h, in)
	rec, _ := h.store.Item(key)
	rec.Status, rec.LeaseOwner, rec.LeaseExpiresAt = transfer.StatusInDoubt, "", time.Time{}
	h.store.Put(rec)
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, Detail: "the classic lane needs 5000 stroops per operation; nothing was submitted"}
	_, err := h.orch.Transfer(context.Background(), in)
	wantNothingMoved(t, err, transfer.CodeFeeAboveCap)
	if _, held := h.store.Item(key); held {
		t.Fatal("the key is still held")
	}
}

// TestNothingWasSubmittedIsNeverSaidAfterTheEnvelopeACallWaitedOnWasReleased: another call of
// the same request holds the key and has sent its envelope; this call waits on it. The holder
// proves its envelope dead and releases the key (an item with an envelope is released only once
// nothing can land from it); this call claims and cannot prepare the next envelope. An envelope
// of this transfer was submitted: "nothing moved", never "nothing was submitted".
func TestNothingWasSubmittedIsNeverSaidAfterTheEnvelopeACallWaitedOnWasReleased(t *testing.T) {
	h := newHarness(t)
	in := input("order-waited-dead-then-cap", "5")
	key := deadTakenOver(h, in)
	rec, _ := h.store.Item(key)
	rec.LeaseOwner, rec.LeaseExpiresAt = "alive", h.clock.Now().Add(time.Minute)
	h.store.Put(rec)
	released := false
	h.store.Fail(func(op string) error {
		if op == "get" && !released {
			// The holder's release, seen by the first read of the waiting call (the hook runs
			// just before the read).
			released = true
			h.store.Remove(key)
		}
		return nil
	})
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, Detail: "the classic lane needs 5000 stroops per operation; nothing was submitted"}
	_, err := h.orch.Transfer(context.Background(), in)
	if !released {
		t.Fatal("the call never waited on the holder")
	}
	wantNothingMoved(t, err, transfer.CodeFeeAboveCap)
}

// A call that waited on a claim with no envelope yet (its holder's Prepare failed, nothing sent)
// still says "nothing was submitted" of its own refusal.
func TestNothingWasSubmittedIsSaidAfterWaitingOnAClaimThatNeverSent(t *testing.T) {
	h := newHarness(t)
	in := input("order-waited-nothing-then-cap", "5")
	key := deadTakenOver(h, in)
	rec, _ := h.store.Item(key)
	rec.LeaseOwner, rec.LeaseExpiresAt, rec.Envelope = "alive", h.clock.Now().Add(time.Minute), nil
	h.store.Put(rec)
	released := false
	h.store.Fail(func(op string) error {
		if op == "get" && !released {
			released = true
			h.store.Remove(key)
		}
		return nil
	})
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, Detail: "the classic lane needs 5000 stroops per operation; nothing was submitted"}
	_, err := h.orch.Transfer(context.Background(), in)
	var u *transfer.UnavailableError
	if !released || !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || !strings.Contains(u.Detail, "nothing was submitted") {
		t.Fatalf("err = %v (waited %v), want FEE_ABOVE_CAP saying nothing was submitted", err, released)
	}
}
