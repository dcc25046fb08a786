package stellarsim

import (
	"bytes"
	"fmt"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// A vault invocation: parsing the host function, its footprint and its auth.

// Canonical vault functions.
const (
	fnDeposit  = "deposit"
	fnWithdraw = "withdraw"
	fnBalance  = "balance"
)

// call is a parsed vault invocation.
type call struct {
	v      *vault
	fn     string // fnDeposit, fnWithdraw or fnBalance
	wallet xdr.ScAddress
	amount int64
	args   xdr.InvokeContractArgs
}

// parseLocked reads an InvokeContract host function addressed to a vault.
func (h *VaultHost) parseLocked(hf xdr.HostFunction) (*call, *hostError) {
	if hf.Type != xdr.HostFunctionTypeHostFunctionTypeInvokeContract || hf.InvokeContract == nil {
		return nil, systemError(xdr.ScErrorTypeSceContext, xdr.ScErrorCodeScecInvalidAction, "only contract invocations are supported here")
	}
	args := *hf.InvokeContract
	if args.ContractAddress.Type != xdr.ScAddressTypeScAddressTypeContract || args.ContractAddress.ContractId == nil {
		return nil, systemError(xdr.ScErrorTypeSceStorage, xdr.ScErrorCodeScecMissingValue, "not a contract address")
	}
	v := h.vaults[*args.ContractAddress.ContractId]
	if v == nil {
		return nil, systemError(xdr.ScErrorTypeSceStorage, xdr.ScErrorCodeScecMissingValue, "contract not found")
	}
	c := &call{v: v, args: args}
	switch string(args.FunctionName) {
	case v.depositFn:
		c.fn = fnDeposit
	case v.withdrawFn:
		c.fn = fnWithdraw
	case fnBalance:
		c.fn = fnBalance
	default:
		return nil, systemError(xdr.ScErrorTypeSceWasmVm, xdr.ScErrorCodeScecMissingValue, "function not found: "+string(args.FunctionName))
	}
	want := 2
	if c.fn == fnBalance {
		want = 1
	}
	if len(args.Args) != want {
		return nil, systemError(xdr.ScErrorTypeSceWasmVm, xdr.ScErrorCodeScecUnexpectedSize, fmt.Sprintf("want %d arguments, got %d", want, len(args.Args)))
	}
	if args.Args[0].Type != xdr.ScValTypeScvAddress || args.Args[0].Address == nil {
		return nil, systemError(xdr.ScErrorTypeSceValue, xdr.ScErrorCodeScecUnexpectedType, "wallet: want an Address")
	}
	c.wallet = *args.Args[0].Address
	switch c.wallet.Type {
	case xdr.ScAddressTypeScAddressTypeAccount, xdr.ScAddressTypeScAddressTypeContract:
	default:
		return nil, systemError(xdr.ScErrorTypeSceValue, xdr.ScErrorCodeScecUnexpectedType, "wallet: want an account or contract address")
	}
	if want == 2 {
		amt, ok := i128ToInt64(args.Args[1])
		if args.Args[1].Type != xdr.ScValTypeScvI128 {
			return nil, systemError(xdr.ScErrorTypeSceValue, xdr.ScErrorCodeScecUnexpectedType, "amount: want an i128")
		}
		if !ok || amt <= 0 {
			return nil, contractError(VaultErrInvalidAmount, "amount must be positive")
		}
		c.amount = amt
	}
	return c, nil
}

// footprint is what the call reads only and what it writes.
func (h *VaultHost) footprint(c *call) (ro, rw []xdr.LedgerKey) {
	ro = []xdr.LedgerKey{instanceLedgerKey(c.v.addr), codeLedgerKey(h.codeHash)}
	bal := balanceLedgerKey(c.v.addr, c.wallet)
	if c.fn == fnBalance {
		return append(ro, bal), nil
	}
	return ro, []xdr.LedgerKey{bal}
}

// authEntry is what recording-mode simulation returns for the operator's
// require_auth when the operator is the operation source.
func (c *call) authEntry() xdr.SorobanAuthorizationEntry {
	args := c.args
	return xdr.SorobanAuthorizationEntry{
		Credentials: xdr.SorobanCredentials{Type: xdr.SorobanCredentialsTypeSorobanCredentialsSourceAccount},
		RootInvocation: xdr.SorobanAuthorizedInvocation{
			Function:       xdr.SorobanAuthorizedFunction{Type: xdr.SorobanAuthorizedFunctionTypeSorobanAuthorizedFunctionTypeContractFn, ContractFn: &args},
			SubInvocations: []xdr.SorobanAuthorizedInvocation{},
		},
	}
}

// authorized reports whether auth holds the source-account entry for c.
func (c *call) authorized(source string, auth []xdr.SorobanAuthorizationEntry) bool {
	if source != c.v.operator {
		return false
	}
	want, err := c.authEntry().MarshalBinary()
	if err != nil {
		return false
	}
	for _, a := range auth {
		if b, err := a.MarshalBinary(); err == nil && bytes.Equal(b, want) {
			return true
		}
	}
	return false
}
