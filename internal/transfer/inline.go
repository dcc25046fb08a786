package transfer

import "context"

// Inline reconciliation: a retry that meets an in_doubt item settles it from the ledger itself.

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
