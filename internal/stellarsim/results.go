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
