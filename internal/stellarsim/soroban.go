package stellarsim

import (
	"fmt"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// ContractHost is the seam where Soroban execution plugs in (a later issue
// adds a vault contract). With Options.Contracts nil, InvokeHostFunction,
// ExtendFootprintTtl and RestoreFootprint are refused at submission with
// txMALFORMED. With a host, a transaction holding exactly one such operation
// is accepted by the classic rules and Apply runs it at ledger close; a
// false second result fails the transaction (fee still charged). Apply is
// called with the network's lock held and runs the only operation of its
// transaction, so a host may commit its own state when it returns true.
//
// A host may also implement (unexported, see VaultHost): attaching to the
// network at Start, serving simulateTransaction, serving its ledger entries
// through getLedgerEntries, and adding admin routes.
type ContractHost interface {
	Apply(ctx ContractContext, op xdr.Operation) (xdr.OperationResult, bool)
}

// ContractContext is what a contract invocation sees.
type ContractContext struct {
	Ledger     LedgerInfo
	Source     string // operation source account
	TxHash     string // inner transaction hash, hex
	Passphrase string
	Balances   Balances // classic balances, written only if the transaction succeeds
	// Soroban is the transaction's SorobanTransactionData (footprint,
	// declared resources, resource fee); never nil for a Soroban operation.
	Soroban *xdr.SorobanTransactionData
	// Return records a successful invocation's return value, which the transaction's meta then
	// carries (TransactionMetaV4 sorobanMeta.returnValue, see txMeta); nil where nothing records it.
	Return func(xdr.ScVal)
	// Protocol23 is true unless Options.Protocol22Restore: an invocation
	// restores the archived entries its transaction data marks
	// (archivedSorobanEntries) and the unused refundable fee is refunded.
	Protocol23 bool
	// Refundable is where the host reports the refundable resource fee
	// (rent, stroops) a successful operation consumed; the network refunds
	// the rest of the declared refundable fee to the fee source (core's
	// RefundableFeeTracker). Never nil.
	Refundable *int64
	// Emit adds a contract event to the operation's events (TransactionMetaV4's operation events;
	// kept only if the transaction succeeds); nil where nothing records them.
	Emit func(xdr.ContractEvent)
}

// Balances lets a contract read and move classic balances inside the
// applying transaction.
type Balances interface {
	Balance(account string, asset Asset) (int64, error)
	// Credit adds delta (negative to debit) to account's balance of asset.
	Credit(account string, asset Asset, delta int64) error
}

type viewBalances struct{ v *view }

func (b viewBalances) Balance(account string, asset Asset) (int64, error) {
	if asset.IsNative() {
		a := b.v.account(account)
		if a == nil {
			return 0, fmt.Errorf("account %s: %w", account, ErrNotFound)
		}
		return a.balance, nil
	}
	t := b.v.trustline(account, asset)
	if t == nil {
		return 0, fmt.Errorf("trustline %s/%s: %w", account, asset, ErrNotFound)
	}
	return t.balance, nil
}

func (b viewBalances) Credit(account string, asset Asset, delta int64) error {
	if asset.IsNative() {
		a := b.v.account(account)
		if a == nil {
			return fmt.Errorf("account %s: %w", account, ErrNotFound)
		}
		if a.balance+delta < 0 {
			return fmt.Errorf("account %s: %w", account, ErrUnderfunded)
		}
		a.balance += delta
		return nil
	}
	if account == asset.Issuer {
		return nil // issuers mint and burn
	}
	t := b.v.trustline(account, asset)
	if t == nil {
		return fmt.Errorf("trustline %s/%s: %w", account, asset, ErrNotFound)
	}
	if t.balance+delta < 0 {
		return fmt.Errorf("trustline %s/%s: %w", account, asset, ErrUnderfunded)
	}
	if t.balance+delta > t.limit {
		return fmt.Errorf("trustline %s/%s: %w", account, asset, ErrLineFull)
	}
	t.balance += delta
	return nil
}
