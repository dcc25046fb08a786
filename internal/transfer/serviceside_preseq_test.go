package transfer_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch included FAILED with a transaction-level code set before stellar-core's sequence check
// (TransactionFrame::commonValidPreSeqNum and isBadSeq: tx_bad_seq, tx_no_source_account,
// tx_too_early, tx_too_late, ...) consumed nothing: requeueing its keys builds new envelopes while
// nothing proves the old one cannot still apply, the second payment the single transfer's rule
// refuses (SourceShortfall returns "", stored as the rejection). A batched key is judged the same
// way: rejected with the transaction's code, never requeued. The codes after the check
// (tx_bad_auth, tx_internal_error, tx_insufficient_balance) are the service's: requeued with the
// batch's page.
func TestBatchRequeuedOnlyAfterSequenceConsumed(t *testing.T) {
	env := transfer.Envelope{InnerHash: "aa"}
	for _, c := range []struct {
		tx        string
		want      transfer.OperationVerdict
		shortfall string
	}{
		{"tx_bad_seq", transfer.VerdictRejected, ""},
		{"tx_no_source_account", transfer.VerdictRejected, ""},
		{"tx_too_early", transfer.VerdictRejected, ""},
		{"tx_too_late", transfer.VerdictRejected, ""},
		{"tx_insufficient_fee", transfer.VerdictRejected, ""},
		{"tx_frozen_key_accessed", transfer.VerdictRejected, ""},
		{"tx_bad_auth", transfer.VerdictRequeue, transfer.CodeServiceSideFailure},
		{"tx_internal_error", transfer.VerdictRequeue, transfer.CodeServiceSideFailure},
		{"tx_insufficient_balance", transfer.VerdictRequeue, transfer.CodeVaultUnderfunded},
	} {
		lk := transfer.Lookup{Status: transfer.LookupFailed, Hash: "aa", Ledger: 9, ResultCodes: []string{c.tx}}
		for index := range 3 {
			v, short := transfer.JudgeOperation(env, lk, index)
			if v != c.want || short != c.shortfall {
				t.Errorf("%s, operation %d: %s %q, want %s %q", c.tx, index, v, short, c.want, c.shortfall)
			}
		}
	}
}

// Through the sweep's Settle: every key of a batch included FAILED tx_bad_seq is a stored rejection
// with that code, never requeued, and its detail does not say its operation failed: no operation
// of the transaction ran.
func TestBatchPreSequenceFailureStoredAsRejection(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, _ := forgedBatch(t, h, "preseq-0001", "preseq-0002")
	h.ledger.failResult = func(env transfer.Envelope) bool { return env.InnerHash == b.Envelope.InnerHash }
	h.ledger.failCodes = []string{"tx_bad_seq"}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second)
	for _, k := range []string{"preseq-0001", "preseq-0002"} {
		s, err := h.orch.Settle(ctx, h.item(t, k))
		if err != nil {
			t.Fatalf("Settle %s: %v", k, err)
		}
		rec := h.item(t, k)
		if s.Resolution != transfer.ResolvedFailed || rec.Status != transfer.StatusRejected || !slices.Equal(rec.Result.ResultCodes, []string{"tx_bad_seq"}) {
			t.Fatalf("%s: %s, %+v (result %+v); want a stored rejection with tx_bad_seq", k, s.Resolution, rec, rec.Result)
		}
		if strings.Contains(rec.Result.Detail, "operation") && !strings.Contains(rec.Result.Detail, "before its operations") {
			t.Fatalf("%s: detail %q says an operation failed; none ran", k, rec.Result.Detail)
		}
	}
}
