package transfer_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch is requeued only when its FAILED transaction consumed its sequence number and moved
// nothing, the single transfer's rule for every code: a transaction-level code stellar-core sets
// before the sequence check (TransactionFrame::commonValidPreSeqNum, isBadSeq) leaves an envelope
// that nothing proves dead, so every key is a stored rejection naming it, as a single transfer's
// is; only tx_failed (applyOperations ran) and the codes a single transfer releases
// (SourceShortfall: set after the check) requeue. Each case is also checked against a single
// transfer's judgment of the same codes (SourceShortfall "" is its stored rejection).
func TestABatchIsRequeuedOnlyWhenItsFailureConsumedItsSequence(t *testing.T) {
	single := transfer.Envelope{InnerHash: batchEnv.InnerHash, MaxTime: batchEnv.MaxTime, SubmittedLedger: batchEnv.SubmittedLedger}
	failed := func(codes ...string) transfer.Lookup {
		return transfer.Lookup{Status: transfer.LookupFailed, ResultCodes: codes, Ledger: 120}
	}
	// Transaction-level codes (Horizon's spelling of stellar-xdr's TransactionResultCode), and what
	// each means for every key of a fee-bumped batch (batchEnv) and of one that is not.
	for _, tc := range []struct {
		code              string
		want              transfer.OperationVerdict
		bumped, notBumped string // the shortfall that pages
	}{
		{"tx_too_early", transfer.VerdictRejected, "", ""},
		{"tx_too_late", transfer.VerdictRejected, "", ""},
		{"tx_missing_operation", transfer.VerdictRejected, "", ""},
		{"tx_bad_seq", transfer.VerdictRejected, "", ""},
		{"tx_no_account", transfer.VerdictRejected, "", ""},
		{"tx_insufficient_fee", transfer.VerdictRejected, "", ""},
		{"tx_internal_error", transfer.VerdictRequeue, transfer.CodeServiceSideFailure, transfer.CodeServiceSideFailure},
		{"tx_not_supported", transfer.VerdictRejected, "", ""},
		{"tx_fee_bump_inner_failed", transfer.VerdictRejected, "", ""},
		{"tx_malformed", transfer.VerdictRejected, "", ""},
		{"tx_soroban_invalid", transfer.VerdictRejected, "", ""},
		{"tx_a_code_not_yet_known", transfer.VerdictRejected, "", ""},
		{"", transfer.VerdictRejected, "", ""},
		{"tx_insufficient_balance", transfer.VerdictRequeue, transfer.CodeFeeAccountUnderfunded, transfer.CodeVaultUnderfunded},
		{"tx_bad_auth", transfer.VerdictRequeue, transfer.CodeServiceSideFailure, transfer.CodeServiceSideFailure},
		{"tx_bad_auth_extra", transfer.VerdictRequeue, transfer.CodeServiceSideFailure, transfer.CodeServiceSideFailure},
		{"tx_bad_minseq_age_or_gap", transfer.VerdictRequeue, transfer.CodeServiceSideFailure, transfer.CodeServiceSideFailure},
		{"tx_bad_sponsorship", transfer.VerdictRequeue, transfer.CodeServiceSideFailure, transfer.CodeServiceSideFailure},
	} {
		lk := failed(tc.code)
		if tc.code == "" {
			lk = failed()
		}
		for _, env := range []transfer.Envelope{batchEnv, single} {
			want := tc.bumped
			if env.OuterHash == "" {
				want = tc.notBumped
			}
			if releases := transfer.SourceShortfall(env, lk) != ""; releases != (tc.want == transfer.VerdictRequeue) {
				t.Errorf("%q: a single transfer releases it: %v; the batch's verdict %s disagrees", tc.code, releases, tc.want)
			}
			for index := range 3 {
				if v, short := transfer.JudgeOperation(env, lk, index); v != tc.want || short != want {
					t.Errorf("%q (outer hash %q), operation %d: %s, %q; want %s, %q", tc.code, env.OuterHash, index, v, short, tc.want, want)
				}
			}
		}
	}
	// Operation codes under tx_failed (the sequence number consumed, nothing moved): a key's own
	// code rejects it only when a single transfer's FAILED would store it; its neighbours, whose
	// operations succeeded, are requeued.
	for _, tc := range []struct {
		code      string
		rejected  bool
		shortfall string
	}{
		{"op_no_destination", true, ""},
		{"op_no_trust", true, ""},
		{"op_not_authorized", true, ""},
		{"op_line_full", true, ""},
		{"op_no_issuer", true, ""},
		{"op_success", false, transfer.CodeServiceSideFailure},
		{"op_underfunded", false, transfer.CodeVaultUnderfunded},
		{"op_src_no_trust", false, transfer.CodeVaultUnderfunded},
		{"op_src_not_authorized", false, transfer.CodeVaultUnderfunded},
		{"op_bad_auth", false, transfer.CodeServiceSideFailure},
		{"op_no_source_account", false, transfer.CodeServiceSideFailure},
		{"op_malformed", false, transfer.CodeServiceSideFailure},
		{"op_not_supported", false, transfer.CodeServiceSideFailure},
		{"op_too_many_subentries", false, transfer.CodeServiceSideFailure},
		{"op_exceeded_work_limit", false, transfer.CodeServiceSideFailure},
		{"op_too_many_sponsoring", false, transfer.CodeServiceSideFailure},
		{"op_over_source_max", false, transfer.CodeServiceSideFailure},
		{"op_resource_limit_exceeded", false, transfer.CodeServiceSideFailure},
		{"op_trapped", false, transfer.CodeServiceSideFailure},
		{"op_a_code_not_yet_known", false, transfer.CodeServiceSideFailure},
	} {
		if stored := transfer.SourceShortfall(single, failed("tx_failed", tc.code)) == ""; stored != tc.rejected {
			t.Errorf("%s: a single transfer stores it: %v; want %v", tc.code, stored, tc.rejected)
		}
		lk := failed("tx_failed", "op_success", tc.code, "op_success")
		for index, want := range []transfer.OperationVerdict{transfer.VerdictRequeue, transfer.VerdictRequeue, transfer.VerdictRequeue} {
			if index == 1 && tc.rejected {
				want = transfer.VerdictRejected
			}
			if v, short := transfer.JudgeOperation(batchEnv, lk, index); v != want || short != tc.shortfall {
				t.Errorf("%v, operation %d: %s, %q; want %s, %q", lk.ResultCodes, index, v, short, want, tc.shortfall)
			}
		}
	}
	// A neighbour's destination-side code does not hide another operation's service-side one.
	if _, short := transfer.JudgeOperation(batchEnv, failed("tx_failed", "op_no_trust", "op_bad_auth"), 0); short != transfer.CodeServiceSideFailure {
		t.Errorf("op_no_trust beside op_bad_auth: shortfall %q, want %s", short, transfer.CodeServiceSideFailure)
	}
}

// End to end: a batch included FAILED tx_bad_seq (before the sequence check) leaves every key a
// stored rejection naming the transaction, never queued again, with no second envelope and no
// page; one included FAILED tx_bad_auth (after it) requeues every key and pages once.
func TestABatchFailedBeforeItsSequenceCheckIsNeverRequeued(t *testing.T) {
	for _, tc := range []struct {
		code    string
		requeue bool
	}{{"tx_bad_seq", false}, {"tx_too_late", false}, {"tx_bad_auth", true}} {
		t.Run(tc.code, func(t *testing.T) {
			h, fb, msgs := batchHarness(t, 10, 3)
			logs := &logLines{}
			h.orch.Logger = slog.New(slog.NewJSONHandler(logs, nil))
			h.ledger.failResult = func(transfer.Envelope) bool { return true }
			h.ledger.failCodes = []string{tc.code}
			answers := h.orch.RunQueuedBatch(context.Background(), msgs)
			for i, ans := range answers {
				rec := h.batchItem(t, i)
				if tc.requeue {
					if ans.Delivery != transfer.DeliveryRetry || problemCode(ans.Err) != transfer.CodeServiceSideFailure || rec.Status != transfer.StatusQueued {
						t.Fatalf("key %d: %+v; %+v", i, ans, rec)
					}
					continue
				}
				if ans.Delivery != transfer.DeliveryDone || problemCode(ans.Err) != transfer.CodeTransactionFailed || rec.Status != transfer.StatusRejected ||
					!slices.Equal(rec.Result.ResultCodes, []string{tc.code}) || rec.Result.TransactionHash != fb.hashes[0] || rec.Batch.Index != i {
					t.Fatalf("key %d: %+v; %+v (result %+v)", i, ans, rec, rec.Result)
				}
			}
			if len(fb.built) != 1 {
				t.Fatalf("built %d batches, want 1", len(fb.built))
			}
			pages := logs.alerts(t)
			if tc.requeue && (len(pages) != 1 || pages[0]["alert"] != transfer.AlertServiceSideFailure) || !tc.requeue && len(pages) != 0 {
				t.Fatalf("pages: %v", pages)
			}
		})
	}
}
