package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestAMuxedWalletIsChargedOnItsAccountsWalletCounter: a muxed wallet's keys are scoped by its G
// account (Wallet.Scope), and so must its daily total be: the M... addresses of one account are
// one wallet, which must not move walletDaily once per muxed id.
func TestAMuxedWalletIsChargedOnItsAccountsWalletCounter(t *testing.T) {
	rules := muxedRules()
	canon := func(w string) transfer.Request {
		t.Helper()
		r, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: w, Amount: "10", Asset: "usdc"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	limits := transfer.Limits{"USDC": {WalletDaily: unit(15)}}
	h := newHarness(t)
	h.orch.Limits = limits
	want := limits.Charges(canon(wallet), h.clock.Now())[0].Counter
	for _, m := range []string{muxed1, muxed2} {
		if got := limits.Charges(canon(m), h.clock.Now())[0].Counter; got != want {
			t.Errorf("%s is charged on %s, want its account's counter %s", m, got, want)
		}
	}
	ctx := context.Background()
	if _, err := h.orch.Transfer(ctx, transfer.Input{ClientKey: "order-mux-1", Request: canon(muxed1), TraceID: "t"}); err != nil {
		t.Fatal(err)
	}
	_, err := h.orch.Transfer(ctx, transfer.Input{ClientKey: "order-mux-2", Request: canon(muxed2), TraceID: "t"})
	if problemCode(err) != transfer.CodeDailyLimitExceeded {
		t.Fatalf("a second muxed address of the account moved 10 more (20 against a wallet cap of 15): err = %v, want DAILY_LIMIT_EXCEEDED", err)
	}
}

// TestACallsOwnReleasedClaimDoesNotRefuseItsNextPassWithALimit: a call whose envelope was refused
// unsent (nothing moved; its key released) claims again in the same call. Its first claim's charge
// is given back only when the stream's REMOVE reaches the alert function, so the next pass's claim
// finds the counter still holding it and the call answers 429 DAILY_LIMIT_EXCEEDED for a transfer
// that fits the day's cap: the client's own transfer is refused by itself. The release should
// give the charge back in the same write (or the next pass should not charge again before it).
func TestACallsOwnReleasedClaimDoesNotRefuseItsNextPassWithALimit(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(5)}}
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	out, err := h.orch.Transfer(context.Background(), input("order-own-release", "5"))
	if err != nil {
		t.Fatalf("err = %v, want the transfer paid (5 of a cap of 5, nothing else moved today)", err)
	}
	if out.TransactionHash == "" || h.ledger.landedCount() != 1 {
		t.Fatalf("outcome %+v, landed %d", out, h.ledger.landedCount())
	}
}

// TestAForcedDiscardGivesNothingBack: a forced discard deletes an in_doubt item whose ledger could
// not prove it dead (reconcile: "if it landed, a forced discard lets the next retry pay again").
// Giving its charge back errs toward letting more than the cap move: if the envelope did land, the
// day's total no longer counts it. The limits promise never above the cap, so an unproven release
// keeps its charge (the day ends and frees it anyway).
func TestAForcedDiscardGivesNothingBack(t *testing.T) {
	charges := []transfer.Charge{{Counter: "limit:asset:USDC:2026-12-02", Scope: transfer.LimitAsset, Stroops: 5, Cap: 10}}
	old := &transfer.Record{ClaimID: "claim-1", Status: transfer.StatusInDoubt, Charges: charges,
		Audit: &transfer.Audit{Action: "discard", Operator: "ops", Reason: "history gap", Forced: true}}
	if id, got := transfer.GiveBackOf(old, nil); got != nil {
		t.Fatalf("a forced discard of an unproven in_doubt item gives back %q %+v, want nothing", id, got)
	}
}

// TestARetryAfterChannelsBusyIsNotRefusedByItsOwnFreedCharge: CHANNELS_BUSY says nothing was
// submitted and the key is free, come back after Retry-After (7 s). The freed claim's charge is
// given back only when the stream's REMOVE reaches the alert function, which nothing bounds by
// that Retry-After; until then the client's retry of the same transfer, which fits the day's cap,
// is answered 429 DAILY_LIMIT_EXCEEDED with a Retry-After of the next UTC midnight (hours).
func TestARetryAfterChannelsBusyIsNotRefusedByItsOwnFreedCharge(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(3)}}
	ctx := context.Background()
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 7 * time.Second,
		Detail: "every channel account is busy; nothing was submitted"}
	if _, err := h.orch.Transfer(ctx, input("order-busy-limit", "3")); problemCode(err) != transfer.CodeChannelsBusy {
		t.Fatalf("first call: %v, want CHANNELS_BUSY", err)
	}
	h.ledger.prepareErr = nil
	_ = h.clock.Sleep(ctx, 7*time.Second)
	out, err := h.orch.Transfer(ctx, input("order-busy-limit", "3"))
	if err != nil || out.TransactionHash == "" {
		var ra time.Duration
		if le, ok := errors.AsType[*transfer.LimitError](err); ok {
			ra = le.RetryAfter
		}
		t.Fatalf("retry after CHANNELS_BUSY = %+v, %v (Retry-After %v); want it paid: nothing moved under the freed claim", out, err, ra)
	}
}
