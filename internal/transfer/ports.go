package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"time"
)

// ErrNotFound is returned by Store.Get when no item holds the key.
var ErrNotFound = errors.New("transfer: item not found")

// ErrConditionFailed is returned by a conditional write whose condition did not hold: another
// invocation changed the item first.
var ErrConditionFailed = errors.New("transfer: conditional write failed")

// ErrBadCursor is returned (wrapped) by Store.ListInDoubt for a cursor the store did not issue.
var ErrBadCursor = errors.New("transfer: malformed list cursor")

// Condition is what a conditional write expects of the stored item: the exact state its writer
// read. Every field is compared exactly, an empty string meaning "absent": the incarnation
// (ClaimID), Status and Version, the lease owner, and the inner hash of the envelope the item holds
// (empty: it holds none). Build it with Expect from the item as read; a condition so built can
// match no later incarnation of the key, because a new claim never repeats a ClaimID (doc.go,
// "Incarnations" and "The item").
type Condition struct {
	ClaimID    string
	Status     Status
	Version    int64
	LeaseOwner string
	InnerHash  string
}

// Expect is the condition that matches rec exactly as it was read, and nothing else.
func Expect(rec Record) Condition {
	c := Condition{ClaimID: rec.ClaimID, Status: rec.Status, Version: rec.Version, LeaseOwner: rec.LeaseOwner}
	if rec.Envelope != nil {
		c.InnerHash = rec.Envelope.InnerHash
	}
	return c
}

// Matches reports whether the stored item cur satisfies c. It is the reference semantics every
// Store implements (internal/dynamo translates it to a ConditionExpression; its contract suite
// checks both agree).
func (c Condition) Matches(cur Record) bool {
	inner := ""
	if cur.Envelope != nil {
		inner = cur.Envelope.InnerHash
	}
	return cur.ClaimID == c.ClaimID && cur.Status == c.Status && cur.Version == c.Version &&
		cur.LeaseOwner == c.LeaseOwner && inner == c.InnerHash
}

// Store persists transfer items with conditional writes (doc.go, "The item"). Implementations
// return ErrNotFound and ErrConditionFailed (wrapped or not) for those cases, and wrap every other
// failure.
type Store interface {
	// Claim writes rec (an in_flight item, Version 1, a fresh ClaimID) if no item holds
	// rec.StoreKey or the item there expired before now. It returns (rec, true) when the claim is
	// won, or the item that holds the key and false when it is lost (read back consistently if the
	// write did not return it). A claim whose write applied but whose answer was lost comes back
	// lost with rec itself as the holder: the caller recognises its own ClaimID.
	Claim(ctx context.Context, rec Record, now time.Time) (Record, bool, error)
	// Get reads the item consistently.
	Get(ctx context.Context, storeKey string) (Record, error)
	// Replace writes next in place of the item if the stored item matches cond (Condition.Matches).
	// The caller sets next.Version to cond.Version+1 and keeps next.ClaimID = cond.ClaimID.
	Replace(ctx context.Context, next Record, cond Condition) error
	// Delete removes the item if it matches cond (Condition.Matches): only done when nothing can
	// land for it.
	Delete(ctx context.Context, storeKey string, cond Condition) error
	// ListInDoubt reads the in-doubt index, at most limit items from cursor ("" for the start); it
	// returns the next cursor, "" when there is no more.
	ListInDoubt(ctx context.Context, limit int, cursor string) ([]Record, string, error)
}

// SendStatus is the network's answer to one send of an envelope (Stellar RPC sendTransaction).
type SendStatus string

const (
	// SendPending: accepted into the queue; await the ledger.
	SendPending SendStatus = "PENDING"
	// SendDuplicate: the same envelope is already queued; await the ledger.
	SendDuplicate SendStatus = "DUPLICATE"
	// SendTryAgainLater: not accepted now. On a first send this proves nothing landed; on a
	// re-send it proves nothing (an included envelope is answered the same).
	SendTryAgainLater SendStatus = "TRY_AGAIN_LATER"
	// SendError: refused with a transaction-level code. The same caveat on re-sends applies.
	SendError SendStatus = "ERROR"
	// SendIncluded: the backend waited for inclusion itself (Horizon's synchronous submit) and
	// Included says what the ledger did.
	SendIncluded SendStatus = "INCLUDED"
)

// SendResult is what one send returned.
type SendResult struct {
	Status SendStatus
	// Code is the transaction-level result code of an ERROR, e.g. "txBAD_SEQ".
	Code string
	// Included is set when Status is SendIncluded.
	Included *Lookup
	// LatestLedger and LatestLedgerCloseTime as the network reported them with the answer.
	LatestLedger          uint32
	LatestLedgerCloseTime time.Time
	// SourceBusy, when above 0, says a TRY_AGAIN_LATER means the envelope's source account
	// already has a transaction in the network's queue (stellar-core queues one per source
	// account): the vault, when it is the only source, is busy with another transfer. It is how
	// long until that slot should be free (about the time to the next ledger close), the
	// Retry-After of the CHANNELS_BUSY a refused first send answers. The Ledger sets it.
	SourceBusy time.Duration
}

// ErrNotSent marks a send that provably never reached the network (for example connection
// refused before the request was written). Ledger implementations wrap it; any other send error
// is treated as possibly delivered.
var ErrNotSent = errors.New("transfer: envelope not sent")

// ErrUnexpectedAnswer marks a send the network answered, but not as the protocol says (an HTTP
// error status, a JSON-RPC error, an unknown status, another hash): SUBMISSION_FAILED.
// The envelope may have been taken, so it is as indeterminate as a lost answer.
var ErrUnexpectedAnswer = errors.New("transfer: unexpected answer to a send")

// LookupStatus is what the ledger says of a transaction hash (RPC getTransaction).
type LookupStatus string

const (
	LookupSuccess  LookupStatus = "SUCCESS"
	LookupFailed   LookupStatus = "FAILED"
	LookupNotFound LookupStatus = "NOT_FOUND"
)

// Lookup is the ledger's answer for an envelope's hashes, with the facts a proof of death needs.
type Lookup struct {
	Status LookupStatus
	// Hash is the hash the ledger found (inner or outer); Ledger its ledger sequence.
	Hash   string
	Ledger uint32
	// ResultCodes of a FAILED transaction, transaction level first (e.g. "tx_failed",
	// "op_underfunded").
	ResultCodes []string
	// FeeChargedStroops is the fee the ledger charged, in stroops.
	FeeChargedStroops int64
	// LatestLedger and its close time: for a NOT_FOUND, a ledger known to have closed BEFORE the
	// search began, so the search covered it (stellar-rpc reads the transaction before the ledger
	// range, so a NOT_FOUND answer's own latestLedger may include a ledger it did not search).
	// OldestLedger is the first ledger the search's history covers (RPC getTransaction
	// oldestLedger); 0 when the adapter cannot vouch that the search covered LatestLedger (an
	// instance lagging behind the one that told the ledger, a load-balanced deployment).
	LatestLedger          uint32
	LatestLedgerCloseTime time.Time
	OldestLedger          uint32
	// SourceNotAdvanced: the envelope's source account's sequence number, read in one snapshot at
	// a ledger at or after LatestLedger, is below the envelope's sequence number, so the envelope
	// had not applied by then. With LatestLedger closed after maxTime it proves the envelope dead
	// whatever the history's reach (ProvenDead).
	SourceNotAdvanced bool
}

// Terms are what an envelope is built under besides its request: its timebounds.
type Terms struct {
	// MaxTime is the timebounds' maxTime: the envelope can land only in a ledger whose close time
	// is at or before it.
	MaxTime time.Time
	// MinTime is the timebounds' minTime: a past instant unique to the claim the envelope is built
	// for (ClaimMinTime). It makes the envelope unique to its claim: without it, two claims of two
	// keys with equal requests, built in the same second from the same source account (the vault,
	// without channel accounts), sign byte-identical envelopes, so one transaction would land for
	// two transfers and both keys would be told it paid them.
	MinTime time.Time
}

// ClaimMinTime is the minTime of the envelopes built for the claim claimID: 1 + the first 30 bits
// of sha256(claimID), in epoch seconds. It is always in the past (before 2004), so it never delays
// an envelope (stellar-core refuses only minTime after the ledger's close time, txTOO_EARLY), and
// two claims share it with probability 2^-30.
func ClaimMinTime(claimID string) time.Time {
	sum := sha256.Sum256([]byte(claimID))
	n := int64(binary.BigEndian.Uint32(sum[:4]) >> 2)
	return time.Unix(1+n, 0).UTC()
}

// Ledger builds, signs, sends and looks up transactions on a Stellar network. Errors from Prepare
// mean nothing was sent; implementations return the package's typed errors (*ValidationError,
// *UnavailableError) where they know the class, and wrap anything else.
type Ledger interface {
	// Prepare builds and signs the envelope for req under terms (its timebounds).
	Prepare(ctx context.Context, req Request, terms Terms) (Envelope, error)
	// Send submits the signed envelope once. A transport failure that provably wrote nothing wraps
	// ErrNotSent.
	Send(ctx context.Context, env Envelope) (SendResult, error)
	// Lookup asks the ledger for the envelope by its hashes.
	Lookup(ctx context.Context, env Envelope) (Lookup, error)
	// Done tells the ledger the envelope's fate is decided (landed or proven dead), so a channel
	// account can be reused. It never fails the transfer.
	Done(ctx context.Context, env Envelope)
}

// BatchLedger is what the submitter needs from the network to pay several queued transfers with
// one transaction (doc.go, "Batches"); internal/stellar implements it beside Ledger, whose Send,
// Lookup and Done carry a batch's envelope as any other. A FAILED batch's Lookup.ResultCodes hold
// the transaction's code, then one code per operation in order (JudgeOperation reads them).
type BatchLedger interface {
	// PrepareBatch builds and signs one transaction from one source (a channel, or the vault),
	// fee-bumped once, whose operation i pays reqs[i] (2 to MaxBatchOperations requests, none with
	// a memo), under terms (MinTime: BatchMinTime of the claims). The Envelope is as Prepare's;
	// Ledger.Done releases its source once the batch is decided. Errors as Prepare's: nothing was
	// sent (*UnavailableError CHANNELS_BUSY, FEE_ACCOUNT_UNDERFUNDED, ...), and
	// *BatchShortfallError when the vault cannot pay an asset's payments in full (its balance
	// below their sum, or no authorized trustline), with what it can pay of each asset, so the
	// caller may build the batch again from the keys it covers.
	PrepareBatch(ctx context.Context, reqs []Request, terms Terms) (Envelope, error)
	// CheckDestinations reads each destination of reqs as the network will judge its payment (the
	// account exists, the trustline exists, is authorized and has room for the amount) in as few
	// reads as it can, and returns one code per request in order: "" when the payment would pass,
	// else the destination-side code the network would give (DestinationSide: op_no_destination,
	// op_no_trust, op_not_authorized, op_line_full). An error decides nothing: the caller builds
	// the batch unchecked, and the network's per-operation results judge each key.
	CheckDestinations(ctx context.Context, reqs []Request) ([]string, error)
}

// BatchShortfallError is BatchLedger.PrepareBatch's refusal of a batch the vault cannot pay in
// full: for some asset, its trustline's available balance is below the sum of the batch's
// payments of it, or it holds no authorized trustline. Nothing was built to send, and the source
// was released. Available holds, for every asset of the batch keyed by its code as the requests
// name it (Request.Asset), what the vault can pay of it now, in stroops: its trustline's balance
// less its selling liabilities (0 without an authorized trustline; math.MaxInt64 for an asset the
// vault issues), as read by this PrepareBatch. An asset it covers in full shows a balance at or
// above its sum. The fee payer's balance is judged by the next PrepareBatch, for the payments it
// holds. Err is the refusal of the whole batch (VAULT_UNDERFUNDED, its Retry-After), which
// Unwrap and Problem give, so a caller that does not look at Available treats it as any
// refusal of the batch.
type BatchShortfallError struct {
	Available map[string]int64
	Err       *UnavailableError
}

func (e *BatchShortfallError) Error() string { return e.Err.Error() }

func (e *BatchShortfallError) Unwrap() error { return e.Err }

// Problem implements ProblemError: Err's.
func (e *BatchShortfallError) Problem() Problem { return e.Err.Problem() }

// OperationReader reads one operation of a landed transaction from the network (internal/stellar
// may implement it beside Ledger): what an operator's resolve of a batched key checks on chain
// before settling it with a hash (doc.go, "Batches", "Outcomes, per key"). Optional: without it
// the resolve checks the hash against the batch item alone.
type OperationReader interface {
	// PaymentAt returns the payment made by operation index (0-based) of the landed transaction
	// whose inner or outer hash is hash: its destination account (Counterparty, a G... address;
	// Muxed when the operation named an M... address), asset code and amount in stroops.
	// Errors: ErrNotFound (wrapped) when the network holds no landed transaction with that hash,
	// or it has no payment at index; anything else when it could not tell.
	PaymentAt(ctx context.Context, hash string, index int) (ChainPayment, error)
}

// Admission tells, before a call claims its key, whether Ledger.Prepare would find no transaction
// source for req within its wait (internal/stellar's Admit, on the channel calendar).
type Admission interface {
	// Admit returns *UnavailableError CHANNELS_BUSY, with the Retry-After Prepare would give,
	// when no source will be free within the wait of an envelope valid until maxTime; nil when
	// one will be, when Prepare would refuse req before asking for a source, or when it cannot
	// tell (Prepare then decides, after the claim). With nil it returns ctx or a context derived
	// from it carrying what it set aside for the call (a calendar slot), which the call passes
	// to its Ledger requests. It sends nothing.
	Admit(ctx context.Context, req Request, maxTime time.Time) (context.Context, error)
	// Release gives back what Admit set aside in ctx (the context it returned) and the call did
	// not use: called once the call ends, whatever its answer (a replay, a conflict, a wait on
	// another call), so the process's next call can use it.
	Release(ctx context.Context)
}

// Clock is the orchestrator's time: Now for timestamps and budgets, Sleep for backoff. Tests
// inject one that advances simulated time (and closes ledgers) instead of sleeping.
type Clock interface {
	Now() time.Time
	// Sleep waits d or until ctx is done, returning ctx.Err() in the latter case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
