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
			// can land from it (proven dead, refused before inclusion, or discarded by an
			// operator), so an envelope of this request was sent and nothing moved: a refusal
			// before this call's own send must not say "nothing was submitted".
			if held.Envelope != nil {
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

// itemPoll is the period of item reads while coalescing: interval/10 within [50 ms, 250 ms].
func itemPoll(interval time.Duration) time.Duration {
	return min(max(interval/10, 50*time.Millisecond), 250*time.Millisecond)
}
