package transfer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
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
	Ledger   uint32
	Replayed bool
}

// View is what GET /wallets/{wallet}/transfers/{key} shows: seed 003's three statuses.
type View struct {
	// Status is "pending" (in flight or in doubt), "success" or "error".
	Status          string
	TransactionHash string
	Ledger          uint32
	// InDoubt is true while the outcome is unknown and awaits reconciliation.
	InDoubt bool
	// Problem describes a stored rejection (Status "error").
	Problem *Problem
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

// Orchestrator runs transfers at most once per (wallet, idempotency key): DESIGN.md sections 1
// and 4. Store, Ledger and Clock are required; the rest have defaults.
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
}

// Poll intervals while awaiting a ledger or another invocation: short first, then about a ledger.
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
	// freed is the ClaimID of this call's last claim whose envelope was proven dead and released;
	// if the release failed, the next pass finds that item and releases it again.
	freed string
	lease time.Time // when another invocation may take the claim over
	// net carries the Stellar calls: it ends DeadlineMargin before the invocation's deadline, so
	// a hung send or lookup cannot eat the time kept for the final writes.
	net context.Context
}

// Transfer runs in.Request at most once under (wallet, in.ClientKey) and returns its outcome.
// Errors are this package's typed errors (errors.As with ProblemError): *ConflictError,
// *InDoubtError, *InProgressError, *UnavailableError, *RejectedError; anything else is an
// internal failure in which nothing was sent.
func (o *Orchestrator) Transfer(ctx context.Context, in Input) (Outcome, error) {
	start := time.Now()
	out, err := o.transfer(ctx, in)
	o.observer().Finished(ctx, report(in.Request.OperationType, out, err, time.Since(start)))
	return out, err
}

func (o *Orchestrator) transfer(ctx context.Context, in Input) (Outcome, error) {
	a := o.begin(ctx, in)
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
	backoff := firstPoll
	var lastRefusal error // why the last envelope of this call was proven dead
	// Each pass claims the key or acts on the item holding it. A pass ends the call, or frees the
	// key (an envelope proven dead) or waits for it to change, so the loop is bounded by the budget.
	for pass := 0; ; pass++ {
		now := o.Clock.Now()
		if pass > 0 && !o.budgetLeft(a) {
			// Too little budget is left for a new envelope to land or be proven dead in time.
			if lastRefusal != nil {
				return Outcome{}, lastRefusal
			}
			return Outcome{}, &InProgressError{RetryAfter: time.Second}
		}
		rec := Record{
			StoreKey: a.key, ClaimID: o.newClaimID(), Status: StatusInFlight, Fingerprint: fingerprint, Request: in.Request,
			ClientKey: in.ClientKey, TraceID: in.TraceID, LeaseOwner: a.owner, LeaseExpiresAt: a.lease,
			Version: 1, CreatedAt: now, UpdatedAt: now,
		}
		cctx, end := o.observer().StartStep(ctx, TraceClaim)
		held, won, err := o.Store.Claim(cctx, rec, now)
		end(err)
		if err != nil {
			// The write may have applied with its answer lost (and the SDK's retries refused): read
			// the key back. Our own claim carries on; otherwise it is removed (it holds no envelope,
			// nothing can land), so it does not block the client's retry until its lease expires.
			cur, gerr := o.Store.Get(ctx, a.key)
			if gerr != nil || cur.ClaimID != rec.ClaimID {
				return Outcome{}, storeUnavailable(err)
			}
			held, won = cur, true
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
			}
			lastRefusal = err
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
			if err := DeleteItem(ctx, o.Store, held); err != nil {
				return Outcome{}, storeUnavailable(err)
			}
			continue
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

// onHeld acts on an item that another call holds. again means the key may have been freed or
// changed and the caller should claim again.
func (o *Orchestrator) onHeld(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	switch held.Status {
	case StatusReplayable:
		return replay(held), false, nil
	case StatusRejected:
		rej := storedRejection(held)
		rej.replayed = true
		return Outcome{}, false, rej
	case StatusInDoubt:
		return o.reconcileInline(ctx, a, held)
	case StatusInFlight:
		if held.LeaseExpired(o.Clock.Now()) {
			return o.takeOver(ctx, a, held)
		}
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
		var b [16]byte
		_, _ = rand.Read(b[:])
		owner = hex.EncodeToString(b[:])
	}
	return &attempt{
		in: in, key: StoreKey(in.Request.WalletAddress, in.ClientKey), owner: owner, settings: s,
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

// execute builds, records and submits a new envelope for a claimed item. freed reports that
// the key was released because nothing can land, so the caller may claim it again.
func (o *Orchestrator) execute(ctx context.Context, a *attempt, rec Record) (Outcome, bool, error) {
	if err := o.hook(ctx, StepClaimed, rec); err != nil {
		return Outcome{}, false, err
	}
	var env Envelope
	pctx, end := o.observer().StartStep(a.net, TracePrepare)
	err := o.Breaker.Do(func() error {
		var err error
		env, err = o.Ledger.Prepare(pctx, rec.Request, o.maxTime(a))
		return err
	})
	end(err)
	if err != nil {
		// Nothing was sent: the key is free again.
		o.release(ctx, rec)
		return Outcome{}, false, prepareFailure(err)
	}
	if err := o.hook(ctx, StepPrepared, rec); err != nil {
		return Outcome{}, false, err
	}
	next := rec
	next.Envelope = &env
	next.Version++
	next.UpdatedAt = o.Clock.Now()
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		// The envelope was never sent, so nothing can land from it whether or not the write
		// happened. If it did, a take-over will find the envelope and judge it from the ledger.
		o.release(ctx, rec)
		o.Ledger.Done(ctx, env)
		return Outcome{}, false, storeUnavailable(err)
	}
	if err := o.hook(ctx, StepAttached, next); err != nil {
		return Outcome{}, false, err
	}
	return o.submit(ctx, a, next, false)
}

// submit sends rec's envelope and awaits the ledger until the envelope lands, is proven dead, or
// the budget ends. maybeDelivered says an earlier send may have reached the network (a take-over
// or reconciliation), so no refusal can prove anything.
func (o *Orchestrator) submit(ctx context.Context, a *attempt, rec Record, maybeDelivered bool) (Outcome, bool, error) {
	env := *rec.Envelope
	failing := CodeTimeout
	needSend := true
	wait := firstPoll
	var sentAt uint32 // latest ledger when the envelope was last sent
	for {
		if !o.Clock.Now().Before(a.deadline) {
			break
		}
		if needSend {
			res, err := o.send(a.net, env)
			if herr := o.hook(ctx, StepSent, rec); herr != nil {
				return Outcome{}, false, herr
			}
			needSend = false
			if err == nil {
				sentAt = res.LatestLedger
			}
			switch {
			case err == nil && res.Status == SendIncluded && res.Included != nil:
				return o.onLookup(ctx, a, rec, *res.Included)
			case err == nil && RefusedBeforeInclusion(res, maybeDelivered):
				o.release(ctx, rec)
				o.Ledger.Done(ctx, env)
				return Outcome{}, true, refused(res)
			case err == nil:
				// PENDING or DUPLICATE, or a refusal of a re-send, which proves nothing.
				maybeDelivered = true
			case notSent(err):
				needSend = true
			default:
				// The request may have been written: from here on the envelope may be on the network.
				maybeDelivered = true
				needSend = true
				failing = sendFailure(err)
				o.log().WarnContext(ctx, "send failed; will re-send the same envelope", "storeKey", rec.StoreKey, "innerHash", env.InnerHash, "err", err)
			}
		}
		if maybeDelivered {
			lk, err := o.lookup(a.net, env)
			if err == nil {
				switch {
				case lk.Status == LookupSuccess || lk.Status == LookupFailed:
					return o.onLookup(ctx, a, rec, lk)
				case ProvenDead(env, lk):
					o.release(ctx, rec)
					o.Ledger.Done(ctx, env)
					return Outcome{}, true, expired()
				}
				// Still pending two ledgers after the send: re-send the same envelope, in case a
				// node dropped it. Same hash, same sequence number: it can land at most once.
				if lk.LatestLedger >= sentAt+2 {
					needSend = true
				}
			}
		}
		if err := o.sleep(ctx, a, wait); err != nil {
			break
		}
		if wait = wait * 3 / 2; wait > maxPoll {
			wait = maxPoll
		}
	}
	if !maybeDelivered {
		// Every send failed before reaching the network: nothing can land.
		o.release(ctx, rec)
		o.Ledger.Done(ctx, env)
		return Outcome{}, false, &UnavailableError{Code: CodeNetworkUnavailable, Detail: "the Stellar network could not be reached; nothing was submitted"}
	}
	return Outcome{}, false, o.settleInDoubt(ctx, a, rec, failing)
}

// onLookup settles an envelope the ledger has included.
func (o *Orchestrator) onLookup(ctx context.Context, a *attempt, rec Record, lk Lookup) (Outcome, bool, error) {
	if err := o.hook(ctx, StepSettling, rec); err != nil {
		return Outcome{}, false, err
	}
	env := *rec.Envelope
	next := settled(rec, lk, o.Clock.Now(), a.settings.KeyTTL)
	sctx, end := o.observer().StartStep(ctx, TraceSettle)
	err := ReplaceItem(sctx, o.Store, rec, next)
	end(err)
	if err != nil {
		// The ledger has spoken; the caller gets the truth. The item stays in_flight with its
		// envelope until a take-over or the sweep settles it from the same ledger facts.
		o.log().ErrorContext(ctx, "settle failed after the ledger decided", "storeKey", rec.StoreKey, "innerHash", env.InnerHash, "status", string(lk.Status), "err", err)
	}
	o.Ledger.Done(ctx, env)
	if lk.Status == LookupSuccess {
		return Outcome{TransactionHash: env.InnerHash, Ledger: lk.Ledger}, false, nil
	}
	return Outcome{}, false, storedRejection(next)
}

// settled is rec after the ledger included its envelope: replayable on SUCCESS, rejected on
// FAILED. The signed XDR is dropped (it can never land again) and the TTL starts.
func settled(rec Record, lk Lookup, now time.Time, ttl time.Duration) Record {
	next := rec
	env := *rec.Envelope
	env.XDR = ""
	next.Envelope = &env
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Version++
	next.UpdatedAt = now
	next.ExpiresAt = now.Add(ttl).Unix()
	if lk.Status == LookupSuccess {
		next.Status = StatusReplayable
		next.Result = &Result{TransactionHash: env.InnerHash, Ledger: lk.Ledger, FeeChargedStroops: lk.FeeChargedStroops}
		return next
	}
	next.Status = StatusRejected
	next.Result = &Result{
		TransactionHash: env.InnerHash, Ledger: lk.Ledger, Code: CodeTransactionFailed, HTTPStatus: 422,
		Detail:      fmt.Sprintf("the transaction was included in ledger %d and failed", lk.Ledger),
		ResultCodes: lk.ResultCodes, FeeChargedStroops: lk.FeeChargedStroops,
	}
	return next
}

// settleInDoubt parks rec as in_doubt and returns the error every caller will see.
func (o *Orchestrator) settleInDoubt(ctx context.Context, a *attempt, rec Record, failing string) error {
	if err := o.hook(ctx, StepSettling, rec); err != nil {
		return err
	}
	next := InDoubtRecord(rec, failing, o.Clock.Now())
	if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
		o.log().ErrorContext(ctx, "writing in_doubt failed; the expired lease will be taken over", "storeKey", rec.StoreKey, "err", err)
	}
	// The page comes from the alert function, which sees every in_doubt item on the table's stream;
	// this line carries no "alert" field so that one transfer pages once.
	o.log().WarnContext(ctx, "transfer in doubt", "storeKey", rec.StoreKey,
		"walletAddress", rec.Request.WalletAddress, "operationType", string(rec.Request.OperationType),
		"amount", rec.Request.Amount, "asset", rec.Request.Asset, "failingCode", failing,
		"idempotencyKey", rec.ClientKey, "traceId", rec.TraceID, "innerHash", rec.Envelope.InnerHash)
	return &InDoubtError{FailingCode: failing, RetryAfter: o.inDoubtRetryAfter(a, *rec.Envelope)}
}

// inDoubtRetryAfter is when a retry may find the envelope provable: after maxTime and the next
// ledger close.
func (o *Orchestrator) inDoubtRetryAfter(a *attempt, env Envelope) time.Duration {
	d := time.Unix(env.MaxTime, 0).Sub(o.Clock.Now()) + a.settings.ProofWindow
	if d < time.Second {
		d = a.settings.ProofWindow
	}
	return d.Round(time.Second)
}

// reconcileInline settles an in_doubt item from the ledger if it can (DESIGN.md section 4):
// landed or failed -> replayed; proven dead -> released, and the caller claims the key afresh.
func (o *Orchestrator) reconcileInline(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	inDoubt := &InDoubtError{FailingCode: failingCode(held), RetryAfter: a.settings.ProofWindow}
	if held.Envelope != nil {
		inDoubt.RetryAfter = o.inDoubtRetryAfter(a, *held.Envelope)
	}
	s, err := o.Settle(ctx, held)
	switch {
	case isConflict(err):
		return Outcome{}, true, nil // settled by another caller meanwhile: read it again
	case err != nil:
		o.log().WarnContext(ctx, "inline reconciliation failed", "storeKey", held.StoreKey, "err", err)
		return Outcome{}, false, inDoubt
	}
	switch s.Resolution {
	case ResolvedLanded:
		return replay(s.Record), false, nil
	case ResolvedFailed:
		rej := storedRejection(s.Record)
		rej.replayed = true
		return Outcome{}, false, rej
	case ResolvedReleased:
		o.log().InfoContext(ctx, "in-doubt envelope proven dead; key released", "storeKey", held.StoreKey)
		return Outcome{}, true, nil
	}
	return Outcome{}, false, inDoubt
}

// takeOver claims an in_flight item whose lease ran out (its invocation died): with no envelope
// it is executed afresh; with one, the same envelope is re-sent and judged, never rebuilt.
func (o *Orchestrator) takeOver(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	next := held
	next.LeaseOwner, next.LeaseExpiresAt = a.owner, a.lease
	next.TraceID = a.in.TraceID
	next.Version++
	next.UpdatedAt = o.Clock.Now()
	// The condition names the incarnation and state read (Expect(held)): a take-over delayed past
	// another caller's release and reclaim can never land on the new claim.
	if err := ReplaceItem(ctx, o.Store, held, next); err != nil {
		if errors.Is(err, ErrConditionFailed) {
			return Outcome{}, true, nil // another caller took it over first
		}
		return Outcome{}, false, storeUnavailable(err)
	}
	o.log().WarnContext(ctx, "took over an expired lease", "storeKey", held.StoreKey, "hasEnvelope", held.Envelope != nil)
	if next.Envelope == nil {
		return o.execute(ctx, a, next)
	}
	if err := o.hook(ctx, StepClaimed, next); err != nil {
		return Outcome{}, false, err
	}
	return o.submit(ctx, a, next, true)
}

// coalesce waits for the invocation holding the key to settle it, re-reading the item with
// backoff until it changes or this call's budget ends.
func (o *Orchestrator) coalesce(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	wait := firstPoll
	for {
		if err := o.sleep(ctx, a, wait); err != nil {
			break
		}
		cur, err := o.Store.Get(ctx, held.StoreKey)
		switch {
		case errors.Is(err, ErrNotFound):
			return Outcome{}, true, nil // released: claim it
		case err != nil:
			// A failed read changes nothing: keep waiting until the budget ends.
			o.log().WarnContext(ctx, "reading the item while waiting failed", "storeKey", held.StoreKey, "err", err)
			continue
		case cur.ClaimID != held.ClaimID || cur.Status != StatusInFlight || (cur.Version != held.Version && cur.LeaseOwner != held.LeaseOwner):
			return Outcome{}, true, nil
		case cur.LeaseExpired(o.Clock.Now()):
			return Outcome{}, true, nil
		}
		held = cur
		if wait = wait * 3 / 2; wait > maxPoll {
			wait = maxPoll
		}
	}
	retry := held.LeaseExpiresAt.Sub(o.Clock.Now())
	if retry < time.Second || retry > 30*time.Second {
		retry = time.Second
	}
	return Outcome{}, false, &InProgressError{RetryAfter: retry.Round(time.Second)}
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

func (o *Orchestrator) send(ctx context.Context, env Envelope) (SendResult, error) {
	var res SendResult
	ctx, end := o.observer().StartStep(ctx, TraceSend)
	defer func() { end(nil) }()
	err := o.Breaker.Do(func() error {
		var err error
		res, err = o.Ledger.Send(ctx, env)
		return err
	})
	return res, err
}

func (o *Orchestrator) lookup(ctx context.Context, env Envelope) (Lookup, error) {
	var lk Lookup
	ctx, end := o.observer().StartStep(ctx, TraceAwait)
	defer func() { end(nil) }()
	err := o.Breaker.Do(func() error {
		var err error
		lk, err = o.Ledger.Lookup(ctx, env)
		return err
	})
	return lk, err
}

// release deletes an in_flight item this call owns, once nothing can land for it. A failure is
// logged: the lease will expire and a take-over will judge the item from the ledger.
func (o *Orchestrator) release(ctx context.Context, rec Record) {
	if err := DeleteItem(ctx, o.Store, rec); err != nil {
		o.log().WarnContext(ctx, "releasing the key failed; its lease will expire", "storeKey", rec.StoreKey, "err", err)
	}
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

// View returns what is stored for (wallet, clientKey). Errors: *NotFoundError, or a wrapped store
// failure.
func (o *Orchestrator) View(ctx context.Context, wallet, clientKey string) (View, error) {
	rec, err := o.Store.Get(ctx, StoreKey(wallet, clientKey))
	if errors.Is(err, ErrNotFound) || err == nil && rec.Expired(o.Clock.Now()) {
		return View{}, &NotFoundError{}
	}
	if err != nil {
		return View{}, storeUnavailable(err)
	}
	switch rec.Status {
	case StatusReplayable:
		return View{Status: "success", TransactionHash: rec.Result.TransactionHash, Ledger: rec.Result.Ledger}, nil
	case StatusRejected:
		p := storedRejection(rec).Problem()
		return View{Status: "error", TransactionHash: p.TransactionHash, Problem: &p}, nil
	default:
		return View{Status: "pending", InDoubt: rec.Status == StatusInDoubt}, nil
	}
}

func replay(rec Record) Outcome {
	if rec.Result == nil {
		return Outcome{Replayed: true}
	}
	return Outcome{TransactionHash: rec.Result.TransactionHash, Ledger: rec.Result.Ledger, Replayed: true}
}

func storedRejection(rec Record) *RejectedError {
	if rec.Result == nil {
		return &RejectedError{Code: CodeTransactionFailed, Detail: "the transfer was rejected"}
	}
	r := rec.Result
	return &RejectedError{Code: r.Code, Status: r.HTTPStatus, Detail: r.Detail, TransactionHash: r.TransactionHash, ResultCodes: r.ResultCodes}
}

func failingCode(rec Record) string {
	if rec.Result != nil && rec.Result.Code != "" {
		return rec.Result.Code
	}
	return CodeInternalError
}

// sendFailure is the seed's code for a send that may have reached the network: the network
// answered unexpectedly (SUBMISSION_FAILED), the call ran out of time (TRANSFER_TIMEOUT), or it
// failed some other way mid-submit, e.g. a socket error (INTERNAL_ERROR).
func sendFailure(err error) string {
	switch {
	case errors.Is(err, ErrUnexpectedAnswer):
		return CodeSubmissionFailed
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	default:
		return CodeInternalError
	}
}

// notSent reports whether a send failed before anything reached the network: the ledger says
// so, or the circuit breaker did not let the call through.
func notSent(err error) bool {
	var u *UnavailableError
	return errors.Is(err, ErrNotSent) || errors.As(err, &u) && u.Code == CodeCircuitOpen
}

func storeUnavailable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; nothing was submitted", Err: err}
}

// prepareFailure types an error from Ledger.Prepare: nothing was sent, so it is retryable unless
// the ledger typed it already (a validation error, a circuit open).
func prepareFailure(err error) error {
	var p ProblemError
	if errors.As(err, &p) {
		return err
	}
	return &UnavailableError{Code: CodeRPCError, Detail: "the transaction could not be prepared; nothing was submitted", Err: err}
}

func refused(res SendResult) *UnavailableError {
	detail := "the network refused the transaction before inclusion; nothing moved"
	if res.Code != "" {
		detail = fmt.Sprintf("the network refused the transaction before inclusion (%s); nothing moved", res.Code)
	} else if res.Status == SendTryAgainLater {
		detail = "the network asked to try again later; nothing moved"
	}
	return &UnavailableError{Code: CodeRPCError, Detail: detail, RetryAfter: time.Second}
}

func expired() *UnavailableError {
	return &UnavailableError{Code: CodeTransactionExpired, Detail: "the transaction expired without landing; nothing moved", RetryAfter: time.Second}
}
