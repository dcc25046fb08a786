package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// crashAt runs a transfer that is abandoned at step, leaving its item as a dead invocation would.
func crashAt(t *testing.T, h *harness, key string, step transfer.Step) transfer.Record {
	t.Helper()
	h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
		if s == step {
			return errCrash
		}
		return nil
	}
	defer func() { h.orch.Hooks = nil }()
	if _, err := h.orch.Transfer(context.Background(), input(key, "1")); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v, want the crash", err)
	}
	return h.item(t, key)
}

func TestSettleExpiredClaims(t *testing.T) {
	ctx := context.Background()

	t.Run("live lease is left alone", func(t *testing.T) {
		h := newHarness(t)
		rec := crashAt(t, h, "settle-0001", transfer.StepAttached)
		s, err := h.orch.Settle(ctx, rec)
		if err != nil || s.Resolution != transfer.Unresolved || h.item(t, "settle-0001").Version != rec.Version {
			t.Fatalf("settle = %+v, %v", s, err)
		}
	})
	t.Run("no envelope: released", func(t *testing.T) {
		h := newHarness(t)
		rec := crashAt(t, h, "settle-0002", transfer.StepClaimed)
		h.clock.Advance(time.Minute)
		s, err := h.orch.Settle(ctx, rec)
		if err != nil || s.Resolution != transfer.ResolvedReleased {
			t.Fatalf("settle = %+v, %v", s, err)
		}
		if _, ok := h.store.Item(rec.StoreKey); ok {
			t.Fatal("the item should be deleted")
		}
	})
	t.Run("envelope sent and landed: replayable", func(t *testing.T) {
		h := newHarness(t)
		rec := crashAt(t, h, "settle-0003", transfer.StepSent)
		h.clock.Advance(time.Minute)
		h.ledger.closeIfDue()
		s, err := h.orch.Settle(ctx, rec)
		if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Result.TransactionHash != rec.Envelope.InnerHash {
			t.Fatalf("settle = %+v, %v", s, err)
		}
		if got := h.item(t, "settle-0003"); got.Status != transfer.StatusReplayable || got.ExpiresAt == 0 {
			t.Fatalf("item = %+v", got)
		}
	})
	t.Run("envelope that cannot be judged yet: parked in doubt", func(t *testing.T) {
		h := newHarness(t)
		h.ledger.noClose = true
		rec := crashAt(t, h, "settle-0004", transfer.StepSent)
		h.clock.Advance(time.Minute)
		s, err := h.orch.Settle(ctx, rec)
		if err != nil || s.Resolution != transfer.ResolvedInDoubt {
			t.Fatalf("settle = %+v, %v", s, err)
		}
		got := h.item(t, "settle-0004")
		if got.Status != transfer.StatusInDoubt || got.Result.Code != transfer.CodeLeaseExpired || got.Envelope.XDR == "" || got.ExpiresAt != 0 {
			t.Fatalf("item = %+v", got)
		}
		// Once ledgers close past maxTime without it, the same envelope is proven dead.
		h.ledger.noClose = false
		h.ledger.mu.Lock()
		h.ledger.queued = map[string]transfer.Envelope{} // the network dropped it
		h.ledger.mu.Unlock()
		h.clock.Advance(time.Minute)
		h.ledger.closeIfDue()
		s, err = h.orch.Settle(ctx, got)
		if err != nil || s.Resolution != transfer.ResolvedReleased {
			t.Fatalf("settle = %+v, %v", s, err)
		}
	})
	t.Run("stale version loses", func(t *testing.T) {
		h := newHarness(t)
		rec := crashAt(t, h, "settle-0005", transfer.StepClaimed)
		h.clock.Advance(time.Minute)
		stale := rec
		stale.Version--
		if _, err := h.orch.Settle(ctx, stale); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("err = %v, want ErrConditionFailed", err)
		}
	})
}
