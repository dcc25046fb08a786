package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A key held by an in-flight claim (its invocation died after attaching the envelope) is never
// answered CHANNELS_BUSY, whatever the admission says: under the live lease the retry waits on it
// and answers TRANSFER_IN_PROGRESS; once the lease ends it takes the claim over and the envelope
// lands once. A busy answer there would say the key is free and nothing
// was submitted, both false.
func TestABusyAnswerNeverHidesAnInFlightClaim(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
		if s == transfer.StepAttached {
			return errCrash
		}
		return nil
	}
	if _, err := h.orch.Transfer(context.Background(), input("order-admit-adv-1", "3")); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v, want the crash", err)
	}
	h.orch.Hooks = nil
	adm.set(channelsBusy(5 * time.Second))
	if _, err := h.orch.Transfer(context.Background(), input("order-admit-adv-1", "3")); problemCode(err) != transfer.CodeInProgress {
		t.Fatalf("retry under a live lease while busy: %v, want TRANSFER_IN_PROGRESS", err)
	}
	if _, err := h.orch.Transfer(context.Background(), input("order-admit-adv-1", "4")); !errors.As(err, new(*transfer.ConflictError)) {
		t.Fatalf("another request under the held key while busy: %v, want ConflictError", err)
	}
	h.clock.Advance(time.Minute) // the dead invocation's lease expires
	h.ledger.closeIfDue()
	out, err := h.orch.Transfer(context.Background(), input("order-admit-adv-1", "3"))
	if err != nil || out.TransactionHash == "" {
		t.Fatalf("take-over while busy: %+v, %v; want the envelope's outcome", out, err)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("landed=%d, want 1", n)
	}
	if adm.calls() != 4 || adm.released != 4 {
		t.Fatalf("%d admissions, %d releases; want 4 of each", adm.calls(), adm.released)
	}
}
