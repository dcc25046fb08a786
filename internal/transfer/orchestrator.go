package transfer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Input is one call to Transfer: a canonical request under a validated client key.
type Input struct {
	ClientKey string
	Request   Request
	// TraceID is recorded on the item for operators (X-Ray or request trace ID); may be empty.
	TraceID string
}

// Outcome is a successful transfer: the landed transaction and whether this call replayed it.
type Outcome struct {
	// TransactionHash is the hex hash of the landed transaction (the inner hash when fee-bumped).
	TransactionHash string
	// Ledger is the sequence of the ledger that included it.
	Ledger uint32
	// OperationIndex is the 0-based index of the key's operation in that transaction when a
	// batch's transaction paid it (OperationIndexOf); nil for a transfer paid alone.
	OperationIndex *int
	Replayed       bool
}

// Step names a point in Transfer where Hooks is called.
type Step string

const (
	StepClaimed  Step = "claimed"  // the key is claimed (or taken over), nothing built yet
	StepPrepared Step = "prepared" // the envelope is built and signed, not yet written
	StepAttached Step = "attached" // the envelope is on the item, not yet sent
	StepSent     Step = "sent"     // a send returned (whatever it answered)
	StepSettling Step = "settling" // the outcome is known, about to be written
)

// Orchestrator runs transfers at most once per (wallet, idempotency key): doc.go, "Proof rules"
// and "The flow of one transfer". Store, Ledger and Clock are required; the rest have defaults.
type Orchestrator struct {
	Store  Store
	Ledger Ledger
	Clock  Clock
	// Settings is called once per Transfer; nil means DefaultSettings.
	Settings func() Settings
	Logger   *slog.Logger
	// Breaker fails fast while the network is failing; nil disables it.
	Breaker *Breaker
	// NewOwner returns a unique lease owner ID per call; nil uses 16 random bytes in hex.
	NewOwner func() string
	// NewClaimID returns a fresh incarnation ID per claim; nil uses NewClaimID. Tests may make it
	// deterministic but must never let it repeat.
	NewClaimID func() string
	// Hooks, when set, is called at each Step; a non-nil error abandons the call on the spot, as a
	// crash would (nothing released, nothing settled). Tests use it.
	Hooks func(ctx context.Context, step Step, rec Record) error
	// Observer receives traces and a Report per call; nil means none.
	Observer Observer
	// Queue sends the messages of async transfers (Enqueue, queued.go); nil: Enqueue refuses.
	Queue Queue
	// Cadence is the ledger's rhythm as this process has seen it, shared by every call so that
	// each await starts from what the others learnt (await.go); nil means a fresh one per call.
	Cadence *Cadence
	// WalletHistory lists a wallet's items for History; nil answers History with an error (500).
	WalletHistory HistoryStore
	// Archives reads the lasting records (archive.go) for View once the live item is gone; nil:
	// View answers not found then, as it did before the records existed.
	Archives ArchiveStore
	// Admission, when set, is asked before the claim whether a transaction source will be free
	// in time (admit); nil: every call claims first and Prepare decides.
	Admission Admission
	// Limits are the per-asset limits (limits.go); nil: none.
	Limits Limits
	// Batches builds batches' transactions (RunQueuedBatch); nil, or a Store that is not a
	// BatchStore, or Settings.BatchSize of 1 or less: every queued transfer runs alone.
	Batches BatchLedger
	// Serial makes RunQueuedBatch run its messages and batches one after the other on the
	// calling goroutine (the model checker, whose actors are one goroutine each); false runs
	// them concurrently, as the submitter runs its messages.
	Serial bool
	// Parallel runs every f at once, each on a goroutine of its own, and returns once all have
	// returned: how RunQueuedBatch starts its messages and batches, and a batch its per-key takes
	// and writes, unless Serial. No f panics (each recovers its own). nil: a goroutine each and a
	// sync.WaitGroup. Under virtual time (internal/vclock) it is the clock's Parallel, which counts
	// them as participants in the caller's stead, so that time moves only when each of them sleeps.
	Parallel func(fs ...func())
}

// Pauses between passes of the claim loop after an envelope was proven dead: short first, then
// about a ledger (a busy source account refuses until a ledger has closed).
const (
	firstPoll = 500 * time.Millisecond
	maxPoll   = 2 * time.Second
)

// attempt is the state of one Transfer call.
type attempt struct {
	in       Input
	key      string
	owner    string
	settings Settings
	deadline time.Time // end of the submission budget
	// freed is the ClaimID of this call's last claim (or taken-over claim) whose envelope was
	// proven dead and released; if the release failed, the next pass finds that item, still under
	// this call's lease owner, and releases it again.
	freed string
	// provenDead is set once an envelope this call sent (or found on a key it took over, or on
	// this request's in-doubt item it reconciled inline) was proven dead and its key released: from then on "nothing was submitted" is no longer true of
	// the key, though nothing moved (afterProvenDead).
	provenDead bool
	lease      time.Time // when another invocation may take the claim over
	// net carries the Stellar calls: it ends DeadlineMargin before the invocation's deadline, so
	// a hung send or lookup cannot eat the time kept for the final writes.
	net context.Context
	// lookups and probes count the reads made while awaiting ledgers (Report).
	lookups, probes int
}

// Transfer runs in.Request at most once under (wallet, in.ClientKey) and returns its outcome.
// Errors are this package's typed errors (errors.As with ProblemError): *ConflictError,
// *InDoubtError, *InProgressError, *UnavailableError, *RejectedError, *LimitError (a limit refused
// it before anything was claimed: doc.go, "Limits"); anything else is an internal failure in which
// nothing was sent.
func (o *Orchestrator) Transfer(ctx context.Context, in Input) (Outcome, error) {
	start := time.Now()
	a := o.begin(ctx, in)
	out, err := o.transfer(ctx, a)
	// Every answer, not only a failed Prepare: a claim, a release or a send that fails after an
	// envelope of this transfer was proven dead would otherwise still say "nothing was submitted".
	err = afterProvenDead(a, err)
	r := report(in.Request.OperationType, out, err, time.Since(start))
	r.Lookups, r.Probes = a.lookups, a.probes
	o.observer().Finished(ctx, r)
	return out, err
}

func (o *Orchestrator) transfer(ctx context.Context, a *attempt) (Outcome, error) {
	in := a.in
	if err := a.settings.Validate(); err != nil {
		o.log().ErrorContext(ctx, "refusing the transfer: invalid configuration", "err", err)
		return Outcome{}, misconfigured(err)
	}
	var cancel context.CancelFunc
	a.net, cancel = ctx, func() {}
	if dl, ok := ctx.Deadline(); ok {
		a.net, cancel = context.WithDeadline(ctx, dl.Add(-a.settings.DeadlineMargin))
	}
	defer cancel()
	if open, left := o.Breaker.Open(); open {
		return Outcome{}, circuitOpen(left)
	}
	fingerprint := in.Request.Fingerprint()
	over, err := o.overLimit(ctx, a.key, in.Request)
	if err != nil {
		return Outcome{}, err
	}
	pre, busy := over, error(nil)
	if pre == nil {
		pre, busy = o.admit(ctx, a)
	}
	if o.Admission != nil {
		defer o.Admission.Release(a.net)
	}
	if busy != nil {
		return Outcome{}, busy
	}
	backoff := firstPoll
	var lastRefusal error // why the last envelope of this call was proven dead
	// Each pass claims the key or acts on the item holding it. A pass ends the call, or frees the
	// key (an envelope proven dead) or waits for it to change, so the loop is bounded by the budget.
	for pass := 0; ; pass++ {
		now := o.Clock.Now()
		if pass > 0 && !o.budgetLeft(a) {
			// Too little budget is left for a new envelope to land or be proven dead in time; what
			// another call settled meanwhile is still answered as it stands.
			return o.outOfBudget(ctx, a, fingerprint, lastRefusal)
		}
		rec := Record{
			StoreKey: a.key, ClaimID: o.newClaimID(), Status: StatusInFlight, Fingerprint: fingerprint, Request: in.Request,
			ClientKey: in.ClientKey, TraceID: in.TraceID, LeaseOwner: a.owner, LeaseExpiresAt: a.lease,
			Version: 1, CreatedAt: now, UpdatedAt: now, Charges: o.Limits.Charges(in.Request, now),
		}
		var (
			held Record
			won  bool
			err  error
		)
		if pre == nil && pass > 0 {
			// A request above a limit that a pass of this call found on its key's item (accepted
			// before the limit was lowered) and that left it (released) is refused now, as a new
			// request would be, rather than claimed afresh.
			over, err := o.overLimit(ctx, a.key, in.Request)
			if err != nil {
				return Outcome{}, err
			}
			pre = over
		}
		if pre != nil {
			// The admission found no source free in time and the key held this item: it is
			// answered as a claim that lost to it would be (replay, rejection, in doubt, wait
			// for its holder, take-over, conflict), with no claim written.
			held, pre = *pre, nil
		} else {
			cctx, end := o.observer().StartStep(ctx, TraceClaim)
			held, won, err = o.Store.Claim(cctx, rec, now)
			end(err)
		}
		if limited := o.limited(err, now); limited != nil {
			return Outcome{}, limited
		}
		if err != nil {
			var found claimReadBack
			switch held, won, found = o.readBackClaim(ctx, rec, now); found {
			case readBackHeld:
			case readBackFree:
				return Outcome{}, storeUnavailable(err)
			default:
				// A claim of ours that applied holds no envelope, but the key may hold this
				// request's transfer, landed, accepted or in doubt (its answer lost to the client).
				return Outcome{}, storeUnavailableUnknown(err)
			}
		}
		if !won && held.ClaimID == rec.ClaimID && held.LeaseOwner == rec.LeaseOwner {
			// Our own claim: the write applied, its answer was lost and the SDK's retry failed its
			// condition against our item. A ClaimID is never reused, so this is the claim we made.
			rec, won = held, true
		}
		if won {
			out, freed, err := o.execute(ctx, a, rec)
			if freed {
				a.freed = rec.ClaimID
				a.provenDead = true
			}
			lastRefusal = err
			if freed && (sourceBusy(err) || isUnderfunded(err)) {
				// A busy source (CHANNELS_BUSY) is answered at once: it stays busy for about a
				// ledger, and the caller is told when to come back, with its key free. So is an
				// account that cannot pay (VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED) or a failure
				// on the service's side (SERVICE_SIDE_FAILURE): a new envelope would fail the same
				// way until an operator acts.
				return out, o.freeOwnLeftover(ctx, a, err)
			}
			if freed && o.budgetLeft(a) && o.sleep(ctx, a, backoff) == nil {
				// The envelope is proven dead: a new one may be built, after a pause that grows
				// (a busy source account refuses until a ledger has closed).
				if backoff *= 2; backoff > maxPoll*2 {
					backoff = maxPoll * 2
				}
				continue
			}
			return out, err
		}
		if held.ClaimID != "" && held.ClaimID == a.freed && held.LeaseOwner == a.owner {
			// Our own earlier claim, whose envelope this call proved dead, still holds the key: its
			// release failed. Release it again rather than wait on ourselves.
			if err := o.free(ctx, held); err != nil {
				return Outcome{}, storeUnavailable(err)
			}
			continue
		}
		if held.Status == StatusQueued && held.ClaimID != "" && held.ClaimID == a.freed {
			// An async item this call took over and queued again once nothing could land: its own
			// message, which found this call's live lease, comes back only once that lease ends
			// (RunQueued), or never if it was dead-lettered meanwhile: send it again, once, so
			// that the item runs now rather than after the lease or the sweep's grace.
			a.freed = ""
			o.sendQueued(ctx, held, "sending the requeued transfer failed; the sweep will send it")
		}
		if held.Fingerprint != fingerprint {
			return Outcome{}, &ConflictError{}
		}
		out, again, err := o.onHeld(ctx, a, held)
		if !again {
			return out, err
		}
	}
}

// admit asks o.Admission, before the first claim, whether Prepare would find a transaction source
// within its wait. When it would not, the key is read (one consistent GetItem) instead of claimed
// and released: a free key (no item, or only an expired one, which a claim would replace) is
// answered busy, the Admission's CHANNELS_BUSY with its Retry-After, nothing written; an item on
// the key is returned as pre, which the first pass answers as a lost claim would be, so a replay
// is answered from its item whether or not channels are free. A read that fails decides nothing:
// the call claims as it would without the admission, and Prepare answers busy after the claim.
// Without an Admission, or when it finds a source or cannot tell, both are nil.
func (o *Orchestrator) admit(ctx context.Context, a *attempt) (pre *Record, busy error) {
	if o.Admission == nil {
		return nil, nil
	}
	actx, err := o.Admission.Admit(a.net, a.in.Request, o.maxTime(a))
	if err == nil && actx != nil {
		// It carries what the admission set aside for this call (a calendar slot) to Prepare.
		a.net = actx
	}
	if !sourceBusy(err) {
		return nil, nil
	}
	cur, gerr := o.Store.Get(ctx, a.key)
	switch {
	case errors.Is(gerr, ErrNotFound) || gerr == nil && cur.Expired(o.Clock.Now()):
		return nil, err
	case gerr == nil:
		return &cur, nil
	}
	return nil, nil
}

// overLimit refuses a request above a limit of its asset that no day can pass (Limits.CheckAmount)
// before anything is written, unless its key already holds an item: a request accepted before
// the limit was lowered is answered from its item (a replay, a conflict, a wait) as any retry of
// its key, so a key never changes its answer. That costs one consistent read, only for a request
// the limit refuses. It returns that item as pre (answered as a lost claim), or the refusal.
func (o *Orchestrator) overLimit(ctx context.Context, key string, req Request) (pre *Record, err error) {
	refusal := o.Limits.CheckAmount(req)
	if refusal == nil {
		return nil, nil
	}
	cur, gerr := o.Store.Get(ctx, key)
	switch {
	case gerr == nil && !cur.Expired(o.Clock.Now()):
		return &cur, nil
	case gerr == nil || errors.Is(gerr, ErrNotFound):
		return nil, refusal
	}
	return nil, storeUnavailable(gerr)
}

// limited is the answer to a claim the store refused because one of its charges did not fit
// under its daily cap (*LimitError, DAILY_LIMIT_EXCEEDED): nothing was claimed, and the client may
// come back when the counter's day ends. nil for any other outcome.
func (o *Orchestrator) limited(err error, now time.Time) *LimitError {
	le, ok := errors.AsType[*LimitError](err)
	if !ok || le.Code != CodeDailyLimitExceeded {
		return nil
	}
	out := *le
	out.RetryAfter = max(out.Charge.Frees().Sub(now), time.Second)
	return &out
}

// claimReadBack is what a claim whose conditional write failed learns by reading its key back.
type claimReadBack int

const (
	// readBackHeld: the key holds an item, answered as a claim that lost its condition would be
	// (replay, rejection, in doubt, coalesce, 202, conflict), or our own claim, whose write
	// applied with its answer lost; "nothing was submitted" would be false whenever the item is
	// this request's, accepted, sent or settled.
	readBackHeld claimReadBack = iota
	// readBackFree: the key is free, or holds only an expired item the claim would have
	// replaced: the claim did not apply and nothing runs under the key.
	readBackFree
	// readBackUnknown: the read failed too.
	readBackUnknown
)

// readBackClaim reads rec's key after its claim failed: the write may have applied with its answer
// lost (and the SDK's retries failed their condition against it). won reports our own claim (a
// ClaimID is never reused).
func (o *Orchestrator) readBackClaim(ctx context.Context, rec Record, now time.Time) (held Record, won bool, found claimReadBack) {
	cur, err := o.Store.Get(ctx, rec.StoreKey)
	switch {
	case err == nil && cur.ClaimID == rec.ClaimID:
		return cur, true, readBackHeld
	case err == nil && !cur.Expired(now):
		return cur, false, readBackHeld
	case err == nil || errors.Is(err, ErrNotFound):
		return Record{}, false, readBackFree
	}
	return Record{}, false, readBackUnknown
}

// freeOwnLeftover makes sure the key is free before busy (an answer that says nothing was sent:
// CHANNELS_BUSY, or a failed Prepare) is returned: if the release of this call's claim
// (attempt.freed) failed, its item, still under this call's lease, would make the client's retry
// wait on it as on another request. It deletes that item again; if it cannot, the answer is
// STORE_UNAVAILABLE (the retry finds the claim, its envelope never sent or refused, and takes it
// over once its lease ends).
func (o *Orchestrator) freeOwnLeftover(ctx context.Context, a *attempt, busy error) error {
	cur, err := o.Store.Get(ctx, a.key)
	if errors.Is(err, ErrNotFound) || err == nil && (cur.ClaimID != a.freed || cur.LeaseOwner != a.owner) {
		return busy
	}
	if err == nil {
		_, err = o.freeFor(ctx, cur, busy)
	}
	if err != nil {
		return storeUnavailable(err)
	}
	return busy
}

// outOfBudget is the answer of a call with too little budget left to build an envelope: the
// stored outcome if the key now holds a settled or in-doubt item of this request, else
// TRANSFER_IN_PROGRESS if it holds another call's in_flight or queued item of this request (its
// envelope may land), else the last refusal this call met, else a retryable TRANSACTION_EXPIRED
// if the key is free (nothing runs under it), else TRANSFER_IN_PROGRESS (another call holds the
// key).
func (o *Orchestrator) outOfBudget(ctx context.Context, a *attempt, fingerprint string, lastRefusal error) (Outcome, error) {
	cur, err := o.Store.Get(ctx, a.key)
	if err == nil && cur.Fingerprint == fingerprint && !cur.Expired(o.Clock.Now()) {
		switch cur.Status {
		case StatusReplayable:
			return replay(cur), nil
		case StatusRejected:
			return Outcome{}, replayedRejection(cur)
		case StatusCancelled:
			return Outcome{}, cancelledAnswer(cur)
		case StatusInDoubt:
			return Outcome{}, o.inDoubtAnswer(a, cur)
		}
	}
	if _, held := cur.HeldFor(o.Clock.Now()); err == nil && cur.Fingerprint == fingerprint && held {
		return Outcome{}, HeldAnswer(cur, o.Clock.Now())
	}
	if err == nil && cur.Fingerprint == fingerprint && !cur.Expired(o.Clock.Now()) &&
		(cur.Status == StatusInFlight || cur.Status == StatusQueued) && (cur.ClaimID != a.freed || cur.LeaseOwner != a.owner) {
		// Another call of this request holds the key (live, or its lease ended with its envelope
		// still able to land): this call's last refusal, "nothing moved", is no longer true of
		// the transfer. A retry with the same key waits on it or takes it over.
		return Outcome{}, &InProgressError{RetryAfter: time.Second}
	}
	if lastRefusal != nil {
		return Outcome{}, lastRefusal
	}
	if errors.Is(err, ErrNotFound) {
		// The key is free: the attempt this call met was released with nothing moved (its
		// envelope proven dead or refused, or included FAILED where the ledger could not be read
		// to say so: heldShortfall) and no request runs under it.
		return Outcome{}, &UnavailableError{Code: CodeTransactionExpired, RetryAfter: time.Second,
			Detail: "the earlier attempt under this key was released with nothing moved and too little of this call's time is left to build another: retry with the same key"}
	}
	return Outcome{}, &InProgressError{RetryAfter: time.Second}
}

// onHeld acts on an item that another call holds. again means the key may have been freed or
// changed and the caller should claim again.
func (o *Orchestrator) onHeld(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	switch held.Status {
	case StatusReplayable:
		return replay(held), false, nil
	case StatusRejected:
		return Outcome{}, false, replayedRejection(held)
	case StatusCancelled:
		return Outcome{}, false, cancelledAnswer(held)
	case StatusInDoubt:
		return o.reconcileInline(ctx, a, held)
	case StatusInFlight:
		if held.LeaseExpired(o.Clock.Now()) {
			return o.takeOver(ctx, a, held)
		}
		return o.coalesce(ctx, a, held)
	case StatusQueued:
		if _, ok := held.HeldFor(o.Clock.Now()); ok {
			// Requeued for a failure on the service's side, and held back for its Retry-After:
			// nothing runs it before then, so waiting would only spend this call's budget, and a
			// synchronous call never takes a queued item. Its stored failure is answered, with
			// the time left (RequeuedAfter).
			return Outcome{}, false, HeldAnswer(held, o.Clock.Now())
		}
		// An async transfer of the same request: the submitter (or the sweep) runs it; wait for
		// it as for another call's claim.
		return o.coalesce(ctx, a, held)
	default:
		return Outcome{}, false, fmt.Errorf("transfer: item %s has unknown status %q", held.StoreKey, held.Status)
	}
}

// begin computes the call's budget: min(Timeout, the invocation deadline - margin), on the
// orchestrator's clock.
func (o *Orchestrator) begin(ctx context.Context, in Input) *attempt {
	s := o.settings()
	now := o.Clock.Now()
	budget := s.Timeout
	lease := now.Add(s.Timeout + s.DeadlineMargin)
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		if left-s.DeadlineMargin < budget {
			budget = left - s.DeadlineMargin
		}
		lease = now.Add(left)
	}
	if budget < 0 {
		budget = 0
	}
	owner := ""
	if o.NewOwner != nil {
		owner = o.NewOwner()
	} else {
		owner = randomID()
	}
	return &attempt{
		in: in, key: StoreKey(in.Request.Wallet().Scope(), in.ClientKey), owner: owner, settings: s,
		deadline: now.Add(budget), lease: lease,
	}
}

// budgetLeft reports whether enough budget is left to build a new envelope that the network
// accepts (maxTime at least MinValidity away) and that, failing to land, is proven dead before the
// budget ends (ProofWindow after maxTime).
func (o *Orchestrator) budgetLeft(a *attempt) bool {
	return a.deadline.Sub(o.Clock.Now()) >= a.settings.MinValidity+a.settings.ProofWindow
}

// maxTime is the envelope's timebounds maxTime: ProofWindow before the end of the budget, so that
// an envelope still pending then is proven dead by a ledger that closes before the budget ends;
// never less than MinValidity from now, so that stellar-core never refuses it as too late (the
// first pass of a call with a short budget then ends in doubt rather than be refused).
func (o *Orchestrator) maxTime(a *attempt) time.Time {
	now := o.Clock.Now()
	t := a.deadline.Add(-a.settings.ProofWindow)
	if least := now.Add(a.settings.MinValidity); t.Before(least) {
		t = least
	}
	return t
}

// sleep waits d, or less if the budget ends sooner; it fails once the budget is spent.
func (o *Orchestrator) sleep(ctx context.Context, a *attempt, d time.Duration) error {
	left := a.deadline.Sub(o.Clock.Now())
	if left <= 0 {
		return context.DeadlineExceeded
	}
	if d > left {
		d = left
	}
	return o.Clock.Sleep(ctx, d)
}

func (o *Orchestrator) newClaimID() string {
	if o.NewClaimID != nil {
		return o.NewClaimID()
	}
	return NewClaimID()
}

func (o *Orchestrator) hook(ctx context.Context, step Step, rec Record) error {
	if o.Hooks == nil {
		return nil
	}
	return o.Hooks(ctx, step, rec)
}

func (o *Orchestrator) observer() Observer {
	if o.Observer != nil {
		return o.Observer
	}
	return noObserver{}
}

func (o *Orchestrator) log() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}
