package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// txCodeNames maps transaction result codes to the names stellar-core uses
// (txBAD_SEQ) and the ones Horizon puts in extras.result_codes (tx_bad_seq).
var txCodeNames = map[xdr.TransactionResultCode][2]string{
	xdr.TransactionResultCodeTxFeeBumpInnerSuccess: {"txFEE_BUMP_INNER_SUCCESS", "tx_fee_bump_inner_success"},
	xdr.TransactionResultCodeTxSuccess:             {"txSUCCESS", "tx_success"},
	xdr.TransactionResultCodeTxFailed:              {"txFAILED", "tx_failed"},
	xdr.TransactionResultCodeTxTooEarly:            {"txTOO_EARLY", "tx_too_early"},
	xdr.TransactionResultCodeTxTooLate:             {"txTOO_LATE", "tx_too_late"},
	xdr.TransactionResultCodeTxMissingOperation:    {"txMISSING_OPERATION", "tx_missing_operation"},
	xdr.TransactionResultCodeTxBadSeq:              {"txBAD_SEQ", "tx_bad_seq"},
	xdr.TransactionResultCodeTxBadAuth:             {"txBAD_AUTH", "tx_bad_auth"},
	xdr.TransactionResultCodeTxInsufficientBalance: {"txINSUFFICIENT_BALANCE", "tx_insufficient_balance"},
	xdr.TransactionResultCodeTxNoAccount:           {"txNO_ACCOUNT", "tx_no_source_account"},
	xdr.TransactionResultCodeTxInsufficientFee:     {"txINSUFFICIENT_FEE", "tx_insufficient_fee"},
	xdr.TransactionResultCodeTxBadAuthExtra:        {"txBAD_AUTH_EXTRA", "tx_bad_auth_extra"},
	xdr.TransactionResultCodeTxInternalError:       {"txINTERNAL_ERROR", "tx_internal_error"},
	xdr.TransactionResultCodeTxNotSupported:        {"txNOT_SUPPORTED", "tx_not_supported"},
	xdr.TransactionResultCodeTxFeeBumpInnerFailed:  {"txFEE_BUMP_INNER_FAILED", "tx_fee_bump_inner_failed"},
	xdr.TransactionResultCodeTxBadSponsorship:      {"txBAD_SPONSORSHIP", "tx_bad_sponsorship"},
	xdr.TransactionResultCodeTxBadMinSeqAgeOrGap:   {"txBAD_MIN_SEQ_AGE_OR_GAP", "tx_bad_minseq_age_or_gap"},
	xdr.TransactionResultCodeTxMalformed:           {"txMALFORMED", "tx_malformed"},
	xdr.TransactionResultCodeTxSorobanInvalid:      {"txSOROBAN_INVALID", "tx_soroban_invalid"},
	xdr.TransactionResultCodeTxFrozenKeyAccessed:   {"txFROZEN_KEY_ACCESSED", "tx_frozen_key_accessed"}, // protocol 26, CAP-77; Horizon internal/codes/main.go,
}

// TxCodeName returns the stellar-core name of a transaction result code, e.g. "txBAD_SEQ".
func TxCodeName(c xdr.TransactionResultCode) string {
	if n, ok := txCodeNames[c]; ok {
		return n[0]
	}
	return c.String()
}

// horizonTxCode returns Horizon's name for a transaction result code, e.g. "tx_bad_seq".
func horizonTxCode(c xdr.TransactionResultCode) string {
	if n, ok := txCodeNames[c]; ok {
		return n[1]
	}
	return c.String()
}

// ParseTxCode accepts either spelling ("txBAD_SEQ" or "tx_bad_seq").
func ParseTxCode(name string) (xdr.TransactionResultCode, bool) {
	for c, n := range txCodeNames {
		if n[0] == name || n[1] == name {
			return c, true
		}
	}
	return 0, false
}

// opCodeName returns Horizon's name for one operation result ("op_underfunded"),
// which is also what AppliedTx records.
func opCodeName(r xdr.OperationResult) string {
	switch r.Code {
	case xdr.OperationResultCodeOpBadAuth:
		return "op_bad_auth"
	case xdr.OperationResultCodeOpNoAccount:
		return "op_no_source_account"
	case xdr.OperationResultCodeOpNotSupported:
		return "op_not_supported"
	case xdr.OperationResultCodeOpTooManySubentries:
		return "op_too_many_subentries"
	case xdr.OperationResultCodeOpExceededWorkLimit:
		return "op_exceeded_work_limit"
	case xdr.OperationResultCodeOpTooManySponsoring:
		return "op_too_many_sponsoring"
	case xdr.OperationResultCodeOpInner:
	default:
		return "op_unknown"
	}
	if r.Tr == nil {
		return "op_unknown"
	}
	tr := r.Tr
	switch {
	case tr.PaymentResult != nil:
		return map[xdr.PaymentResultCode]string{
			xdr.PaymentResultCodePaymentSuccess:          "op_success",
			xdr.PaymentResultCodePaymentMalformed:        "op_malformed",
			xdr.PaymentResultCodePaymentUnderfunded:      "op_underfunded",
			xdr.PaymentResultCodePaymentSrcNoTrust:       "op_src_no_trust",
			xdr.PaymentResultCodePaymentSrcNotAuthorized: "op_src_not_authorized",
			xdr.PaymentResultCodePaymentNoDestination:    "op_no_destination",
			xdr.PaymentResultCodePaymentNoTrust:          "op_no_trust",
			xdr.PaymentResultCodePaymentNotAuthorized:    "op_not_authorized",
			xdr.PaymentResultCodePaymentLineFull:         "op_line_full",
			xdr.PaymentResultCodePaymentNoIssuer:         "op_no_issuer",
		}[tr.PaymentResult.Code]
	case tr.CreateAccountResult != nil:
		return map[xdr.CreateAccountResultCode]string{
			xdr.CreateAccountResultCodeCreateAccountSuccess:      "op_success",
			xdr.CreateAccountResultCodeCreateAccountMalformed:    "op_malformed",
			xdr.CreateAccountResultCodeCreateAccountUnderfunded:  "op_underfunded",
			xdr.CreateAccountResultCodeCreateAccountLowReserve:   "op_low_reserve",
			xdr.CreateAccountResultCodeCreateAccountAlreadyExist: "op_already_exists",
		}[tr.CreateAccountResult.Code]
	case tr.ChangeTrustResult != nil:
		return map[xdr.ChangeTrustResultCode]string{
			xdr.ChangeTrustResultCodeChangeTrustSuccess:                    "op_success",
			xdr.ChangeTrustResultCodeChangeTrustMalformed:                  "op_malformed",
			xdr.ChangeTrustResultCodeChangeTrustNoIssuer:                   "op_no_issuer",
			xdr.ChangeTrustResultCodeChangeTrustInvalidLimit:               "op_invalid_limit",
			xdr.ChangeTrustResultCodeChangeTrustLowReserve:                 "op_low_reserve",
			xdr.ChangeTrustResultCodeChangeTrustSelfNotAllowed:             "op_self_not_allowed",
			xdr.ChangeTrustResultCodeChangeTrustTrustLineMissing:           "op_trust_line_missing",
			xdr.ChangeTrustResultCodeChangeTrustCannotDelete:               "op_cannot_delete",
			xdr.ChangeTrustResultCodeChangeTrustNotAuthMaintainLiabilities: "op_not_aut_maintain_liabilities",
		}[tr.ChangeTrustResult.Code]
	case tr.SetOptionsResult != nil:
		// Horizon's names (stellar/go, services/horizon/internal/codes), as for the others.
		return map[xdr.SetOptionsResultCode]string{
			xdr.SetOptionsResultCodeSetOptionsSuccess:               "op_success",
			xdr.SetOptionsResultCodeSetOptionsLowReserve:            "op_low_reserve",
			xdr.SetOptionsResultCodeSetOptionsTooManySigners:        "op_too_many_signers",
			xdr.SetOptionsResultCodeSetOptionsBadFlags:              "op_bad_flags",
			xdr.SetOptionsResultCodeSetOptionsInvalidInflation:      "op_invalid_inflation",
			xdr.SetOptionsResultCodeSetOptionsCantChange:            "op_cant_change",
			xdr.SetOptionsResultCodeSetOptionsUnknownFlag:           "op_unknown_flag",
			xdr.SetOptionsResultCodeSetOptionsThresholdOutOfRange:   "op_threshold_out_of_range",
			xdr.SetOptionsResultCodeSetOptionsBadSigner:             "op_bad_signer",
			xdr.SetOptionsResultCodeSetOptionsInvalidHomeDomain:     "op_invalid_home_domain",
			xdr.SetOptionsResultCodeSetOptionsAuthRevocableRequired: "op_auth_revocable_required",
		}[tr.SetOptionsResult.Code]
	case tr.BeginSponsoringFutureReservesResult != nil:
		return map[xdr.BeginSponsoringFutureReservesResultCode]string{
			xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesSuccess:          "op_success",
			xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesMalformed:        "op_malformed",
			xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesAlreadySponsored: "op_already_sponsored",
			xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesRecursive:        "op_recursive",
		}[tr.BeginSponsoringFutureReservesResult.Code]
	case tr.EndSponsoringFutureReservesResult != nil:
		if tr.EndSponsoringFutureReservesResult.Code == xdr.EndSponsoringFutureReservesResultCodeEndSponsoringFutureReservesSuccess {
			return "op_success"
		}
		return "op_not_sponsored"
	case tr.InvokeHostFunctionResult != nil:
		if tr.InvokeHostFunctionResult.Code == xdr.InvokeHostFunctionResultCodeInvokeHostFunctionSuccess {
			return "op_success"
		}
		return "op_invoke_host_function_failed"
	}
	return "op_unknown"
}
