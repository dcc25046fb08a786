package transfer

import "context"

// Inline reconciliation: a retry that meets an in_doubt item settles it from the ledger itself.

// reconcileInline settles an in_doubt item from the ledger if it can (doc.go, "The flow of one
// transfer"):
// landed or failed -> replayed; proven dead -> released, and the caller claims the key afresh (an
// async item is queued again and its message sent; the caller then waits on it); included FAILED
// on the service's side -> released (an async item requeued, its message held back for
// RequeueDelay) and answered that failure, with no new envelope.
func (o *Orchestrator) reconcileInline(ctx context.Context, a *attempt, held Record) (Outcome, bool, error) {
	inDoubt := o.inDoubtAnswer(a, held)
	s, err := o.settle(ctx, held, false)
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
		return Outcome{}, false, replayedRejection(s.Record)
	case ResolvedReleased:
		if code := s.Shortfall; code != "" && s.Lookup != nil {
			// Included FAILED on the service's side (the paying side could not pay, or its own
			// accounts or signing failed): Settle released the key and paged. Answered as the call
			// that sent it would have been (releaseShortfall): a new envelope now would fail the
			// same way, costing a fee and another page.
			return Outcome{}, false, shortfallAnswer(code, *s.Lookup)
		}
		o.log().InfoContext(ctx, "in-doubt envelope proven dead; key released", "storeKey", held.StoreKey)
		// An envelope of this request (same key, same fingerprint) was sent and is proven dead:
		// a refusal before the next send says "nothing moved", not "nothing was submitted".
		a.provenDead = true
		return Outcome{}, true, nil
	case ResolvedRequeued:
		// The async transfer's message was acknowledged when it ended in doubt: send it again, or
		// nothing runs the requeued item before the sweep's grace (README.md, "Asynchronous
		// transfers"). A failed send is left to the sweep.
		if code := s.Shortfall; code != "" && s.Lookup != nil {
			// Included FAILED on the service's side: its message waits the failure's Retry-After
			// (RequeueDelay), as RunQueued's requeue of it does, and this call is answered the
			// failure now, as for a synchronous item, rather than wait on an item that runs only
			// after that delay.
			o.log().InfoContext(ctx, "in-doubt envelope included FAILED on the service's side; async transfer queued again",
				"storeKey", held.StoreKey, "code", code, "sendAfter", RequeueDelay(s))
			o.sendRequeued(ctx, s)
			return Outcome{}, false, shortfallAnswer(code, *s.Lookup)
		}
		o.log().InfoContext(ctx, "in-doubt envelope proven dead; async transfer queued again", "storeKey", held.StoreKey)
		o.sendRequeued(ctx, s)
		return Outcome{}, true, nil
	}
	return Outcome{}, false, inDoubt
}

// inDoubtAnswer is what a caller meeting the in_doubt item rec is told: 409 TRANSFER_IN_DOUBT with
// its failing code, to retry once its envelope can be proven either way.
func (o *Orchestrator) inDoubtAnswer(a *attempt, rec Record) *InDoubtError {
	d := &InDoubtError{FailingCode: failingCode(rec), RetryAfter: a.settings.ProofWindow}
	if rec.Envelope != nil {
		d.RetryAfter = o.inDoubtRetryAfter(a, *rec.Envelope)
	}
	return d
}

// sendRequeued sends the message of the item that s requeued (SendRequeued); one not sent is
// logged and left to the sweep. A nil Queue sends nothing.
func (o *Orchestrator) sendRequeued(ctx context.Context, s Settlement) {
	if o.Queue == nil {
		return
	}
	if err := SendRequeued(ctx, o.Queue, s); err != nil {
		o.log().WarnContext(ctx, "sending the requeued transfer failed; the sweep will send it", "storeKey", s.Record.StoreKey, "err", err)
	}
}
