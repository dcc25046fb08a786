package transfer

import (
	"context"
	"errors"
	"time"
)

// Waiting for another invocation that holds the key (doc.go, "The flow of one transfer").

// coalesce waits for the invocation holding the key to settle it, re-reading the item until it
// changes or this call's budget ends. The holder hears of its ledger within a tight poll of the
// network showing it (await.go) and writes the outcome at once, so the item is read every
// itemPoll: a tenth of the ledger interval, between 50 and 250 ms. A strongly consistent read of
// an item under 4 KB costs one read capacity unit, and DynamoDB answers it in milliseconds;
// watching the ledger instead would cost as many reads of the network and still wait for the
// holder's write.
func (o *Orchestrator) coalesce(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	c := o.Cadence
	if c == nil {
		c = &Cadence{}
	}
	wait := itemPoll(c.Interval())
	for {
		if err := o.sleep(ctx, a, wait); err != nil {
			break
		}
		cur, err := o.Store.Get(ctx, held.StoreKey)
		switch {
		case errors.Is(err, ErrNotFound):
			// Released: claim it. An item that held an envelope is released only once nothing
			// can land from it (proven dead, refused before inclusion, included FAILED on the
			// service's side, or discarded by an operator), so an envelope of this request was
			// sent and nothing moved: a refusal before this call's own send must not say
			// "nothing was submitted". A FAILED inclusion on the service's side is answered as
			// its holder was (heldShortfall), with nothing built.
			if held.Envelope != nil {
				if failed := o.heldShortfall(ctx, a, held); failed != nil {
					return Outcome{}, false, failed
				}
				a.provenDead = true
			}
			return Outcome{}, true, nil
		case err != nil:
			// A failed read changes nothing: keep waiting until the budget ends.
			o.log().WarnContext(ctx, "reading the item while waiting failed", "storeKey", held.StoreKey, "err", err)
			continue
		case cur.ClaimID != held.ClaimID && held.Envelope != nil:
			// Released and claimed again: the envelope waited on is dead, as above.
			a.provenDead = true
			return Outcome{}, true, nil
		case cur.ClaimID == held.ClaimID && cur.Status == StatusQueued && heldBack(cur, o.Clock.Now()):
			// Queued again, held back for a failure on the service's side (RequeuedAfter: its
			// holder's answer, a refusal of its first send included, which the ledger cannot
			// show): answered as its holder was, with nothing built.
			return Outcome{}, false, HeldAnswer(cur, o.Clock.Now())
		case cur.ClaimID == held.ClaimID && cur.Status == StatusQueued && held.Status != StatusQueued && held.Envelope != nil:
			// An async item its holder queued again (Requeued): as a release, above. Requeued
			// for a failure on the service's side, it runs only once that failure's Retry-After
			// has passed (RequeueDelay), so waiting on it would only spend this call's budget.
			if failed := o.heldShortfall(ctx, a, held); failed != nil {
				return Outcome{}, false, failed
			}
			return Outcome{}, true, nil
		case cur.ClaimID != held.ClaimID || cur.Status != held.Status || (cur.Version != held.Version && cur.LeaseOwner != held.LeaseOwner):
			return Outcome{}, true, nil
		case cur.LeaseExpired(o.Clock.Now()):
			return Outcome{}, true, nil
		}
		held = cur
	}
	retry := held.LeaseExpiresAt.Sub(o.Clock.Now())
	if retry < time.Second || retry > 30*time.Second {
		retry = time.Second
	}
	return Outcome{}, false, &InProgressError{RetryAfter: retry.Round(time.Second)}
}

// heldShortfall is the answer to a call that waited on held, an item with an envelope that its
// holder just freed (deleted, or an async item requeued), when the ledger included that envelope
// FAILED on the service's side: the holder's own answer (shortfallAnswer: 503 VAULT_UNDERFUNDED,
// FEE_ACCOUNT_UNDERFUNDED or SERVICE_SIDE_FAILURE, Retry-After a minute), a replay of the failure
// within its Retry-After. The waiter builds nothing: a new envelope now would meet the same cause,
// another FAILED inclusion, another fee and another page (doc.go, "Classification": no new
// envelope in the same call, nor in a retry that settles it inline). The holder paged; the
// waiter's Report counts its own answer, as an inline retry's does. One lookup of the envelope's
// hashes (a batched key's: its batch's, judged by batchShortfall). nil when the ledger shows
// anything else (NOT_FOUND: proven dead or refused, and the waiter may build), or cannot be read:
// then the waiter goes on as after any release, as it would without this check.
func (o *Orchestrator) heldShortfall(ctx context.Context, a *attempt, held Record) error {
	env := *held.Envelope
	a.lookups++
	lk, err := o.lookup(a.net, env)
	if err != nil {
		o.log().WarnContext(ctx, "looking up the envelope of a freed item failed; going on as after a proof of death",
			"storeKey", held.StoreKey, "innerHash", env.InnerHash, "err", err)
		return nil
	}
	code := SourceShortfall(env, lk)
	if held.Batch != nil {
		code = batchShortfall(env, lk)
	}
	if code == "" {
		return nil
	}
	return shortfallAnswer(code, lk)
}

// heldBack reports whether rec is a queued item held back at now (Record.HeldFor).
func heldBack(rec Record, now time.Time) bool {
	_, ok := rec.HeldFor(now)
	return ok
}

// itemPoll is the period of item reads while coalescing: interval/10 within [50 ms, 250 ms].
func itemPoll(interval time.Duration) time.Duration {
	return min(max(interval/10, 50*time.Millisecond), 250*time.Millisecond)
}
