package transfer

import (
	"context"
	"errors"
	"time"
)

// What the chain shows of the vault over one UTC day, as the daily reconciliation
// (internal/reconcile, daily.go) sets it against the lasting record. internal/stellar reads it
// (RPCLedger.VaultDay, from Stellar RPC's getLedgers and getTransactions).

// ChainDay is the vault's side of the chain over one UTC day: every successful transaction of the
// day's ledgers (FirstLedger to LastLedger, whose close times fall in [Start, End)) that moves a
// configured asset from or to the vault, and what the transactions' metadata says the vault's
// balances did.
type ChainDay struct {
	// Start and End bound the day: [Start, End), End = Start + 24 h (or earlier: VaultDay's soFar).
	Start, End time.Time
	// FirstLedger and LastLedger are the first and last ledgers closed in [Start, End); Ledgers is
	// LastLedger - FirstLedger + 1 (0 and no ledger when none closed).
	FirstLedger, LastLedger uint32
	FirstClose, LastClose   time.Time
	// Transactions is how many transactions of the day's ledgers were read: those with an event
	// naming the vault, a vault contract or the fee account as fee payer (internal/stellar,
	// dayevents.go), not every transaction of the network.
	Transactions int
	// Payments are the movements of a configured asset from or to the vault, in ledger and
	// application order: classic payments whose source or destination account is the vault, and in
	// contract mode the vault contracts' calls.
	Payments []ChainPayment
	// Other are the operations of successful transactions that touch the vault (as operation
	// source, destination, or a vault contract) but are not payments of a configured asset: a path
	// payment, a merge, a trustline change, a call of another function. Nothing here explains them.
	Other []ChainOther
	// Failed are the hashes (inner and outer) of the day's FAILED transactions whose fee the vault
	// or the fee account paid (the service's own: a failed transaction emits only its fee event),
	// so that a transfer settled as paid whose transaction failed on chain is told apart from one
	// absent.
	Failed map[string]uint32
	// Balances is, per asset code (upper case), what the vault's balance did over the day as the
	// transactions' metadata shows it (ledger-entry changes of the vault's trustline).
	Balances map[string]BalanceMovement
	// ContractMode: the vault is a set of vault contracts; Payments are their calls.
	ContractMode bool
}

// Payment directions: from the vault (a withdrawal) or to it (a deposit).
const (
	DirectionOut = "out"
	DirectionIn  = "in"
)

// ChainPayment is one movement of a configured asset from or to the vault, decoded from a
// transaction's envelope.
type ChainPayment struct {
	// Hash is the transaction's own hash (the inner one of a fee bump: the transfer's identity);
	// OuterHash the fee bump's, empty when not fee-bumped.
	Hash      string    `json:"hash"`
	OuterHash string    `json:"outerHash,omitempty"`
	Ledger    uint32    `json:"ledger"`
	CloseTime time.Time `json:"closeTime"`
	// Op is the operation's index in its transaction (0-based).
	Op int `json:"op"`
	// Ops is how many operations the transaction has.
	Ops int `json:"ops"`
	// Direction is DirectionOut or DirectionIn.
	Direction string `json:"direction"`
	// Counterparty is the other side's G... account (or C... address in contract mode); Muxed and
	// MuxedID the M... address and its id when the operation named a muxed destination.
	Counterparty string `json:"counterparty"`
	Muxed        string `json:"muxed,omitempty"`
	MuxedID      string `json:"muxedId,omitempty"`
	// Asset is the configured asset's code; Stroops the amount (10^-7 units), positive.
	Asset   string `json:"asset"`
	Stroops int64  `json:"stroops"`
	// Memo is the transaction's memo (the zero Memo: none).
	Memo Memo `json:"memo,omitzero"`
	// Function is the vault contract's function called (contract mode only).
	Function string `json:"function,omitempty"`
	// Contract is the vault contract called (contract mode only).
	Contract string `json:"contract,omitempty"`
}

// ChainOther is an operation touching the vault that is not a payment of a configured asset.
type ChainOther struct {
	Hash   string `json:"hash"`
	Ledger uint32 `json:"ledger"`
	Op     int    `json:"op"`
	// Type is the operation type as go-stellar-sdk names it (OperationTypePathPaymentStrictSend,
	// ...), or the contract function for a vault contract's other calls.
	Type string `json:"type"`
	// Detail says what of it touches the vault.
	Detail string `json:"detail"`
}

// BalanceMovement is one asset's movement of the vault's balance over the day, in stroops, from
// the ledger-entry changes of the day's transactions.
type BalanceMovement struct {
	// Readable: every successful transaction that paid from or to the vault in this asset carries
	// a change of the vault's trustline in its metadata, so Net is the vault's actual movement.
	// False when the metadata lists no such change (an RPC whose metadata omits them): Net then
	// counts only what was listed.
	Readable bool
	// Net is the sum over the day of (post - pre) balance of the vault's trustline.
	Net int64
	// Opening is the balance before the day's first change and Closing after its last, when a
	// change was seen (HasBalances).
	Opening, Closing int64
	HasBalances      bool
}

// ErrHistoryNotCovered is wrapped by VaultDay when the ledger's history does not reach back to the
// day's start (stellar-rpc keeps history-retention-window ledgers, 120,960, about 7 days, by
// default): the chain side of the day cannot be read whole.
var ErrHistoryNotCovered = errors.New("the ledger's history does not cover the day")

// ErrDayNotOver is wrapped by VaultDay when no ledger has closed at or after the day's end yet
// (as the ledger's backend shows it): the day's ledgers are not all known.
var ErrDayNotOver = errors.New("the day is not over on the ledger")

// ErrDailyNotSupported is wrapped by VaultDay on a backend that cannot read a day's transactions
// (Horizon only: the daily reconciliation reads Stellar RPC).
var ErrDailyNotSupported = errors.New("the daily reconciliation needs Stellar RPC")

// DayReader reads the chain's side of a day (internal/stellar's ledgers).
type DayReader interface {
	// VaultDay reads the UTC day starting at start (midnight UTC). With soFar, a day not over yet
	// is read up to the latest ledger (ChainDay.End is then that ledger's close time plus one
	// second, before Start + 24 h); without, such a day is ErrDayNotOver. Errors wrap
	// ErrHistoryNotCovered, ErrDayNotOver or ErrDailyNotSupported for what the ledger cannot
	// answer, anything else for a ledger that could not be asked.
	VaultDay(ctx context.Context, start time.Time, soFar bool) (ChainDay, error)
}
