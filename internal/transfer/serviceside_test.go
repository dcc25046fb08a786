package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// serviceSideCodes are FAILED results that are the service's fault, not the client's: the vault's
// signers or thresholds changed after signing (op_bad_auth, tx_bad_auth), a signature the
// transaction did not need (tx_bad_auth_extra), the vault account gone (op_no_source_account), the
// contract call's resources or fees from the service's simulation (op_resource_limit_exceeded,
// op_insufficient_refundable_fee), and a code the service does not know.
var serviceSideCodes = [][]string{
	{"tx_failed", "op_bad_auth"},
	{"tx_failed", "op_no_source_account"},
	{"tx_bad_auth"},
	{"tx_bad_auth_extra"},
	{"tx_bad_minseq_age_or_gap"},
	{"tx_bad_sponsorship"},
	{"tx_internal_error"},
	{"tx_failed", "op_resource_limit_exceeded"},
	{"tx_failed", "op_insufficient_refundable_fee"},
	{"tx_failed", "op_trapped"},
	{"tx_failed", "op_code_from_a_later_protocol"},
}

// Each service-side failure: the call answers 503 SERVICE_SIDE_FAILURE (retryable, Retry-After),
// never a stored rejection that tells the client its destination is at fault; the key is free, no
// second envelope is built in the call, and it pages once with alert "service-side-failure".
func TestServiceSideFailureReleasedAndPaged(t *testing.T) {
	for _, codes := range serviceSideCodes {
		t.Run(strings.Join(codes, ","), func(t *testing.T) {
			h, logs := pagingHarness(t)
			h.ledger.failResult = func(transfer.Envelope) bool { return true }
			h.ledger.failCodes = codes
			_, err := h.orch.Transfer(context.Background(), input("payout-svc-1", "1"))
			var r *transfer.RejectedError
			if errors.As(err, &r) {
				t.Fatalf("err = %v: a service-side failure stored as the client's terminal rejection", err)
			}
			u := unavailable(t, err, transfer.CodeServiceSideFailure)
			if !strings.Contains(u.Detail, strings.Join(codes, ", ")) || !strings.Contains(u.Detail, "service's side") {
				t.Fatalf("detail %q: want the ledger's codes and the service's side named", u.Detail)
			}
			if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-svc-1")); ok {
				t.Fatal("the key should be free: the sequence number was consumed, nothing can land")
			}
			if p, _ := h.ledger.counts(); p != 1 {
				t.Fatalf("prepares = %d, want 1: no second envelope until an operator acts", p)
			}
			pages := logs.alerts(t)
			if len(pages) != 1 || pages[0]["alert"] != transfer.AlertServiceSideFailure || pages[0]["level"] != "ERROR" ||
				pages[0]["code"] != transfer.CodeServiceSideFailure {
				t.Fatalf("pages = %v, want one ERROR %q", pages, transfer.AlertServiceSideFailure)
			}
		})
	}
}

// The destination's and the request's codes stay terminal: a stored 422 TRANSACTION_FAILED with the
// ledger's codes, and no page.
func TestDestinationSideFailureStaysTerminal(t *testing.T) {
	for _, op := range []string{"op_no_trust", "op_not_authorized", "op_line_full", "op_no_destination", "op_no_issuer"} {
		t.Run(op, func(t *testing.T) {
			h, logs := pagingHarness(t)
			h.ledger.failResult = func(transfer.Envelope) bool { return true }
			h.ledger.failCodes = []string{"tx_failed", op}
			_, err := h.orch.Transfer(context.Background(), input("payout-dst-1", "1"))
			var r *transfer.RejectedError
			if !errors.As(err, &r) || r.Code != transfer.CodeTransactionFailed || strings.Join(r.ResultCodes, ",") != "tx_failed,"+op {
				t.Fatalf("err = %v, want a stored TRANSACTION_FAILED with %s", err, op)
			}
			if got := h.item(t, "payout-dst-1"); got.Status != transfer.StatusRejected {
				t.Fatalf("item %+v, want rejected", got)
			}
			if pages := logs.alerts(t); len(pages) != 0 {
				t.Fatalf("pages = %v, want none", pages)
			}
		})
	}
}

// The sweep's Settle and a retry's inline settlement judge an in_doubt envelope included FAILED
// op_bad_auth as the call that sent it would have: released, paged, and (inline) answered
// SERVICE_SIDE_FAILURE without a new envelope.
func TestServiceSideFailureSettledAndInline(t *testing.T) {
	ctx := context.Background()
	h, logs := pagingHarness(t)
	rec := inDoubtFailed(t, h, "payout-svc-2", []string{"tx_failed", "op_bad_auth"})
	s, err := h.orch.Settle(ctx, rec)
	if err != nil || s.Resolution != transfer.ResolvedReleased {
		t.Fatalf("settle = %+v, %v; want released", s, err)
	}
	if pages := logs.alerts(t); len(pages) != 1 || pages[0]["alert"] != transfer.AlertServiceSideFailure {
		t.Fatalf("pages = %v, want one service-side page", pages)
	}

	h2, logs2 := pagingHarness(t)
	inDoubtFailed(t, h2, "payout-svc-3", []string{"tx_bad_auth"})
	prepares, sends := h2.ledger.counts()
	_, err = h2.orch.Transfer(ctx, input("payout-svc-3", "1"))
	unavailable(t, err, transfer.CodeServiceSideFailure)
	if p, s := h2.ledger.counts(); p != prepares || s != sends {
		t.Fatalf("the retry built %d and sent %d new envelopes, want none", p-prepares, s-sends)
	}
	if _, ok := h2.store.Item(transfer.StoreKey(wallet, "payout-svc-3")); ok {
		t.Fatal("the key should be free")
	}
	if pages := logs2.alerts(t); len(pages) != 1 || pages[0]["alert"] != transfer.AlertServiceSideFailure {
		t.Fatalf("pages = %v, want one service-side page", pages)
	}
}

// A batch agrees with a single transfer: an operation's op_bad_auth or op_no_source_account (the
// vault's signing or account, which fails every operation) requeues its key and the batch pages
// once; only a destination's or the request's own code rejects a key.
func TestJudgeOperationServiceSide(t *testing.T) {
	env := transfer.Envelope{InnerHash: "aa"}
	failed := func(codes ...string) transfer.Lookup {
		return transfer.Lookup{Status: transfer.LookupFailed, ResultCodes: codes}
	}
	for _, c := range []struct {
		lk        transfer.Lookup
		index     int
		want      transfer.OperationVerdict
		shortfall string
	}{
		{failed("tx_failed", "op_bad_auth", "op_bad_auth"), 1, transfer.VerdictRequeue, transfer.CodeServiceSideFailure},
		{failed("tx_failed", "op_no_source_account", "op_no_source_account"), 0, transfer.VerdictRequeue, transfer.CodeServiceSideFailure},
		{failed("tx_failed", "op_success", "op_no_trust"), 1, transfer.VerdictRejected, ""},
		{failed("tx_failed", "op_success", "op_no_trust"), 0, transfer.VerdictRequeue, ""},
		{failed("tx_failed", "op_no_issuer"), 0, transfer.VerdictRejected, ""},
		{failed("tx_bad_auth"), 0, transfer.VerdictRequeue, transfer.CodeServiceSideFailure},
	} {
		v, short := transfer.JudgeOperation(env, c.lk, c.index)
		if v != c.want || short != c.shortfall {
			t.Errorf("%v op %d: %s %q, want %s %q", c.lk.ResultCodes, c.index, v, short, c.want, c.shortfall)
		}
	}
}
