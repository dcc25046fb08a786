package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// txError is a transaction refused or dropped before inclusion.
type txError struct {
	result xdr.TransactionResult
	code   xdr.TransactionResultCode // the outer code
	inner  xdr.TransactionResultCode // for txFEE_BUMP_INNER_FAILED
}

func (e *txError) name() string {
	if e.code == xdr.TransactionResultCodeTxFeeBumpInnerFailed {
		return TxCodeName(e.code) + "/" + TxCodeName(e.inner)
	}
	return TxCodeName(e.code)
}

// simpleResult builds a TransactionResult with a void or op-results arm.
func simpleResult(fee int64, code xdr.TransactionResultCode, ops []xdr.OperationResult) xdr.TransactionResult {
	r := xdr.TransactionResult{FeeCharged: xdr.Int64(fee)}
	r.Result.Code = code
	if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFailed {
		if ops == nil {
			ops = []xdr.OperationResult{}
		}
		r.Result.Results = &ops
	}
	return r
}

// feeBumpResult wraps an inner outcome the way core reports fee bumps.
func feeBumpResult(outerFee int64, innerHash [32]byte, innerCode xdr.TransactionResultCode, ops []xdr.OperationResult) xdr.TransactionResult {
	code := xdr.TransactionResultCodeTxFeeBumpInnerSuccess
	if innerCode != xdr.TransactionResultCodeTxSuccess {
		code = xdr.TransactionResultCodeTxFeeBumpInnerFailed
	}
	inner := xdr.InnerTransactionResult{}
	inner.Result.Code = innerCode
	if innerCode == xdr.TransactionResultCodeTxSuccess || innerCode == xdr.TransactionResultCodeTxFailed {
		if ops == nil {
			ops = []xdr.OperationResult{}
		}
		inner.Result.Results = &ops
	}
	r := xdr.TransactionResult{FeeCharged: xdr.Int64(outerFee)}
	r.Result.Code = code
	r.Result.InnerResultPair = &xdr.InnerTransactionResultPair{TransactionHash: xdr.Hash(innerHash), Result: inner}
	return r
}

func opInner(typ xdr.OperationType, inner any) xdr.OperationResult {
	tr, err := xdr.NewOperationResultTr(typ, inner)
	if err != nil {
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &tr}
}

func createAccountResult(c xdr.CreateAccountResultCode) xdr.OperationResult {
	r, _ := xdr.NewCreateAccountResult(c, nil)
	return opInner(xdr.OperationTypeCreateAccount, r)
}

func paymentResult(c xdr.PaymentResultCode) xdr.OperationResult {
	r, _ := xdr.NewPaymentResult(c, nil)
	return opInner(xdr.OperationTypePayment, r)
}

func changeTrustResult(c xdr.ChangeTrustResultCode) xdr.OperationResult {
	r, _ := xdr.NewChangeTrustResult(c, nil)
	return opInner(xdr.OperationTypeChangeTrust, r)
}

func beginSponsoringResult(c xdr.BeginSponsoringFutureReservesResultCode) xdr.OperationResult {
	r, _ := xdr.NewBeginSponsoringFutureReservesResult(c, nil)
	return opInner(xdr.OperationTypeBeginSponsoringFutureReserves, r)
}

// successResult is the success arm for the supported operation types.
func successResult(t xdr.OperationType) xdr.OperationResult {
	switch t {
	case xdr.OperationTypeCreateAccount:
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountSuccess)
	case xdr.OperationTypePayment:
		return paymentResult(xdr.PaymentResultCodePaymentSuccess)
	case xdr.OperationTypeChangeTrust:
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess)
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		return beginSponsoringResult(xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesSuccess)
	case xdr.OperationTypeEndSponsoringFutureReserves:
		r, _ := xdr.NewEndSponsoringFutureReservesResult(xdr.EndSponsoringFutureReservesResultCodeEndSponsoringFutureReservesSuccess, nil)
		return opInner(t, r)
	case xdr.OperationTypeSetOptions:
		return setOptionsResult(xdr.SetOptionsResultCodeSetOptionsSuccess)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}
}
