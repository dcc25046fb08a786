package stellarsim

import (
	"fmt"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Host errors: how a failed invocation is reported (Error(type, code)).

// hostError is a failed invocation: what the host reports as Error(type, code).
type hostError struct {
	err xdr.ScError
	msg string
}

func contractError(code uint32, msg string) *hostError {
	c := xdr.Uint32(code)
	return &hostError{err: xdr.ScError{Type: xdr.ScErrorTypeSceContract, ContractCode: &c}, msg: msg}
}

func systemError(t xdr.ScErrorType, code xdr.ScErrorCode, msg string) *hostError {
	return &hostError{err: xdr.ScError{Type: t, Code: &code}, msg: msg}
}

var scErrorTypeNames = map[xdr.ScErrorType]string{
	xdr.ScErrorTypeSceContract: "Contract", xdr.ScErrorTypeSceWasmVm: "WasmVm", xdr.ScErrorTypeSceContext: "Context",
	xdr.ScErrorTypeSceStorage: "Storage", xdr.ScErrorTypeSceObject: "Object", xdr.ScErrorTypeSceCrypto: "Crypto",
	xdr.ScErrorTypeSceEvents: "Events", xdr.ScErrorTypeSceBudget: "Budget", xdr.ScErrorTypeSceValue: "Value",
	xdr.ScErrorTypeSceAuth: "Auth",
}

var scErrorCodeNames = map[xdr.ScErrorCode]string{
	xdr.ScErrorCodeScecArithDomain: "ArithDomain", xdr.ScErrorCodeScecIndexBounds: "IndexBounds",
	xdr.ScErrorCodeScecInvalidInput: "InvalidInput", xdr.ScErrorCodeScecMissingValue: "MissingValue",
	xdr.ScErrorCodeScecExistingValue: "ExistingValue", xdr.ScErrorCodeScecExceededLimit: "ExceededLimit",
	xdr.ScErrorCodeScecInvalidAction: "InvalidAction", xdr.ScErrorCodeScecInternalError: "InternalError",
	xdr.ScErrorCodeScecUnexpectedType: "UnexpectedType", xdr.ScErrorCodeScecUnexpectedSize: "UnexpectedSize",
}

// String is the host's rendering: Error(Contract, #1), Error(Auth, InvalidAction).
func (e *hostError) String() string {
	if e.err.Type == xdr.ScErrorTypeSceContract && e.err.ContractCode != nil {
		return fmt.Sprintf("Error(Contract, #%d)", *e.err.ContractCode)
	}
	code := "?"
	if e.err.Code != nil {
		code = scErrorCodeNames[*e.err.Code]
	}
	return fmt.Sprintf("Error(%s, %s)", scErrorTypeNames[e.err.Type], code)
}

// simulationError is the text stellar-rpc puts in a failed simulation's error field.
func (e *hostError) simulationError(contract string) string {
	return fmt.Sprintf("HostError: %s\n\nEvent log (newest first):\n   0: [Diagnostic Event] contract:%s, topics:[error, %s], data:%q\n",
		e, contract, e, e.msg)
}
