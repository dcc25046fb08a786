package stellar

import (
	"encoding/base64"
	"encoding/binary"
	"reflect"
	"strings"
	"unicode"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// txCodeNames maps transaction result codes to stellar-core's spelling (what RPC
// sendTransaction's errorResultXdr carries, e.g. "txBAD_SEQ") and Horizon's (result_codes.transaction,
// e.g. "tx_bad_seq"). Source: Stellar-transaction.x (TransactionResultCode) and Horizon's codes.
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

// CoreTxCode returns stellar-core's name of a transaction result code, e.g. "txBAD_SEQ"; an
// unknown code is named by its number's XDR enum name, or "" if it has none.
func CoreTxCode(c xdr.TransactionResultCode) string {
	if n, ok := txCodeNames[c]; ok {
		return n[0]
	}
	return c.String()
}

// HorizonTxCode returns Horizon's name of a transaction result code, e.g. "tx_bad_seq".
func HorizonTxCode(c xdr.TransactionResultCode) string {
	if n, ok := txCodeNames[c]; ok {
		return n[1]
	}
	return c.String()
}

// innerResult returns the result that describes the transaction's own operations: for a fee-bump
// transaction (CAP-15) the inner transaction's code and operation results, otherwise its own.
func innerResult(r xdr.TransactionResult) (xdr.TransactionResultCode, []xdr.OperationResult) {
	res := r.Result
	switch res.Code {
	case xdr.TransactionResultCodeTxFeeBumpInnerSuccess, xdr.TransactionResultCodeTxFeeBumpInnerFailed:
		if res.InnerResultPair != nil {
			in := res.InnerResultPair.Result.Result
			var ops []xdr.OperationResult
			if in.Results != nil {
				ops = *in.Results
			}
			return in.Code, ops
		}
		return res.Code, nil
	}
	var ops []xdr.OperationResult
	if res.Results != nil {
		ops = *res.Results
	}
	return res.Code, ops
}

// TxCode is the transaction-level code of a result in stellar-core's spelling, e.g. "txBAD_SEQ";
// for a fee-bump transaction it is the inner transaction's code (what made it fail).
func TxCode(r xdr.TransactionResult) string {
	code, _ := innerResult(r)
	return CoreTxCode(code)
}

// ResultCodes lists a result's codes in Horizon's spelling, transaction level first, then one
// code per operation when the operations ran (e.g. ["tx_failed", "op_underfunded"]). For a
// fee-bump transaction they are the inner transaction's codes, so a failure reads the same with
// or without a fee bump.
func ResultCodes(r xdr.TransactionResult) []string {
	code, ops := innerResult(r)
	out := []string{HorizonTxCode(code)}
	for _, op := range ops {
		out = append(out, OpCode(op))
	}
	return out
}

// opCodeIrregular holds the operation codes whose Horizon name does not follow from the XDR name
// (Soroban operations' names are checked when the Soroban vault arrives).
var opCodeIrregular = map[string]string{
	"CreateAccountResultCodeCreateAccountAlreadyExist":           "op_already_exists",
	"ChangeTrustResultCodeChangeTrustNotAuthMaintainLiabilities": "op_not_aut_maintain_liabilities",
}

// OpCode returns Horizon's name of one operation result, e.g. "op_underfunded", "op_no_trust",
// "op_success"; operation-level failures are "op_bad_auth", "op_no_source_account", and so on.
// The name is derived from the XDR enum name (PaymentResultCodePaymentUnderfunded ->
// op_underfunded), with Horizon's irregular spellings listed explicitly.
func OpCode(r xdr.OperationResult) string {
	switch r.Code {
	case xdr.OperationResultCodeOpInner:
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
	default:
		return opUnknown
	}
	if r.Tr == nil {
		return opUnknown
	}
	arm, ok := r.Tr.ArmForSwitch(int32(r.Tr.Type))
	if !ok || arm == "" {
		return opUnknown
	}
	// The arm is a pointer to an XxxResult union whose discriminant is its Code field.
	v := reflect.ValueOf(*r.Tr).FieldByName(arm)
	if !v.IsValid() || v.Kind() != reflect.Pointer || v.IsNil() {
		return opUnknown
	}
	code := v.Elem().FieldByName("Code")
	if !code.IsValid() {
		return opUnknown
	}
	s, ok := code.Interface().(interface{ String() string })
	if !ok {
		return opUnknown
	}
	name := s.String()
	if n, ok := opCodeIrregular[name]; ok {
		return n
	}
	// "PaymentResultCodePaymentUnderfunded": drop "<Op>ResultCode<Op>", keep "Underfunded".
	op := strings.TrimSuffix(arm, "Result")
	suffix, ok := strings.CutPrefix(name, op+"ResultCode"+op)
	if !ok || suffix == "" {
		return opUnknown
	}
	return "op" + snake(suffix)
}

// snake turns "NoTrust" into "_no_trust".
func snake(camel string) string {
	var b strings.Builder
	for _, r := range camel {
		if unicode.IsUpper(r) {
			b.WriteByte('_')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// opUnknown is the code of an operation result that cannot be read: an operation type or code
// this build's SDK does not know (OpCode), or one that follows it in an undecodable result
// (failedCodesOf).
const opUnknown = "op_unknown"

// failedCodesOf reads a FAILED transaction's result (base64 XDR: getTransaction's resultXdr,
// Horizon's result_xdr) into its fee charged and its codes (ResultCodes). A result the SDK cannot
// decode is read as far as its transaction-level code (a fee bump's inner one): when that is
// txFAILED, every operation the SDK can decode in order has its code, and from the first it
// cannot, each is "op_unknown". txFAILED is set only at apply once the sequence number was
// consumed (stellar-core's TransactionFrame::processSignatures and applyOperations), so the
// failure can still be judged (transfer.SourceShortfall: an unknown code is the service's side);
// any other undecodable result is the decoding error, never a guess at a code that might precede
// the sequence check.
func failedCodesOf(resultXDR string) (fee int64, codes []string, err error) {
	var tr xdr.TransactionResult
	err = xdr.SafeUnmarshalBase64(resultXDR, &tr)
	if err == nil {
		return int64(tr.FeeCharged), ResultCodes(tr), nil
	}
	b, derr := base64.StdEncoding.DecodeString(resultXDR)
	if derr != nil || len(b) < 12 {
		return 0, nil, err
	}
	fee = int64(binary.BigEndian.Uint64(b))
	code, rest := xdr.TransactionResultCode(int32(binary.BigEndian.Uint32(b[8:]))), b[12:]
	if code == xdr.TransactionResultCodeTxFeeBumpInnerFailed {
		// InnerTransactionResultPair: the inner hash (32 bytes), then its result's fee and code.
		if len(rest) < 32+12 {
			return 0, nil, err
		}
		code, rest = xdr.TransactionResultCode(int32(binary.BigEndian.Uint32(rest[32+8:]))), rest[32+12:]
	}
	if code != xdr.TransactionResultCodeTxFailed || len(rest) < 4 {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(rest)
	if n > 100 || uint64(n)*4 > uint64(len(rest)) { // MAX_OPS_PER_TX; every result is 4 bytes at least
		return 0, nil, err
	}
	rest = rest[4:]
	codes = []string{HorizonTxCode(code)}
	dec := xdr.NewBytesDecoder()
	for range n {
		var op xdr.OperationResult
		used, oerr := dec.DecodeBytes(&op, rest)
		if oerr != nil {
			break
		}
		codes, rest = append(codes, OpCode(op)), rest[used:]
	}
	for len(codes) < int(n)+1 {
		codes = append(codes, opUnknown)
	}
	return fee, codes, nil
}
