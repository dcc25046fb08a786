package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Cancelling an accepted asynchronous transfer (README.md, "Asynchronous transfers", Cancel): a
// queued item, which no submitter has taken, becomes cancelled in one conditional write on the
// item exactly as read (Expect). The submitter's take is the same kind of write on the same
// condition, so of a cancel and a take of one queued state exactly one applies, and the other
// fails its condition and reads the winner back (doc.go, "Incarnations"). A cancelled item
// holds no lease and no envelope and is never taken (RunQueued answers its message stale), so
// nothing is ever built or sent for it.

// AuditCancel is Audit.Action on a cancelled item.
const AuditCancel = "cancel"

// AnonymousCaller is Canceller.Caller when the API authenticated nobody (ApiAuthorization NONE,
// a development stack).
const AnonymousCaller = "anonymous"

// Codes of a cancellation (README.md, "Problem types").
const (
	// CodeNotCancellable: DELETE found the transfer already taken by a submitter (or a
	// synchronous call), sent, in doubt or settled: only a queued transfer can be cancelled.
	// The problem's State says which (NotCancellableError).
	CodeNotCancellable = "TRANSFER_NOT_CANCELLABLE"
	// CodeCancelled: a POST found its key's transfer cancelled: it never ran and never will;
	// the key is used until its replay window ends.
	CodeCancelled = "TRANSFER_CANCELLED"
)

// Canceller is who asks for a cancellation, as the door knows them.
type Canceller struct {
	// Caller is the identity the door authenticated (internal/api: the IAM principal's ARN under
	// ApiAuthorization AWS_IAM), AnonymousCaller when it authenticated nobody.
	Caller string
	// RequestID is the door's request ID (API Gateway's), "" when it has none.
	RequestID string
}

// Cancellation is Cancel's answer: the cancelled transfer's View (Status "cancelled") and
// whether it was cancelled before this call (by an earlier DELETE, this caller's or another's).
type Cancellation struct {
	View     View
	Replayed bool
}

// Cancelled is rec, a queued item, cancelled by by at now: status cancelled, the next Version,
// no lease, no envelope, no result, the Audit (AuditCancel, by.Caller, by.RequestID, at now)
// and a TTL of ttl (the replay window: once it ends the key is free, as for a settled item).
func Cancelled(rec Record, by Canceller, now time.Time, ttl time.Duration) Record {
	next := rec
	next.Status = StatusCancelled
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Envelope, next.Result = nil, nil
	next.Batch = nil
	next.ExpiresAt = now.Add(ttl).Unix()
	next.Version++
	next.UpdatedAt = now
	next.Audit = &Audit{Action: AuditCancel, Operator: by.Caller, RequestID: by.RequestID, At: now}
	return next
}

// cancelAttempts bounds Cancel's passes: each pass that loses its conditional write read a
// queued item that another writer (a submitter's take, a requeue) changed meanwhile.
const cancelAttempts = 3

// Cancel cancels the queued transfer of (wallet, clientKey) (wallet canonical) for by: one
// conditional write, queued -> cancelled (Cancelled), on the item exactly as read. It answers
// the cancelled View: Replayed when the item was cancelled already (an earlier DELETE, whose
// answer may have been lost). A cancel whose write applied with its answer lost is recognised by
// reading the item back (ReplaceItem): it answers the cancellation, never a conflict.
//
// Errors: *NotFoundError when no transfer is stored (or only an expired one);
// *NotCancellableError (409) when the item is in_flight (taken by a submitter or a synchronous
// call), in_doubt, replayable or rejected; *InProgressError when the item changed under every
// pass; *UnavailableError CONFIGURATION_INVALID, or STORE_UNAVAILABLE when the store failed
// (the read: nothing was written; the write: it may have applied, and a DELETE again tells).
func (o *Orchestrator) Cancel(ctx context.Context, wallet Wallet, clientKey string, by Canceller) (Cancellation, error) {
	s := o.settings()
	if err := s.Validate(); err != nil {
		return Cancellation{}, misconfigured(err)
	}
	if by.Caller == "" {
		by.Caller = AnonymousCaller
	}
	if by.RequestID == "" {
		// Tells this call's write from another's by the same caller in the same millisecond.
		by.RequestID = randomID()
	}
	key := StoreKey(wallet.Scope(), clientKey)
	var wrote *Record // this call's last cancel write, whose answer may have been lost
	for range cancelAttempts {
		rec, err := o.Store.Get(ctx, key)
		now := o.Clock.Now()
		switch {
		case errors.Is(err, ErrNotFound) || err == nil && rec.Expired(now):
			return Cancellation{}, &NotFoundError{}
		case err == nil && (wallet.Muxed() || rec.Request.WalletAddress != "") && !shows(wallet, rec):
			// As View: a muxed wallet reaches only its own transfers, not its account's others.
			return Cancellation{}, &NotFoundError{}
		case err != nil && wrote != nil:
			return Cancellation{}, cancelUnknown(err)
		case err != nil:
			return Cancellation{}, storeUnreadable(err)
		}
		switch rec.Status {
		case StatusCancelled:
			// This call's own write (its answer lost) is the same incarnation, version, caller and
			// time (the store keeps milliseconds); anything else was cancelled before this call.
			own := wrote != nil && rec.ClaimID == wrote.ClaimID && rec.Version == wrote.Version && rec.Audit != nil &&
				rec.Audit.Operator == wrote.Audit.Operator && rec.Audit.At.UnixMilli() == wrote.Audit.At.UnixMilli() &&
				rec.Audit.RequestID == wrote.Audit.RequestID
			return Cancellation{View: viewOf(rec), Replayed: !own}, nil
		case StatusQueued:
		default:
			return Cancellation{}, notCancellable(rec)
		}
		next := Cancelled(rec, by, now, s.KeyTTL)
		wrote = &next
		werr := ReplaceItem(ctx, o.Store, rec, next)
		switch {
		case werr == nil:
			o.log().InfoContext(ctx, "transfer cancelled", "storeKey", key, "claimId", rec.ClaimID, "caller", by.Caller)
			return Cancellation{View: viewOf(next)}, nil
		case isConflict(werr):
			continue // taken, requeued or cancelled by another writer: read it again
		}
		return Cancellation{}, cancelUnknown(werr)
	}
	return Cancellation{}, &InProgressError{RetryAfter: time.Second}
}

// cancelUnknown is the answer of a cancel whose write may have applied: the store failed during
// or after it, and the item could not be read back.
func cancelUnknown(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, RetryAfter: time.Second, Err: err,
		Detail: "the idempotency store failed while cancelling: the transfer may have been cancelled; DELETE again to learn which (it answers the cancellation if it was)"}
}

// notCancellable is the 409 for rec, an item past queued: its state in the GET's vocabulary
// where the GET has one (success, error), else the item's status (in_flight, in_doubt).
func notCancellable(rec Record) *NotCancellableError {
	v := viewOf(rec)
	e := &NotCancellableError{State: string(rec.Status), TransactionHash: v.TransactionHash, OperationIndex: v.OperationIndex}
	switch rec.Status {
	case StatusReplayable, StatusRejected:
		e.State = v.Status
	}
	return e
}

// NotCancellableError (KindConflict, terminal): DELETE found the transfer past queued. State is
// in_flight (taken: it may be building or sending now), in_doubt, success or error;
// TransactionHash is set when a transaction landed, and OperationIndex (0-based) when that
// transaction was a batch's (OperationIndexOf).
type NotCancellableError struct {
	State           string
	TransactionHash string
	OperationIndex  *int
}

func (e *NotCancellableError) Error() string {
	return fmt.Sprintf("%s: the transfer is %s", CodeNotCancellable, e.State)
}

// Problem implements ProblemError.
func (e *NotCancellableError) Problem() Problem {
	return Problem{Code: CodeNotCancellable, Kind: KindConflict, Classification: Terminal,
		Detail:          "Only a queued transfer that no submitter has taken can be cancelled; this one is past queued (state " + e.State + "). GET it for its outcome.",
		State:           e.State,
		TransactionHash: e.TransactionHash,
		OperationIndex:  e.OperationIndex}
}

// CancelledError (KindConflict, terminal): a POST found its key's transfer cancelled. It never
// ran and never will; every POST with the key and the same request answers it (Replayed) until
// the replay window ends.
type CancelledError struct {
	CancelledAt time.Time
}

func (e *CancelledError) Error() string { return CodeCancelled + ": the transfer was cancelled" }

// Problem implements ProblemError.
func (e *CancelledError) Problem() Problem {
	return Problem{Code: CodeCancelled, Kind: KindConflict, Classification: Terminal, Replayed: true, State: string(StatusCancelled),
		Detail: "The transfer under this Idempotency-Key was cancelled before it ran (at " + e.CancelledAt.UTC().Format(time.RFC3339) +
			"); nothing was sent. To pay, use a new key."}
}

// cancelledAnswer is what a POST that finds rec cancelled answers.
func cancelledAnswer(rec Record) *CancelledError {
	at := rec.UpdatedAt
	if rec.Audit != nil && !rec.Audit.At.IsZero() {
		at = rec.Audit.At
	}
	return &CancelledError{CancelledAt: at}
}
