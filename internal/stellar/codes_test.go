package stellar

import (
	"slices"
	"testing"

	"github.com/stellar/go-stellar-sdk/xdr"
)

func paymentOp(code xdr.PaymentResultCode) xdr.OperationResult {
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &xdr.OperationResultTr{
		Type: xdr.OperationTypePayment, PaymentResult: &xdr.PaymentResult{Code: code}}}
}

func txResult(fee int64, code xdr.TransactionResultCode, ops ...xdr.OperationResult) xdr.TransactionResult {
	r := xdr.TransactionResult{FeeCharged: xdr.Int64(fee), Result: xdr.TransactionResultResult{Code: code}}
	if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFailed {
		r.Result.Results = &ops
	}
	return r
}

func feeBumpResult(fee int64, code xdr.TransactionResultCode, ops ...xdr.OperationResult) xdr.TransactionResult {
	outer := xdr.TransactionResultCodeTxFeeBumpInnerFailed
	if code == xdr.TransactionResultCodeTxSuccess {
		outer = xdr.TransactionResultCodeTxFeeBumpInnerSuccess
	}
	in := xdr.InnerTransactionResultResult{Code: code}
	if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFailed {
		in.Results = &ops
	}
	return xdr.TransactionResult{FeeCharged: xdr.Int64(fee), Result: xdr.TransactionResultResult{
		Code: outer, InnerResultPair: &xdr.InnerTransactionResultPair{Result: xdr.InnerTransactionResult{Result: in}}}}
}

func TestTxCode(t *testing.T) {
	cases := []struct {
		r    xdr.TransactionResult
		want string
	}{
		{txResult(100, xdr.TransactionResultCodeTxBadSeq), "txBAD_SEQ"},
		{txResult(100, xdr.TransactionResultCodeTxInsufficientFee), "txINSUFFICIENT_FEE"},
		{txResult(100, xdr.TransactionResultCodeTxTooLate), "txTOO_LATE"},
		{txResult(100, xdr.TransactionResultCodeTxNoAccount), "txNO_ACCOUNT"},
		{feeBumpResult(200, xdr.TransactionResultCodeTxBadSeq), "txBAD_SEQ"},
		{txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentUnderfunded)), "txFAILED"},
	}
	for _, c := range cases {
		if got := TxCode(c.r); got != c.want {
			t.Errorf("TxCode(%v) = %q, want %q", c.r.Result.Code, got, c.want)
		}
	}
	// Every code has both spellings.
	for code := range txCodeNames {
		if CoreTxCode(code) == "" || HorizonTxCode(code) == "" {
			t.Errorf("code %d has no name", code)
		}
	}
}

func TestResultCodes(t *testing.T) {
	cases := []struct {
		r    xdr.TransactionResult
		want []string
	}{
		{txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentUnderfunded)), []string{"tx_failed", "op_underfunded"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentNoTrust)), []string{"tx_failed", "op_no_trust"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentSuccess), paymentOp(xdr.PaymentResultCodePaymentNoDestination)),
			[]string{"tx_failed", "op_success", "op_no_destination"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentSrcNotAuthorized), paymentOp(xdr.PaymentResultCodePaymentLineFull)),
			[]string{"tx_failed", "op_src_not_authorized", "op_line_full"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, xdr.OperationResult{Code: xdr.OperationResultCodeOpBadAuth}), []string{"tx_failed", "op_bad_auth"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, xdr.OperationResult{Code: xdr.OperationResultCodeOpNoAccount}), []string{"tx_failed", "op_no_source_account"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &xdr.OperationResultTr{
			Type: xdr.OperationTypeCreateAccount, CreateAccountResult: &xdr.CreateAccountResult{Code: xdr.CreateAccountResultCodeCreateAccountAlreadyExist}}}),
			[]string{"tx_failed", "op_already_exists"}},
		{txResult(100, xdr.TransactionResultCodeTxFailed, xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &xdr.OperationResultTr{
			Type: xdr.OperationTypeManageSellOffer, ManageSellOfferResult: &xdr.ManageSellOfferResult{Code: xdr.ManageSellOfferResultCodeManageSellOfferSellNoTrust}}}),
			[]string{"tx_failed", "op_sell_no_trust"}},
		{txResult(100, xdr.TransactionResultCodeTxBadSeq), []string{"tx_bad_seq"}},
		{txResult(100, xdr.TransactionResultCodeTxInsufficientBalance), []string{"tx_insufficient_balance"}},
		{feeBumpResult(200, xdr.TransactionResultCodeTxFailed, paymentOp(xdr.PaymentResultCodePaymentUnderfunded)), []string{"tx_failed", "op_underfunded"}},
		{feeBumpResult(200, xdr.TransactionResultCodeTxSuccess, paymentOp(xdr.PaymentResultCodePaymentSuccess)), []string{"tx_success", "op_success"}},
	}
	for _, c := range cases {
		// Round-trip through XDR, as the codes arrive from the network.
		b64, err := xdr.MarshalBase64(c.r)
		if err != nil {
			t.Fatal(err)
		}
		var r xdr.TransactionResult
		if err := xdr.SafeUnmarshalBase64(b64, &r); err != nil {
			t.Fatal(err)
		}
		if got := ResultCodes(r); !slices.Equal(got, c.want) {
			t.Errorf("ResultCodes = %v, want %v", got, c.want)
		}
	}
}
