package reconcile

import (
	"strconv"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Item is what list and get show of a transfer: the operator fields (README.md, "Operating it": wallet, operation,
// amount, asset, failing code, the client's idempotency key, trace ID), the envelope's hashes and
// what the chain says now. Never the fingerprint, never the signed XDR.
type Item struct {
	StoreKey      string `json:"storeKey"`
	Status        string `json:"status"`
	WalletAddress string `json:"walletAddress"`
	OperationType string `json:"operationType"`
	Amount        string `json:"amount"`
	Asset         string `json:"asset"`
	// Memo is the transfer's memo, absent for none; Account and MuxedID the G... account and the
	// id (decimal) of a muxed (M...) walletAddress, absent otherwise: what an exchange credits by.
	Memo           *transfer.Memo `json:"memo,omitempty"`
	Account        string         `json:"account,omitempty"`
	MuxedID        string         `json:"muxedId,omitempty"`
	IdempotencyKey string         `json:"idempotencyKey"`
	TraceID        string         `json:"traceId,omitempty"`
	FailingCode    string         `json:"failingCode,omitempty"` // in_doubt
	InnerHash      string         `json:"innerHash,omitempty"`
	OuterHash      string         `json:"outerHash,omitempty"`
	// OuterHashes is every fee bump sent around the inner transaction, oldest first, when it was
	// replaced by fee (more than one); any of them may be the one that landed.
	OuterHashes     []string   `json:"outerHashes,omitempty"`
	MaxTime         int64      `json:"maxTime,omitempty"` // epoch seconds
	SubmittedLedger uint32     `json:"submittedLedger,omitempty"`
	Channel         string     `json:"channel,omitempty"`
	LeaseExpiresAt  *time.Time `json:"leaseExpiresAt,omitempty"` // in_flight
	// NotBefore is, on a queued item held back after an answer that pages (transfer.Record.
	// NotBefore: VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED, SERVICE_SIDE_FAILURE), the
	// earliest time anything may take it; HeldCode is that answer's code, what a synchronous
	// call with the key is answered until then. Both absent otherwise.
	NotBefore       *time.Time `json:"notBefore,omitempty"`
	HeldCode        string     `json:"heldCode,omitempty"`
	TransactionHash string     `json:"transactionHash,omitempty"` // settled
	// OperationIndex is the 0-based index of the transfer's operation in TransactionHash's
	// transaction when a batch's transaction paid or rejected it (transfer.OperationIndexOf).
	OperationIndex *int      `json:"operationIndex,omitempty"`
	Ledger         uint32    `json:"ledger,omitempty"`
	CreatedAt      time.Time `json:"createdAt,omitzero"`
	UpdatedAt      time.Time `json:"updatedAt,omitzero"`
	Audit          *Audit    `json:"audit,omitempty"`
	// Chain is the ledger's answer for the envelope now; absent when there is no envelope.
	Chain *Chain `json:"chain,omitempty"`
}

// Audit is an operator's resolution recorded on the item.
type Audit struct {
	Action    string    `json:"action"`
	Operator  string    `json:"operator"`
	RequestID string    `json:"requestId"`
	Reason    string    `json:"reason,omitempty"`
	Forced    bool      `json:"forced"`
	At        time.Time `json:"at"`
}

// Chain is what the ledger says of an envelope (RPC getTransaction on its hashes) and what
// follows from it (internal/transfer/doc.go, "Proof rules").
type Chain struct {
	// Status is SUCCESS, FAILED or NOT_FOUND; Hash and Ledger say where it was found.
	Status                string    `json:"status,omitempty"`
	Hash                  string    `json:"hash,omitempty"`
	Ledger                uint32    `json:"ledger,omitempty"`
	ResultCodes           []string  `json:"resultCodes,omitempty"`
	LatestLedger          uint32    `json:"latestLedger,omitempty"`
	LatestLedgerCloseTime time.Time `json:"latestLedgerCloseTime,omitzero"`
	OldestLedger          uint32    `json:"oldestLedger,omitempty"`
	// MaxTimePassed: a ledger closed after the envelope's maxTime, so it can no longer be included.
	MaxTimePassed bool `json:"maxTimePassed"`
	// HistoryCovers: the lookup's history reaches back to the ledger seen before the first send.
	HistoryCovers bool `json:"historyCovers"`
	// ProvenDead: NOT_FOUND, maxTime passed and the history covers: discard is accepted.
	ProvenDead bool `json:"provenDead"`
	// CanStillLand: NOT_FOUND and no ledger closed after maxTime yet: nothing may be decided.
	CanStillLand bool `json:"canStillLand"`
	// Error says the ledger could not be asked (the item is shown without the chain's answer).
	Error string `json:"error,omitempty"`
}

// itemOf is rec as shown. The texts a client or an operator wrote (idempotency key, trace ID, the
// audit's operator and reason) are redacted (logging.Redact): the doors refuse or replace a seed
// in them today, but an item stored before they did may still hold one.
func itemOf(rec transfer.Record) Item {
	rec.ClientKey, rec.TraceID = logging.Redact(rec.ClientKey), logging.Redact(rec.TraceID)
	it := Item{
		StoreKey: rec.StoreKey, Status: string(rec.Status), WalletAddress: rec.Request.WalletAddress,
		OperationType: string(rec.Request.OperationType), Amount: rec.Request.Amount, Asset: rec.Request.Asset,
		IdempotencyKey: rec.ClientKey, TraceID: rec.TraceID, CreatedAt: rec.CreatedAt, UpdatedAt: rec.UpdatedAt,
	}
	if m := rec.Request.Memo; !m.IsZero() {
		m.Value = logging.Redact(m.Value)
		it.Memo = &m
	}
	if w := rec.Request.Wallet(); w.Muxed() {
		it.Account, it.MuxedID = w.Account, strconv.FormatUint(w.MuxedID, 10)
	}
	if r := rec.Result; r != nil {
		if rec.Status == transfer.StatusInDoubt {
			it.FailingCode = r.Code
		}
		it.TransactionHash, it.Ledger = r.TransactionHash, r.Ledger
		if i, ok := transfer.OperationIndexOf(rec); ok {
			it.OperationIndex = &i
		}
	}
	if e := rec.Envelope; e != nil {
		it.InnerHash, it.OuterHash, it.MaxTime, it.SubmittedLedger, it.Channel = e.InnerHash, e.OuterHash, e.MaxTime, e.SubmittedLedger, e.Channel
		if outers := e.Outers(); len(outers) > 1 {
			it.OuterHashes = outers
		}
	}
	if rec.Status == transfer.StatusInFlight && !rec.LeaseExpiresAt.IsZero() {
		t := rec.LeaseExpiresAt
		it.LeaseExpiresAt = &t
	}
	if rec.Status == transfer.StatusQueued && rec.NotBefore > 0 {
		t := time.Unix(rec.NotBefore, 0).UTC()
		it.NotBefore = &t
		if r := rec.Result; r != nil {
			it.HeldCode = r.Code
		}
	}
	if a := rec.Audit; a != nil {
		it.Audit = &Audit{Action: a.Action, Operator: logging.Redact(a.Operator), RequestID: a.RequestID, Reason: logging.Redact(a.Reason),
			Forced: a.Forced, At: a.At}
	}
	return it
}

func chainOf(env transfer.Envelope, lk transfer.Lookup) *Chain {
	c := &Chain{
		Status: string(lk.Status), Hash: lk.Hash, Ledger: lk.Ledger, ResultCodes: lk.ResultCodes,
		LatestLedger: lk.LatestLedger, LatestLedgerCloseTime: lk.LatestLedgerCloseTime, OldestLedger: lk.OldestLedger,
		MaxTimePassed: maxTimePassed(env, lk),
		HistoryCovers: lk.OldestLedger > 0 && env.SubmittedLedger > 0 && lk.OldestLedger <= env.SubmittedLedger,
		ProvenDead:    transfer.ProvenDead(env, lk),
	}
	c.CanStillLand = lk.Status == transfer.LookupNotFound && !c.MaxTimePassed
	return c
}

// maxTimePassed: a ledger whose close time is after the envelope's maxTime has closed (the local
// clock plays no part).
func maxTimePassed(env transfer.Envelope, lk transfer.Lookup) bool {
	return env.MaxTime > 0 && !lk.LatestLedgerCloseTime.IsZero() && lk.LatestLedgerCloseTime.Unix() > env.MaxTime
}
