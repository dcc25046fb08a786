package transfer

import (
	"slices"
	"strings"
	"time"
)

// Status is the state of a transfer item in the store (doc.go, "The item").
type Status string

const (
	// StatusInFlight: the key is claimed by an invocation holding a lease.
	StatusInFlight Status = "in_flight"
	// StatusReplayable: the transaction landed with SUCCESS; the outcome is replayed.
	StatusReplayable Status = "replayable"
	// StatusRejected: a terminal rejection is stored and replayed.
	StatusRejected Status = "rejected"
	// StatusInDoubt: an envelope may or may not have landed; every caller gets 409 until it is settled.
	StatusInDoubt Status = "in_doubt"
	// StatusQueued: an asynchronous transfer (Prefer: respond-async) waits for the submitter; no
	// lease, no envelope: nothing was built or sent under it (queued.go).
	StatusQueued Status = "queued"
	// StatusCancelled: a queued item cancelled before any submitter took it (cancel.go): no lease,
	// no envelope, nothing was ever built or sent under it, and nothing ever will be. Audit says
	// who cancelled it and when; every call with its key answers the cancellation until its TTL.
	StatusCancelled Status = "cancelled"
)

// Envelope is a signed transaction as written to the item before its first send.
type Envelope struct {
	// XDR is the base64 TransactionEnvelope that is sent (the outer one when fee-bumped).
	XDR string
	// InnerHash is the hex hash of the inner transaction: the transfer's stable identity.
	InnerHash string
	// OuterHash is the hex hash of the fee bump XDR holds; empty when not fee-bumped.
	OuterHash string
	// OuterHashes is every fee bump sent around the inner transaction, oldest first, ending with
	// OuterHash: more than one once the envelope was replaced by fee (replace.go). Each is on
	// the item before its envelope is sent. Any of them may be the one that lands; the inner hash
	// names them all. Empty on items written before replacement existed: read it with Outers.
	OuterHashes []string
	// MaxTime is the envelope's timebounds maxTime, epoch seconds.
	MaxTime int64
	// SubmittedLedger is the latest ledger sequence seen before the first send.
	SubmittedLedger uint32
	// Channel is the G... account whose sequence number the inner transaction consumes.
	Channel string
	// FeeStroops is the most the envelope can charge, in stroops.
	FeeStroops int64
}

// Hashes returns the envelope's hashes, inner first, then every outer hash (Outers) when
// fee-bumped.
func (e Envelope) Hashes() []string {
	return append([]string{e.InnerHash}, e.Outers()...)
}

// Outers returns every outer hash sent for the inner transaction, oldest first: OuterHashes, or
// OuterHash alone for an envelope recorded before replacement by fee existed (or built but never
// replaced); nil when not fee-bumped. The result is a new slice.
func (e Envelope) Outers() []string {
	if len(e.OuterHashes) > 0 {
		out := slices.Clone(e.OuterHashes)
		if e.OuterHash != "" && !slices.Contains(out, e.OuterHash) {
			out = append(out, e.OuterHash)
		}
		return out
	}
	if e.OuterHash == "" {
		return nil
	}
	return []string{e.OuterHash}
}

// FeeBumped reports whether the envelope is a fee bump (it has an outer hash).
func (e Envelope) FeeBumped() bool { return e.OuterHash != "" || len(e.OuterHashes) > 0 }

// Result is the stored outcome of a settled item.
type Result struct {
	// TransactionHash (hex) and Ledger (sequence) of the landed transaction: replayable and rejected-on-ledger.
	TransactionHash string `json:"transactionHash,omitempty"`
	Ledger          uint32 `json:"ledger,omitempty"`
	// Code and Detail of a stored rejection (rejected), or the failing code (in_doubt).
	Code   string `json:"code,omitempty"`
	Detail string `json:"detail,omitempty"`
	// HTTPStatus (item attribute "status") is read, never written. A rejected item may hold
	// the HTTP status its rejection was answered with, written by a version whose domain chose
	// statuses (422 for every rejection such a version stored: a transaction included and failed,
	// or a queued request Ledger.Prepare refused, whose ValidationErrors are all well-formed but
	// unacceptable); a replay answers it as stored (Problem.StoredStatus). Writes leave it out
	// because a reader without it derives the same answer: such a version answers 422 for a
	// stored rejection with no status (its RejectedError.Problem and internal/api's viewResponse
	// both default to it), and internal/api answers a stored rejection (KindRejected) 422
	// whatever its code, so a rolling deploy or a rollback replays the same status from either
	// kind of item.
	HTTPStatus int `json:"status,omitempty"`
	// ResultCodes are the transaction and operation result codes of a FAILED transaction
	// (for example "tx_failed", "op_underfunded").
	ResultCodes []string `json:"resultCodes,omitempty"`
	// FeeChargedStroops is the fee the ledger charged, in stroops, when known; for a batched key,
	// its share of the batch's fee (FeeShare).
	FeeChargedStroops int64 `json:"feeCharged,omitempty"`
	// OperationIndex is the key's operation index (0-based) in the batched transaction
	// TransactionHash names, as a store read it from an image that holds the result but not the
	// item's Batch (internal/dynamo's history index); nil otherwise. Writers leave it nil: a
	// store derives it from Batch (OperationIndexOf), and so does every reader of a whole item.
	OperationIndex *int `json:"operationIndex,omitempty"`
}

// OperationIndexOf is the 0-based index of rec's operation in the transaction its answer names,
// and true, when rec was paid or rejected by a batch's transaction (doc.go, "Batches": every
// answer names the landed transaction and the operation's index): rec is replayable or
// rejected, its result names a transaction, and either the result carries the index
// (Result.OperationIndex) or rec's Batch holds it and that transaction is rec's envelope (an
// operator's forced resolve naming another transaction has no index of this batch). 0 and false
// otherwise: a transfer paid alone, or no transaction named.
func OperationIndexOf(rec Record) (int, bool) {
	r := rec.Result
	if (rec.Status != StatusReplayable && rec.Status != StatusRejected) || r == nil || r.TransactionHash == "" {
		return 0, false
	}
	if r.OperationIndex != nil {
		return *r.OperationIndex, true
	}
	if b := rec.Batch; b != nil && rec.Envelope != nil && strings.EqualFold(rec.Envelope.InnerHash, r.TransactionHash) {
		return b.Index, true
	}
	return 0, false
}

// Record is one transfer item (doc.go, "The item"). The store persists every field; Fingerprint is
// never returned by any API.
type Record struct {
	StoreKey string
	// ClaimID names the item's incarnation: a random ID written by the claim that created the item
	// and kept by every later write of it (attach, take-over, settle, in_doubt, resolve). Releasing
	// the key deletes the item; the next claim writes a new ClaimID, so a writer that read an
	// earlier incarnation can never match the new one (doc.go, "Incarnations"). Empty only on items
	// written before claim IDs existed.
	ClaimID     string
	Status      Status
	Fingerprint string
	Request     Request
	ClientKey   string
	TraceID     string

	// LeaseOwner identifies the invocation holding an in_flight claim until LeaseExpiresAt.
	LeaseOwner     string
	LeaseExpiresAt time.Time

	// Envelope is set before the first send; nil until then.
	Envelope *Envelope
	// Result is set once settled (replayable, rejected) or in doubt (failing code), and on a
	// queued item held back (NotBefore) as the failure it waits out (Code and Detail).
	Result *Result

	// ExpiresAt is the TTL, epoch seconds; 0 means never (in_flight, in_doubt, or holding an
	// envelope that could still land).
	ExpiresAt int64
	// Version increases by one on every conditional write within an incarnation (it restarts at 1
	// with each claim, so only ClaimID and Version together name one state of the item).
	Version int64

	CreatedAt time.Time
	UpdatedAt time.Time

	// Audit records who settled an in-doubt item by hand, or who cancelled a queued one (Action
	// AuditCancel), when and why; nil otherwise.
	Audit *Audit

	// Async marks a transfer accepted with Prefer: respond-async (queued.go): set by its queued
	// claim and kept by every later write of the incarnation. Where a synchronous item is released
	// (deleted) once nothing can land, an async one is requeued instead (the same ClaimID, the
	// next Version, status queued, no lease, no envelope), so a transfer the client was told is
	// accepted is never dropped.
	Async bool

	// Charges are what the claim that created this incarnation added to the limits' daily
	// counters (limits.go), written with the claim in one atomic write and kept by every later
	// write, so that a give-back (GiveBackOf) returns exactly them. Empty when the asset has no
	// daily limit.
	Charges []Charge

	// Batch is set on the items of a batch's keys (doc.go, "Batches"): the key's operation in the
	// batch's transaction, whose signed XDR the batch's own item holds (BatchEnvelope); Envelope
	// then holds its hashes and no XDR. Written with the envelope and kept by every later write of
	// the incarnation; nil on the one-transfer path.
	Batch *BatchRef

	// NotBefore is, on a queued item only, the earliest time anything may take it, epoch seconds;
	// 0 means at once (and every item written without it). A requeue for a failure on the paying
	// or the service's side (an answer that pages: VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED,
	// SERVICE_SIDE_FAILURE) sets it to that answer's Retry-After after the requeue and keeps the
	// answer's Code and Detail as Result (RequeuedAfter): a run before it would meet the unchanged
	// cause, another FAILED inclusion, another fee and another page. A message that arrives
	// before it is put back for the time left (RunQueued, RunQueuedBatch); a synchronous call
	// meanwhile is answered the stored failure with the time left as its Retry-After (HeldAnswer).
	// The take (queued -> in_flight) and a cancel clear it.
	NotBefore int64

	// Archived marks a record read from the lasting record (an Archive, listed in a wallet's
	// history) rather than from the live item; it is never written.
	Archived bool
}

// Audit is an operator's resolution of an in-doubt item (internal/reconcile), or a caller's
// cancellation of a queued one (cancel.go).
type Audit struct {
	// Action is "resolve" (a transaction hash), "discard" or AuditCancel.
	Action string
	// Operator is who asked: the reconcile payload's operator field, or for a cancellation the
	// caller identity the API authenticated (Canceller.Caller). RequestID is the Lambda (or API
	// Gateway) request ID of the invocation that wrote it.
	Operator  string
	RequestID string
	Reason    string
	// Forced is true when the ledger did not prove the resolution and the operator forced it.
	Forced bool
	At     time.Time
}

// Expired reports whether a settled item's TTL has passed at now. DynamoDB deletes expired items
// days late, so expiry is decided here, never by the item's absence.
func (r Record) Expired(now time.Time) bool {
	return r.ExpiresAt > 0 && r.ExpiresAt < now.Unix()
}

// HeldFor is how long r, a queued item, is still held back at now (NotBefore), rounded up to the
// whole second, and true; 0 and false when it may be taken now (no NotBefore, NotBefore passed,
// or not queued).
func (r Record) HeldFor(now time.Time) (time.Duration, bool) {
	if r.Status != StatusQueued || r.NotBefore == 0 {
		return 0, false
	}
	left := time.Unix(r.NotBefore, 0).Sub(now)
	if left <= 0 {
		return 0, false
	}
	if rem := left % time.Second; rem != 0 {
		left += time.Second - rem
	}
	return left, true
}

// LeaseExpired reports whether an in_flight claim's lease ran out at now.
func (r Record) LeaseExpired(now time.Time) bool {
	return r.Status == StatusInFlight && !r.LeaseExpiresAt.IsZero() && now.After(r.LeaseExpiresAt)
}
