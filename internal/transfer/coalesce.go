package transfer

import (
	"context"
	"errors"
	"time"
)

// Waiting for another invocation that holds the key (seed 000, "concurrent coalescing").

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
