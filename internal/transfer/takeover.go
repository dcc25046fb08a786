package transfer

import (
	"context"
	"errors"
)

// Taking over a claim whose invocation died (doc.go, "The item", take over).

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
		if held.Envelope != nil {
			return Outcome{}, false, storeUnavailableHeld(err)
		}
		return Outcome{}, false, storeUnavailable(err)
	}
	o.log().WarnContext(ctx, "took over an expired lease", "storeKey", held.StoreKey, "hasEnvelope", held.Envelope != nil)
	var out Outcome
	var freed bool
	var err error
	switch {
	case next.Envelope == nil:
		out, freed, err = o.execute(ctx, a, next)
	case next.Batch != nil:
		// A batch's envelope: the same one, read from its batch item, judged for this key alone.
		out, freed, err = o.takeOverBatched(ctx, a, next)
	default:
		if err := o.hook(ctx, StepClaimed, next); err != nil {
			return Outcome{}, false, err
		}
		out, freed, err = o.submit(ctx, a, next, true)
	}
	if freed {
		// This call now holds the incarnation and proved its envelope dead: if the release
		// failed, the next pass releases it again rather than wait on itself (attempt.freed).
		a.freed = next.ClaimID
		a.provenDead = true
		if isUnderfunded(err) {
			// Nothing a new envelope would change until the account is funded: answer now.
			return out, false, o.freeOwnLeftover(ctx, a, err)
		}
	}
	return out, freed, err
}
