package transfer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Asynchronous transfers (README.md, "Asynchronous transfers"): the API claims the key with a
// queued item and sends a QueueMessage; the submitter runs the item with RunQueued; the sweep sends
// the message again for a queued item older than its grace (internal/reconcile). Every write is
// the same conditional write as in a synchronous call (doc.go, "Incarnations"), and the item's
// ClaimID decides whether a message still names it, so a message delivered twice, late, out of
// order or never changes nothing it should not.

// StepQueued is the Hooks step of Enqueue between its queued claim and the send of its message:
// a crash there leaves a queued item without a message, which the sweep finds by its age.
const StepQueued Step = "queued"

// QueueMessage is the body of one queue message: the item's key and incarnation. It carries no
// request and nothing secret: the submitter reads the request from the item.
type QueueMessage struct {
	// StoreKey is the item's key (StoreKey).
	StoreKey string `json:"storeKey"`
	// ClaimID is the incarnation the message was sent for; a message whose ClaimID is not the
	// item's is stale and does nothing.
	ClaimID string `json:"claimId"`
}

// Queue sends a queued transfer's message to the submitter (an SQS queue: internal/queue). A
// failed send loses nothing: the item stays queued and the sweep sends it again.
type Queue interface {
	Send(ctx context.Context, m QueueMessage) error
}

// Enqueued is Enqueue's answer: Accepted (202, View is the transfer's status) or, for a key
// already settled with success, the replayed Outcome (200).
type Enqueued struct {
	Accepted bool
	View     View
	Outcome  Outcome
}

// Enqueue accepts in for the submitter: the key is claimed with the same conditional write as a
// synchronous claim, as a queued item (Async, no lease, no envelope), then its message is sent
// with o.Queue. The queued claim carries the limits' charges, so a transfer is charged when it is
// accepted, and *LimitError refuses one with nothing queued (doc.go, "Limits").
//
// The key's rules are Transfer's: another fingerprint is *ConflictError; a settled
// success is replayed (Accepted false); a stored rejection is its *RejectedError, replayed; an
// async item of the same request still queued, in_flight or in_doubt is Accepted again (nothing
// is sent again: its message, its holder or the sweep runs it); a synchronous request's item is
// *InProgressError or *InDoubtError, as a synchronous retry would be answered without waiting
// (only an async item is requeued rather than released when nothing moved, so only its
// acceptance is a promise the service keeps). A failed send is logged and the answer is
// still Accepted: the item is durable and the sweep sends it. A cancelled item of the same request
// is its *CancelledError (cancel.go), replayed. Errors: *UnavailableError
// (STORE_UNAVAILABLE, CONFIGURATION_INVALID) when nothing was claimed, or STORE_UNAVAILABLE saying
// the transfer may have been accepted when the claim's answer and the read back both failed.
func (o *Orchestrator) Enqueue(ctx context.Context, in Input) (Enqueued, error) {
	if o.Queue == nil {
		return Enqueued{}, errors.New("transfer: Enqueue without a Queue")
	}
	if err := o.settings().Validate(); err != nil {
		o.log().ErrorContext(ctx, "refusing the transfer: invalid configuration", "err", err)
		return Enqueued{}, misconfigured(err)
	}
	now := o.Clock.Now()
	fingerprint := in.Request.Fingerprint()
	rec := Record{
		StoreKey: StoreKey(in.Request.Wallet().Scope(), in.ClientKey), ClaimID: o.newClaimID(), Status: StatusQueued,
		Fingerprint: fingerprint, Request: in.Request, ClientKey: in.ClientKey, TraceID: in.TraceID,
		Version: 1, CreatedAt: now, UpdatedAt: now, Async: true, Charges: o.Limits.Charges(in.Request, now),
	}
	var (
		held Record
		won  bool
	)
	over, err := o.overLimit(ctx, rec.StoreKey, in.Request)
	switch {
	case err != nil:
		return Enqueued{}, err
	case over != nil:
		held = *over // the key's item answers, as for a claim lost to it
	default:
		held, won, err = o.Store.Claim(ctx, rec, now)
	}
	if limited := o.limited(err, now); limited != nil {
		return Enqueued{}, limited
	}
	if err != nil {
		var found claimReadBack
		switch held, won, found = o.readBackClaim(ctx, rec, now); found {
		case readBackHeld:
		case readBackFree:
			return Enqueued{}, storeUnavailable(err) // the claim did not apply: nothing was accepted
		default:
			// Unknown. Unlike a synchronous claim, which the sweep releases unsent, a queued one
			// that applied runs once the sweep finds it: "nothing was submitted" could be false.
			// Its message is sent anyway (for a claim that did not apply it names nothing and does
			// nothing), and the answer says what is known.
			o.sendQueued(ctx, rec, "sending a queued transfer of unknown claim failed; the sweep will send it if it applied")
			return Enqueued{}, &UnavailableError{Code: CodeStoreUnavailable, RetryAfter: time.Second, Err: err,
				Detail: "the idempotency store failed while accepting the transfer: it may have been accepted, and then it will run; retry with the same key to learn which (it never runs twice)"}
		}
	}
	if !won && held.ClaimID == rec.ClaimID && held.Status == StatusQueued {
		won = true // our own claim, its answer lost: a ClaimID is never reused
	}
	// Our own claim read back past queued (cancelled, taken, settled before the answer came) is
	// answered as any later call with the key is, below: never a 202 for a cancelled transfer.
	if won {
		if err := o.hook(ctx, StepQueued, rec); err != nil {
			return Enqueued{}, err
		}
		o.sendQueued(ctx, rec, "sending the queued transfer failed; the sweep will send it")
		return Enqueued{Accepted: true, View: View{Status: "pending"}}, nil
	}
	if held.Fingerprint != fingerprint {
		return Enqueued{}, &ConflictError{}
	}
	switch {
	case held.Status == StatusReplayable:
		return Enqueued{Outcome: replay(held)}, nil
	case held.Status == StatusRejected:
		return Enqueued{}, replayedRejection(held)
	case held.Status == StatusCancelled:
		return Enqueued{}, cancelledAnswer(held)
	case held.Async && (held.Status == StatusQueued || held.Status == StatusInFlight || held.Status == StatusInDoubt):
		return Enqueued{Accepted: true, View: View{Status: "pending", InDoubt: held.Status == StatusInDoubt}}, nil
	case held.Status == StatusInFlight:
		// A synchronous request holds the key: if it ends with nothing moved, its key is released
		// (not requeued), so a 202 would promise what nobody runs. Answered as a synchronous
		// retry that finds it: come back.
		return Enqueued{}, &InProgressError{RetryAfter: time.Second}
	case held.Status == StatusInDoubt:
		return Enqueued{}, &InDoubtError{FailingCode: failingCode(held), RetryAfter: o.settings().ProofWindow}
	}
	return Enqueued{}, fmt.Errorf("transfer: item %s has unknown status %q", held.StoreKey, held.Status)
}

// Delivery is what the submitter does with a message after RunQueued.
type Delivery string

const (
	// DeliveryDone: the transfer ran to an outcome written on the item (settled or in doubt);
	// acknowledge the message.
	DeliveryDone Delivery = "done"
	// DeliveryStale: the message names nothing to run (the key is free, holds another incarnation
	// or a settled, cancelled or in-doubt item); acknowledge it. An item of its incarnation that another
	// invocation holds under a live lease is DeliveryRetry instead, with the lease's remaining
	// time as its RetryAfter (*InProgressError).
	DeliveryStale Delivery = "stale"
	// DeliveryRetry: the item is queued again (nothing moved), another invocation holds it under
	// a live lease, it could not be read, or the run could not start (circuit open, invalid
	// configuration); deliver the message again after RetryAfter of the error (a batch item
	// failure whose visibility timeout the submitter shortens to a backoff; after maxReceiveCount SQS
	// moves it to the dead-letter queue; the sweep still finds the item).
	DeliveryRetry Delivery = "retry"
)

// RetryAfter is how long a message answered DeliveryRetry with err should wait before it is
// delivered again: the RetryAfter of err's Problem (errors.As a ProblemError) when it sets one
// (CHANNELS_BUSY: when a source should be free; SOROBAN_CIRCUIT_OPEN: until the circuit half-opens;
// TRANSFER_IN_PROGRESS: the live lease's remaining time; RPC_ERROR, TRANSACTION_EXPIRED: 1 s;
// CONFIGURATION_INVALID: 1 min), else DefaultLedgerInterval
// (5 s): a requeue with no error (the first send refused, the envelope proven dead) or one whose
// problem says nothing (STORE_UNAVAILABLE), for which a new ledger, or a store's brief outage,
// is the next chance. It is never below zero; the submitter clamps and backs it off by the
// message's receives (internal/queue, Backoff). README.md, "Asynchronous transfers".
func RetryAfter(err error) time.Duration {
	var p ProblemError
	if errors.As(err, &p) {
		if d := p.Problem().RetryAfter; d > 0 {
			return d
		}
	}
	return DefaultLedgerInterval
}

// takeAttempts bounds RunQueued's passes: each pass that loses a conditional write read an item
// that another writer changed meanwhile.
const takeAttempts = 3

// RunQueued runs the transfer that m names, with the same orchestration and proof as Transfer, if
// the key still holds m's incarnation: a queued item is taken (queued -> in_flight under this
// call's lease, conditional on the item as read) and built, sent and settled; an in_flight item
// whose lease expired is taken over (takeover.go); one whose lease is live is DeliveryRetry with
// an *InProgressError whose RetryAfter is the lease's remaining time (the message comes back when
// the holder is done); anything else is DeliveryStale. Where a
// synchronous call releases the key, the async item is requeued (Requeued) and the answer is
// DeliveryRetry. The error, when set, says why (for the log); the Delivery decides.
func (o *Orchestrator) RunQueued(ctx context.Context, m QueueMessage) (Delivery, error) {
	s := o.settings()
	if err := s.Validate(); err != nil {
		return DeliveryRetry, misconfigured(err)
	}
	if m.StoreKey == "" || m.ClaimID == "" {
		return DeliveryStale, errors.New("transfer: queue message without a store key or claim ID")
	}
	for range takeAttempts {
		rec, err := o.Store.Get(ctx, m.StoreKey)
		switch {
		case errors.Is(err, ErrNotFound):
			return DeliveryStale, nil
		case err != nil:
			return DeliveryRetry, storeUnreadable(err)
		case rec.ClaimID != m.ClaimID || !rec.Async || rec.Expired(o.Clock.Now()):
			return DeliveryStale, nil
		}
		now := o.Clock.Now()
		if _, held := rec.HeldFor(now); held {
			// Requeued for a failure on the service's side whose Retry-After has not passed
			// (RequeuedAfter): nothing is taken or built; the message comes back for the time
			// left, its RetryAfter (the submitter's Backoff never shortens it).
			return DeliveryRetry, HeldAnswer(rec, now)
		}
		switch {
		case rec.Status == StatusCancelled:
			// Cancelled before any submitter took it (cancel.go): nothing is taken, built or
			// sent, and the message is acknowledged (deleted).
			return DeliveryStale, nil
		case rec.Status == StatusQueued:
		case rec.Status == StatusInFlight && rec.LeaseExpired(now):
		case rec.Status == StatusInFlight:
			// Another invocation (a copy of this message, or a synchronous caller that took the
			// claim over) holds a live lease. The message is delivered again once the lease ends,
			// not acknowledged: SQS may have delivered one message twice, and acknowledging the
			// newest receipt deletes the message its holder still needs should it requeue the
			// item (the SQS API Reference, DeleteMessage). It then finds the item settled
			// (stale), queued again (it runs) or expired (taken over).
			return DeliveryRetry, &InProgressError{RetryAfter: rec.LeaseExpiresAt.Sub(now)}
		default:
			return DeliveryStale, nil
		}
		if open, left := o.Breaker.Open(); open {
			return DeliveryRetry, circuitOpen(left)
		}
		d, again, err := o.runTaken(ctx, rec)
		if !again {
			return d, err
		}
	}
	return DeliveryRetry, nil
}

// runTaken takes rec (queued, or in_flight with its lease expired) for this call and runs it.
// again means another writer changed the item first: read it again.
func (o *Orchestrator) runTaken(ctx context.Context, rec Record) (Delivery, bool, error) {
	if rec.Fingerprint != "" && rec.Request.Fingerprint() != rec.Fingerprint {
		// The item's request is not the one its claim fingerprinted: a reader that lost a field
		// (a build older than the field, during a rolling deploy) would pay another transfer
		// than the client asked for. Nothing is built; the message waits for a build that reads it.
		o.log().ErrorContext(ctx, "queued transfer: the stored request does not match its fingerprint; nothing built",
			"storeKey", rec.StoreKey, "claimId", rec.ClaimID)
		return DeliveryRetry, false, &UnavailableError{Code: CodeConfigurationInvalid, RetryAfter: time.Minute,
			Detail: "the stored request does not match its fingerprint; nothing was submitted"}
	}
	start := time.Now()
	in := Input{ClientKey: rec.ClientKey, Request: rec.Request, TraceID: rec.TraceID}
	a := o.begin(ctx, in)
	a.key = rec.StoreKey
	var cancel context.CancelFunc
	a.net, cancel = ctx, func() {}
	if dl, ok := ctx.Deadline(); ok {
		a.net, cancel = context.WithDeadline(ctx, dl.Add(-a.settings.DeadlineMargin))
	}
	defer cancel()
	var out Outcome
	var again bool
	var err error
	if rec.Status == StatusQueued {
		next := a.taken(rec, o.Clock.Now())
		if werr := ReplaceItem(ctx, o.Store, rec, next); werr != nil {
			if isConflict(werr) {
				return "", true, nil
			}
			return DeliveryRetry, false, storeUnavailable(werr)
		}
		out, _, err = o.execute(ctx, a, next)
	} else {
		out, again, err = o.takeOver(ctx, a, rec)
		if again && err == nil && a.freed == "" {
			return "", true, nil // another caller took it over first
		}
	}
	r := report(in.Request.OperationType, out, err, time.Since(start))
	r.Lookups, r.Probes = a.lookups, a.probes
	o.observer().Finished(ctx, r)
	// What the run left decides: an item queued again (nothing moved) is delivered again.
	cur, gerr := o.Store.Get(ctx, rec.StoreKey)
	switch {
	case gerr != nil && !errors.Is(gerr, ErrNotFound):
		return DeliveryRetry, false, storeUnavailable(gerr)
	case gerr == nil && cur.ClaimID == rec.ClaimID && cur.Status == StatusQueued:
		return DeliveryRetry, false, err
	}
	return DeliveryDone, false, err
}

// Requeued is rec, an async item for which nothing can land (never sent, refused before inclusion,
// proven dead, or included FAILED on the service's side: doc.go, "Proof rules"), queued again for the submitter: the same incarnation
// (ClaimID), the next Version, status queued, no lease, no envelope (nor batch reference), no
// result, no TTL. It takes the place of the release (delete) of a synchronous item, so the
// accepted transfer is never dropped; a new envelope is built for it only by the next run, as
// after a release.
func Requeued(rec Record, now time.Time) Record {
	next := rec
	next.Status = StatusQueued
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Envelope, next.Result = nil, nil
	next.Batch = nil
	next.ExpiresAt = 0
	next.NotBefore = 0
	next.Version++
	next.UpdatedAt = now
	return next
}

// RequeuedAfter is Requeued(rec, now), held back when why, the answer the requeue's caller gets,
// pages (VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED or SERVICE_SIDE_FAILURE: underfundedCode): its
// NotBefore is now plus why's Retry-After, rounded down to the whole second, and its Result why's
// Code and Detail, which HeldAnswer answers until then. Rounded down, so that a message held back
// exactly that Retry-After after the write (SendRequeued's delay, the submitter's Backoff of its
// answer) finds the hold passed rather than being put back for a fraction of a second, a receive
// that would bring the dead-letter queue nearer. Any other why (nil included) is Requeued:
// proven dead, never sent or refused for a reason of its own, a new envelope may land now.
func RequeuedAfter(rec Record, now time.Time, why error) Record {
	next := Requeued(rec, now)
	code := underfundedCode(why)
	if code == "" {
		return next
	}
	u, _ := errors.AsType[*UnavailableError](why)
	wait := max(u.RetryAfter, time.Second)
	next.NotBefore = now.Add(wait).Unix()
	next.Result = &Result{Code: code, Detail: u.Detail}
	return next
}

// HeldAnswer is the answer to a call that meets rec, a queued item held back at now (HeldFor): the
// failure its requeue stored (Result: 503 VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED or
// SERVICE_SIDE_FAILURE), a replay of it, with the time left as its Retry-After. Nothing was built:
// a new envelope before then would meet the same cause (RequeuedAfter). A synchronous call answers
// it rather than wait on an item nobody runs before then; RunQueued returns it with DeliveryRetry.
func HeldAnswer(rec Record, now time.Time) *UnavailableError {
	left, _ := rec.HeldFor(now)
	u := underfunded(CodeServiceSideFailure, "the transfer failed on the service's side and is held back until an operator can act (the service is paged); nothing moved: retry with the same key after the Retry-After")
	if r := rec.Result; r != nil && r.Code != "" {
		// The stored failure says what its run did; an earlier run of the same transfer may have
		// sent an envelope that ended without moving the funds, so "nothing was submitted" is
		// answered as what is true of every held item: nothing moved (afterProvenDead).
		u.Code, u.Detail = r.Code, strings.Replace(r.Detail, nothingSubmitted, "nothing moved", 1)
	}
	u.RetryAfter = max(left, time.Second)
	return u
}

// free ends rec once nothing can land for it: a synchronous item is deleted (the key is free), an
// async one requeued (Requeued). Both are conditional on rec as read.
//
// A synchronous item's limit charges are given back at once (giveBackFreed): its caller may retry
// the key within a second, before the stream's give-back lands.
func (o *Orchestrator) free(ctx context.Context, rec Record) error {
	_, err := o.freeFor(ctx, rec, nil)
	return err
}

// freeFor is free for a caller answered why: an async item is requeued held back when why pages
// (RequeuedAfter). It returns the requeued item as written (zero for a deletion).
func (o *Orchestrator) freeFor(ctx context.Context, rec Record, why error) (Record, error) {
	if !rec.Async {
		if err := DeleteItem(ctx, o.Store, rec); err != nil {
			return Record{}, err
		}
		o.giveBackFreed(ctx, rec)
		return Record{}, nil
	}
	next := RequeuedAfter(rec, o.Clock.Now(), why)
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		return Record{}, err
	}
	return next, nil
}

// giveBackFreed gives back the charges of rec, a claim this call deleted with nothing moved, when
// the store keeps the counters (Counters): once per claim, so the stream's give-back of the same
// deletion (internal/alert, GiveBackOf) then changes nothing. A failure is logged; the stream's
// give-back still comes.
func (o *Orchestrator) giveBackFreed(ctx context.Context, rec Record) {
	c, ok := o.Store.(Counters)
	if !ok || len(rec.Charges) == 0 {
		return
	}
	if err := c.GiveBack(context.WithoutCancel(ctx), rec.ClaimID, rec.Charges); err != nil {
		o.log().WarnContext(ctx, "giving back a freed claim's limit charges failed; the stream gives them back",
			"storeKey", rec.StoreKey, "claimId", rec.ClaimID, "err", err)
	}
}

// rejectQueued settles rec, an async item whose request Ledger.Prepare refused as the client's
// mistake (a *ValidationError: an operation, wallet or asset this deployment does not serve,
// perhaps since the 202, as when an asset leaves ASSETS), as rejected with that problem: nothing
// was built or sent, and no later run can change the answer. A synchronous call answers the same
// 4xx and frees its key; an async item freed would be requeued and refused again for ever, its
// GET pending, its message dead-lettered and sent again by every sweep. Rejected, its GET answers
// "error" with the problem, a repeat of the request replays it, and the key is free once its TTL
// ends, as for any stored rejection. If the write fails the item stays in_flight under this call's
// lease; once it expires the sweep requeues it and the next run refuses it again. It returns
// refusal, the answer of this call.
func (o *Orchestrator) rejectQueued(ctx context.Context, a *attempt, rec Record, refusal *ValidationError) error {
	now := o.Clock.Now()
	next := rec
	next.Status = StatusRejected
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Envelope = nil
	next.Result = &Result{Code: refusal.Code, Detail: refusal.Detail} // no HTTPStatus: Result.HTTPStatus says why
	next.ExpiresAt = now.Add(a.settings.KeyTTL).Unix()
	next.Version++
	next.UpdatedAt = now
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		o.log().WarnContext(ctx, "storing the refusal of a queued transfer failed; its lease will expire and it will be refused again",
			"storeKey", rec.StoreKey, "code", refusal.Code, "err", err)
	}
	return refusal
}

// sendQueued sends the message that runs the queued item rec (its store key and claim ID). A
// failed send is logged as failed and left to the sweep, which sends a queued item's message
// again after its grace; a nil Queue sends nothing.
func (o *Orchestrator) sendQueued(ctx context.Context, rec Record, failed string) {
	if o.Queue == nil {
		return
	}
	if err := o.Queue.Send(ctx, QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}); err != nil {
		o.log().WarnContext(ctx, failed, "storeKey", rec.StoreKey, "err", err)
	}
}

// DelayQueue is a Queue that can hold a message back before its first delivery: SendAfter
// delivers m no sooner than delay from now (SQS's DelaySeconds, whole seconds, at most 15 minutes:
// the SQS API Reference, SendMessage). SendRequeued needs it for a requeue that must wait.
type DelayQueue interface {
	Queue
	SendAfter(ctx context.Context, m QueueMessage, delay time.Duration) error
}

// ErrCannotDelay is SendRequeued's error when a message must wait (RequeueDelay above zero) and
// the queue is not a DelayQueue: nothing was sent, and the sweep sends the queued item once its
// grace (10 minutes, longer than any RequeueDelay) has passed.
var ErrCannotDelay = errors.New("transfer: the queue cannot hold a message back; the sweep will send it")

// RequeueDelay is how long the message of s, a Settlement that queued an async item again
// (ResolvedRequeued), waits before it is delivered: when the ledger included the item's envelope
// FAILED on the service's side (s.Shortfall), that failure's Retry-After (RetryAfter of its
// answer, shortfallAnswer: a minute), which is what RunQueued's own requeue of the same failure
// waits (the submitter's Backoff on a first receive; README.md, "Asynchronous transfers"): a new
// envelope at once would meet the same cause, another FAILED inclusion and another fee, while an
// operator has been paged to act. Else 0: proven dead or never sent, a new envelope can land now.
func RequeueDelay(s Settlement) time.Duration {
	if s.Resolution != ResolvedRequeued || s.Shortfall == "" {
		return 0
	}
	lk := Lookup{}
	if s.Lookup != nil {
		lk = *s.Lookup
	}
	return RetryAfter(shortfallAnswer(s.Shortfall, lk))
}

// SendRequeued sends the message of s.Record, the async item Settle queued again
// (ResolvedRequeued), on q after RequeueDelay(s): at once (Send) when it is zero, else held back
// (DelayQueue.SendAfter). Errors: ErrCannotDelay when it must wait and q is not a DelayQueue
// (nothing sent); the queue's own. A message not sent loses nothing: the sweep sends a queued
// item's message again once it is older than its grace.
func SendRequeued(ctx context.Context, q Queue, s Settlement) error {
	m := QueueMessage{StoreKey: s.Record.StoreKey, ClaimID: s.Record.ClaimID}
	d := RequeueDelay(s)
	if d <= 0 {
		return q.Send(ctx, m)
	}
	dq, ok := q.(DelayQueue)
	if !ok {
		return ErrCannotDelay
	}
	return dq.SendAfter(ctx, m, d)
}

// taken is rec, a queued item, as this attempt takes it: in_flight under the attempt's lease, the
// next version, updated at now. Written conditional on rec as read (ReplaceItem), by RunQueued
// and by a batch's take of each of its keys.
func (a *attempt) taken(rec Record, now time.Time) Record {
	next := rec
	next.Status = StatusInFlight
	next.LeaseOwner, next.LeaseExpiresAt = a.owner, a.lease
	next.NotBefore, next.Result = 0, nil // taken only once it is no longer held back (RunQueued)
	next.Version++
	next.UpdatedAt = now
	return next
}
