package stellar_test

import (
	"slices"
	"testing"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// consumedAtApply is, for every transaction-level code an included transaction can carry, whether
// stellar-core (src/transactions/TransactionFrame.cpp) sets it at apply only after
// TransactionFrame::commonPreApply ran processSeqNum, so that the envelope's sequence number is
// consumed and nothing signed with it can land again:
//
//   - after isBadSeq, commonValid returns kInvalidUpdateSeqNum and commonPreApply calls
//     processSeqNum: txBAD_MIN_SEQ_AGE_OR_GAP and txBAD_AUTH (commonValid), then
//     txINSUFFICIENT_BALANCE (kInvalidPostAuth);
//   - processSignatures runs the operations' signatures (opBAD_AUTH under txFAILED) and
//     checkAllSignaturesUsed (txBAD_AUTH_EXTRA) only when commonValid was kMaybeValid;
//   - applyOperations and parallelApply (txFAILED, txBAD_SPONSORSHIP, and txINTERNAL_ERROR when an
//     operation threw: "This is only reachable if an exception is thrown") run only once
//     commonPreApply returned a signature checker, i.e. kMaybeValid, seq consumed.
//
// Every other code comes from commonValidPreSeqNum (txTOO_EARLY, txTOO_LATE, txMISSING_OPERATION,
// txINSUFFICIENT_FEE, txNO_ACCOUNT, txFROZEN_KEY_ACCESSED, txMALFORMED, txSOROBAN_INVALID), is
// isBadSeq's txBAD_SEQ, the fee bump's outer checks (FeeBumpTransactionFrame::commonValid:
// txNOT_SUPPORTED, never at apply, where the outer result is always a txFEE_BUMP_INNER_* wrapper),
// or is a success.
var consumedAtApply = map[xdr.TransactionResultCode]bool{
	xdr.TransactionResultCodeTxBadMinSeqAgeOrGap:   true,
	xdr.TransactionResultCodeTxBadAuth:             true,
	xdr.TransactionResultCodeTxInsufficientBalance: true,
	xdr.TransactionResultCodeTxBadAuthExtra:        true,
	xdr.TransactionResultCodeTxFailed:              true,
	xdr.TransactionResultCodeTxBadSponsorship:      true,
	xdr.TransactionResultCodeTxInternalError:       true,

	xdr.TransactionResultCodeTxTooEarly:            false,
	xdr.TransactionResultCodeTxTooLate:             false,
	xdr.TransactionResultCodeTxMissingOperation:    false,
	xdr.TransactionResultCodeTxBadSeq:              false,
	xdr.TransactionResultCodeTxNoAccount:           false,
	xdr.TransactionResultCodeTxInsufficientFee:     false,
	xdr.TransactionResultCodeTxNotSupported:        false,
	xdr.TransactionResultCodeTxMalformed:           false,
	xdr.TransactionResultCodeTxSorobanInvalid:      false,
	xdr.TransactionResultCodeTxFrozenKeyAccessed:   false,
	xdr.TransactionResultCodeTxSuccess:             false,
	xdr.TransactionResultCodeTxFeeBumpInnerSuccess: false,
	xdr.TransactionResultCodeTxFeeBumpInnerFailed:  false,
}

// TestServiceSideFailureReleasesOnlyAfterSequenceConsumed: a FAILED inclusion read from the
// ledger's own result XDR (stellar.ResultCodes, the spelling both readers hand to
// transfer.SourceShortfall) frees the key exactly when stellar-core consumed the envelope's
// sequence number (consumedAtApply), plain or inside a fee bump: never for a code set before the
// sequence check (the envelope might still apply: a second payment), and always for one after it
// (nothing moved and nothing can land: a terminal answer would tell the client its request was at
// fault, and the key would be stuck). Every code the SDK knows is listed, so a new one fails here
// until it is classified.
func TestServiceSideFailureReleasesOnlyAfterSequenceConsumed(t *testing.T) {
	for _, code := range allTxCodes() {
		consumed, ok := consumedAtApply[code]
		if !ok {
			t.Errorf("%s (%d): not classified; read stellar-core's TransactionFrame::commonValid and apply and add it", code, code)
			continue
		}
		if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFeeBumpInnerSuccess ||
			code == xdr.TransactionResultCodeTxFeeBumpInnerFailed || code == xdr.TransactionResultCodeTxNotSupported {
			continue // never an inner transaction's failure
		}
		for _, feeBump := range []bool{false, true} {
			env := transfer.Envelope{InnerHash: "aa"}
			r := failedResult(code)
			if feeBump {
				env.OuterHash = "bb"
				r = wrapped(r)
			}
			codes := stellar.ResultCodes(r)
			lk := transfer.Lookup{Status: transfer.LookupFailed, Hash: "aa", Ledger: 7, ResultCodes: codes}
			got := transfer.SourceShortfall(env, lk)
			if released := got != ""; released != consumed {
				t.Errorf("%s (fee bump %v, codes %v): SourceShortfall %q; the sequence number consumed at apply: %v", code, feeBump, codes, got, consumed)
			}
		}
	}
}

// allTxCodes is every TransactionResultCode the SDK's xdr decodes.
func allTxCodes() []xdr.TransactionResultCode {
	var out []xdr.TransactionResultCode
	for v := int32(-64); v <= 64; v++ {
		c := xdr.TransactionResultCode(v)
		if c.ValidEnum(v) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// failedResult is a plain transaction's result with code; a txFAILED carries one payment's
// op_success (the operation code is not what this test judges).
func failedResult(code xdr.TransactionResultCode) xdr.TransactionResult {
	r := xdr.TransactionResult{FeeCharged: 100, Result: xdr.TransactionResultResult{Code: code}}
	if code == xdr.TransactionResultCodeTxFailed {
		ops := []xdr.OperationResult{{Code: xdr.OperationResultCodeOpBadAuth}}
		r.Result.Results = &ops
	}
	return r
}

// wrapped is inner inside a fee bump's txFEE_BUMP_INNER_FAILED, as FeeBumpMutableTransactionResult::
// setInnermostError leaves every included fee bump whose inner transaction failed.
func wrapped(inner xdr.TransactionResult) xdr.TransactionResult {
	ir := xdr.InnerTransactionResult{FeeCharged: inner.FeeCharged, Result: xdr.InnerTransactionResultResult{Code: inner.Result.Code, Results: inner.Result.Results}}
	return xdr.TransactionResult{FeeCharged: 200, Result: xdr.TransactionResultResult{
		Code:            xdr.TransactionResultCodeTxFeeBumpInnerFailed,
		InnerResultPair: &xdr.InnerTransactionResultPair{Result: ir},
	}}
}
