package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Resolution is what Settle did with an item.
type Resolution string

const (
	// ResolvedLanded: the envelope landed with SUCCESS; the item is replayable.
	ResolvedLanded Resolution = "replayable"
	// ResolvedFailed: the envelope was included and FAILED; the item is rejected.
	ResolvedFailed Resolution = "rejected"
	// ResolvedReleased: nothing can land and nothing moved (proven dead, never sent, or included
	// FAILED on the service's side: Settlement.Shortfall); the item is deleted and the key is free.
	ResolvedReleased Resolution = "released"
	// ResolvedRequeued: nothing can land for an async item (proven dead, never sent, or included
	// FAILED on the service's side); it is queued again for the submitter (Requeued) and its
	// message is to be sent again (SendRequeued: after RequeueDelay).
	ResolvedRequeued Resolution = "requeued"
	// ResolvedInDoubt: an expired claim whose envelope cannot be judged yet was parked in_doubt.
	ResolvedInDoubt Resolution = "in_doubt"
	// Unresolved: the ledger proves nothing yet; the item is unchanged.
	Unresolved Resolution = "unresolved"
)

// CodeLeaseExpired is the failing code of an in_flight claim whose invocation died after its
// envelope was written and which the ledger could not yet judge.
const CodeLeaseExpired = "LEASE_EXPIRED"

// Settlement is the outcome of Settle: what was done, the item as written (zero when deleted or
// unchanged), and the ledger's answer it was based on (nil when the ledger was not asked).
type Settlement struct {
	Resolution Resolution
	Record     Record
	Lookup     *Lookup
	// Shortfall is the code of the retryable answer (VAULT_UNDERFUNDED, FEE_ACCOUNT_UNDERFUNDED,
	// SERVICE_SIDE_FAILURE) when the item was released or requeued because the ledger included
	// its envelope FAILED on the service's side (SourceShortfall; a batch's batchShortfall), else
	// "". A requeue for it waits its Retry-After (RequeueDelay).
	Shortfall string
}

// Settle judges rec, an in_doubt item or an in_flight item whose lease expired, from the ledger
// and writes only what the ledger proves (doc.go, "Proof rules"), conditional on rec exactly as read
// (Expect: its incarnation, status, version, lease owner and envelope), so a stale reader can never
// touch a later claim of the key: SUCCESS -> replayable; FAILED -> rejected, unless the failure is
// the service's side (SourceShortfall: the vault or the fee account lacked funds, or the service's
// accounts, signing or contract call failed): then released, and it pages; proven dead or never sent -> released
// (an async item: requeued, ResolvedRequeued); an
// expired claim the ledger cannot judge yet -> in_doubt, so that it is alerted and swept. A batched
// key (rec.Batch) is judged by its own operation from its batch item's envelope (settleBatched;
// doc.go, "Batches"); ErrBatchMismatch when the batch item does not hold it (an expired claim is
// then parked in_doubt for an operator all the same, and the Settlement says so). It is
// what the sweep and operators use; a retry uses the same rules inline. Errors: ErrConditionFailed
// (wrapped) when another caller changed the item first; the ledger's or the store's errors.
//
// A release for a failure on the paying or the service's side is counted once with its code
// (FailureCounter, when the Observer is one): the alarms on transfer_orchestration_failure_total
// page on it (template.yaml), and the sweep and a discard answer no call that would count it. A
// batch's failure is counted once per batch, with its page (pagesShortfall), not once per key.
func (o *Orchestrator) Settle(ctx context.Context, rec Record) (Settlement, error) {
	return o.settle(ctx, rec, true)
}

// settle is Settle; count says whether a release for a failure on the service's side is counted
// here (false inline, where the retry's own answer counts it).
func (o *Orchestrator) settle(ctx context.Context, rec Record, count bool) (Settlement, error) {
	if err := o.settings().Validate(); err != nil {
		return Settlement{}, err
	}
	now := o.Clock.Now()
	switch {
	case rec.Status == StatusInFlight && !rec.LeaseExpired(now):
		return Settlement{Resolution: Unresolved}, nil
	case rec.Status != StatusInFlight && rec.Status != StatusInDoubt:
		return Settlement{Resolution: Unresolved}, nil
	}
	if rec.Envelope == nil {
		if rec.Status == StatusInDoubt {
			return Settlement{Resolution: Unresolved}, nil
		}
		// The claim's invocation died before writing an envelope: nothing was ever sent.
		if err := o.free(ctx, rec); err != nil {
			return Settlement{}, err
		}
		return o.freed(rec, nil), nil
	}
	if rec.Batch != nil {
		// Its envelope is a batch's: judged by its own operation (doc.go, "Batches").
		s, err := o.settleBatched(ctx, rec)
		if err == nil && count && s.Shortfall != "" && s.Lookup != nil && pagesShortfall(*s.Lookup, rec.Batch.Index) {
			// Counted with its page: once per batch, by the judge of the key that pages
			// (pagesShortfall), as a single transfer's sweep counts once. A key the submitter
			// judged is counted by its own report and never reaches Settle.
			o.countFailure(ctx, rec, s.Shortfall)
		}
		return s, err
	}
	env := *rec.Envelope
	lk, err := o.lookup(ctx, env)
	if err != nil {
		return Settlement{}, err
	}
	switch {
	case SourceShortfall(env, lk) != "":
		// Included FAILED on the service's side (SourceShortfall): nothing moved and
		// the envelope can never land again (releaseShortfall says why that makes the release
		// safe). The key is freed, conditional on rec as read, and the shortfall pages; an async
		// item is requeued held back for the failure's Retry-After (RequeuedAfter).
		code := SourceShortfall(env, lk)
		next, err := o.freeFor(ctx, rec, shortfallAnswer(code, lk))
		if err != nil {
			return Settlement{Lookup: &lk}, err
		}
		o.Ledger.Done(ctx, env)
		o.pageUnderfunded(ctx, rec, code, fmt.Sprintf("included FAILED in ledger %d %v", lk.Ledger, lk.ResultCodes))
		if count {
			o.countFailure(ctx, rec, code)
		}
		s := o.freed(rec, &lk)
		if rec.Async {
			s.Record = next
		}
		s.Shortfall = code
		return s, nil
	case lk.Status == LookupSuccess || lk.Status == LookupFailed:
		next := SettledRecord(rec, lk, now, o.settings().KeyTTL)
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			return Settlement{Lookup: &lk}, err
		}
		o.Ledger.Done(ctx, env)
		res := ResolvedLanded
		if lk.Status == LookupFailed {
			res = ResolvedFailed
		}
		return Settlement{Resolution: res, Record: next, Lookup: &lk}, nil
	case ProvenDead(env, lk):
		if err := o.free(ctx, rec); err != nil {
			return Settlement{Lookup: &lk}, err
		}
		o.Ledger.Done(ctx, env)
		return o.freed(rec, &lk), nil
	case rec.Status == StatusInFlight:
		next := InDoubtRecord(rec, CodeLeaseExpired, now)
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			return Settlement{Lookup: &lk}, err
		}
		return Settlement{Resolution: ResolvedInDoubt, Record: next, Lookup: &lk}, nil
	}
	return Settlement{Resolution: Unresolved, Lookup: &lk}, nil
}

// countFailure counts a release or requeue of rec for a failure on the paying or the service's
// side (code) in transfer_orchestration_failure_total, when the Observer is a FailureCounter.
func (o *Orchestrator) countFailure(ctx context.Context, rec Record, code string) {
	if fc, ok := o.observer().(FailureCounter); ok {
		fc.CountFailure(ctx, rec.Request.OperationType, Retryable, code)
	}
}

// freed is the Settlement of rec once free released (deleted) or requeued it.
func (o *Orchestrator) freed(rec Record, lk *Lookup) Settlement {
	if rec.Async {
		return Settlement{Resolution: ResolvedRequeued, Record: Requeued(rec, o.Clock.Now()), Lookup: lk}
	}
	return Settlement{Resolution: ResolvedReleased, Lookup: lk}
}

// SettledRecord is rec after the ledger included its envelope: replayable on SUCCESS, rejected
// on FAILED, with the lease cleared, the version bumped and the TTL (ttl from now) started. The
// signed XDR is dropped (it can never land again); the hashes stay.
func SettledRecord(rec Record, lk Lookup, now time.Time, ttl time.Duration) Record {
	return settled(rec, lk, now, ttl)
}

// InDoubtRecord is rec parked in_doubt with the failing code: no lease, no TTL, version bumped.
func InDoubtRecord(rec Record, failing string, now time.Time) Record {
	next := rec
	next.Status = StatusInDoubt
	next.LeaseOwner, next.LeaseExpiresAt = "", time.Time{}
	next.Result = &Result{Code: failing}
	next.ExpiresAt = 0
	next.Version++
	next.UpdatedAt = now
	return next
}

func (o *Orchestrator) settings() Settings {
	if o.Settings != nil {
		return o.Settings()
	}
	return DefaultSettings()
}

// isConflict reports a conditional write lost to another caller.
func isConflict(err error) bool { return errors.Is(err, ErrConditionFailed) }
