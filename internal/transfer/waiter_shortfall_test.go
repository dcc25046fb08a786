package transfer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// heldThenFreed leaves key an in_flight item of in under a live lease ("alive") whose envelope the
// ledger included FAILED with codes, and makes the first read of a waiting call see the holder
// free it (free: the item deleted, or, async, queued again).
func heldThenFreed(t *testing.T, h *harness, in transfer.Input, codes []string, async bool) *bool {
	t.Helper()
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = codes
	rec := crashAt(t, h, in.ClientKey, transfer.StepSent)
	h.clock.Advance(6 * time.Second) // a ledger closes with the envelope in it, FAILED
	h.ledger.closeIfDue()
	rec.LeaseOwner, rec.LeaseExpiresAt, rec.Async = "alive", h.clock.Now().Add(time.Minute), async
	h.store.Put(rec)
	freed := false
	h.store.Fail(func(op string) error {
		if op == "get" && !freed {
			// The holder's release (or requeue), seen by the waiting call's first read.
			freed = true
			if async {
				h.store.Put(transfer.Requeued(rec, h.clock.Now()))
			} else {
				h.store.Remove(rec.StoreKey)
			}
		}
		return nil
	})
	return &freed
}

// A call waiting on the holder of its key, whose envelope the ledger included FAILED on the
// service's side, answers the holder's own answer once the holder frees the key (503
// SERVICE_SIDE_FAILURE or the shortfall, with its Retry-After): a replay of that failure within
// its Retry-After. It builds no envelope (a new one would meet the same cause, another FAILED
// inclusion and another fee: doc.go, "Classification", no new envelope in the same call nor a
// retry), and never says TRANSACTION_EXPIRED "ended without landing" of an envelope that landed
// FAILED. So for an async item the holder queued again: its message waits the Retry-After, and
// the waiter answers now rather than wait out its budget on it. A holder whose envelope was
// proven dead still lets the waiter build a new one.
func TestWaiterAfterServiceSideReleaseAnswersTheHoldersFailure(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		codes []string
		code  string
		async bool
		short bool // a budget too short to build another envelope (15 s < MinValidity + ProofWindow)
	}{
		{"service side", []string{"tx_failed", "op_bad_auth"}, transfer.CodeServiceSideFailure, false, false},
		{"vault", []string{"tx_failed", "op_underfunded"}, transfer.CodeVaultUnderfunded, false, false},
		{"tx_bad_auth", []string{"tx_bad_auth"}, transfer.CodeServiceSideFailure, false, false},
		{"async requeued", []string{"tx_failed", "op_bad_auth"}, transfer.CodeServiceSideFailure, true, false},
		{"short budget", []string{"tx_failed", "op_bad_auth"}, transfer.CodeServiceSideFailure, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.short {
				h.orch.Settings = func() transfer.Settings {
					s := transfer.DefaultSettings()
					s.Timeout = 15 * time.Second
					return s
				}
			}
			in := input("order-waiter-ssf", "1")
			freed := heldThenFreed(t, h, in, c.codes, c.async)
			prepares, sends := h.ledger.counts()
			start := h.clock.Now()
			_, err := h.orch.Transfer(ctx, in)
			if !*freed {
				t.Fatal("the call never waited on the holder")
			}
			u := unavailable(t, err, c.code)
			if !strings.Contains(u.Detail, "included") || strings.Contains(u.Detail, "without landing") {
				t.Errorf("detail %q: want the holder's FAILED inclusion, never \"without landing\"", u.Detail)
			}
			if p, s := h.ledger.counts(); p != prepares || s != sends {
				t.Errorf("the waiter built %d and sent %d envelopes against the unchanged cause, want none", p-prepares, s-sends)
			}
			if waited := h.clock.Now().Sub(start); waited > time.Second {
				t.Errorf("the waiter answered after %v, want within its first poll", waited)
			}
		})
	}

	t.Run("proven dead still rebuilds", func(t *testing.T) {
		h := newHarness(t)
		in := input("order-waiter-dead", "1")
		freed := heldThenFreed(t, h, in, []string{"tx_failed", "op_bad_auth"}, false)
		h.ledger.mu.Lock()
		h.ledger.landed = map[string]landing{}
		h.ledger.failResult = nil
		h.ledger.mu.Unlock()
		out, err := h.orch.Transfer(ctx, in)
		if !*freed || err != nil || out.TransactionHash == "" {
			t.Fatalf("out %+v, err %v (waited %v): want a new envelope landed", out, err, *freed)
		}
	})
}
