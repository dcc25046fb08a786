package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// busyAnswer checks that err is a 503 CHANNELS_BUSY with retryAfter, that the key is free and
// that the call took no time: overload is answered at once.
func (h *harness) busyAnswer(t *testing.T, err error, key string, retryAfter time.Duration, start time.Time) {
	t.Helper()
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != transfer.CodeChannelsBusy || ue.RetryAfter != retryAfter {
		t.Fatalf("err = %v, want CHANNELS_BUSY with RetryAfter %v", err, retryAfter)
	}
	if p := ue.Problem(); p.Kind != transfer.KindUnavailable || p.Classification != transfer.Retryable || p.RetryAfter != retryAfter {
		t.Errorf("problem %+v", p)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, key)); ok {
		t.Error("the key is still claimed: a retry would wait for it")
	}
	if d := h.clock.Now().Sub(start); d != 0 {
		t.Errorf("the busy answer took %v", d)
	}
}

// No transaction source within a ledger (Prepare answers CHANNELS_BUSY): nothing is sent, the key
// is free at once, and the client's retry after Retry-After with the same key goes through.
func TestChannelsBusyFreesTheKeyAndARetryLands(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 7 * time.Second,
		Detail: "every channel account is busy; nothing was submitted"}
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input("order-busy-1", "3"))
	h.busyAnswer(t, err, "order-busy-1", 7*time.Second, start)
	if _, s := h.ledger.counts(); s != 0 {
		t.Fatalf("%d sends for a call that had no source", s)
	}
	h.ledger.prepareErr = nil
	_ = h.clock.Sleep(ctx, 7*time.Second)
	out, err := h.orch.Transfer(ctx, input("order-busy-1", "3"))
	if err != nil || out.Replayed || out.TransactionHash == "" {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if p, s := h.ledger.counts(); p != 1 || s != 1 || h.ledger.landedCount() != 1 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want 1/1/1", p, s, h.ledger.landedCount())
	}
}

// The vault is the only source and another process holds its slot in the network's queue: the
// first send is answered TRY_AGAIN_LATER with SourceBusy. The call answers CHANNELS_BUSY at once
// with that Retry-After (no rebuild inside the call, which would meet the same busy slot), the
// key is free, nothing landed, and the retry with the same key lands once.
func TestBusyVaultSlotIsAnsweredAtOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	busy := true
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if busy {
			return transfer.SendResult{Status: transfer.SendTryAgainLater, SourceBusy: 3 * time.Second}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input("order-busy-2", "4"))
	h.busyAnswer(t, err, "order-busy-2", 3*time.Second, start)
	if p, s := h.ledger.counts(); p != 1 || s != 1 || h.ledger.landedCount() != 0 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want 1/1/0", p, s, h.ledger.landedCount())
	}
	busy = false
	_ = h.clock.Sleep(ctx, 3*time.Second)
	out, err := h.orch.Transfer(ctx, input("order-busy-2", "4"))
	if err != nil || out.Replayed {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if p, s := h.ledger.counts(); p != 2 || s != 2 || h.ledger.landedCount() != 1 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want 2/2/1", p, s, h.ledger.landedCount())
	}
}

// The release of a busy call's claim fails: the call deletes its own leftover again before it
// answers CHANNELS_BUSY, so the client's retry does not wait on it as on another request.
func TestBusyAnswerLeavesNoLeftoverClaim(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	failed := 0
	h.store.Fail(func(op string) error {
		if op == "delete" && failed == 0 {
			failed++
			return errors.New("dynamodb: throttled")
		}
		return nil
	})
	busy := true
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if busy {
			return transfer.SendResult{Status: transfer.SendTryAgainLater, SourceBusy: 2 * time.Second}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input("order-busy-3", "6"))
	h.busyAnswer(t, err, "order-busy-3", 2*time.Second, start)
	if failed != 1 {
		t.Fatalf("%d failed deletes, the test needs the release to fail once", failed)
	}
	busy = false
	_ = h.clock.Sleep(ctx, 2*time.Second)
	if out, err := h.orch.Transfer(ctx, input("order-busy-3", "6")); err != nil || out.Replayed {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if h.ledger.landedCount() != 1 {
		t.Fatalf("landed %d", h.ledger.landedCount())
	}
}
