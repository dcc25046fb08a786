package transfer

// The rules that decide when a new envelope may be built for a key (doc.go, "Proof rules"). They
// live in one place so every path (the first attempt, a lease take-over, inline reconciliation,
// the sweep, an operator's discard) judges by the same proof.

// RefusedBeforeInclusion reports whether a send's answer proves the envelope never landed and
// never will: an explicit refusal (TRY_AGAIN_LATER, or ERROR with a transaction-level code) of a
// send that no earlier send of the same envelope could have preceded onto the network. Once a
// send's answer was lost (maybeDelivered), later refusals prove nothing: the network answers an
// already-included envelope with TRY_AGAIN_LATER or ERROR txBAD_SEQ too.
func RefusedBeforeInclusion(res SendResult, maybeDelivered bool) bool {
	if maybeDelivered {
		return false
	}
	switch res.Status {
	case SendTryAgainLater:
		return true
	case SendError:
		return res.Code != ""
	default:
		return false
	}
}

// ProvenDead reports whether the ledger proves env can never land: the hash is NOT_FOUND, a
// ledger whose close time is after the envelope's maxTime had closed before the search began (so
// the network refuses the envelope as too late from then on; Lookup.LatestLedger's contract), and
// either the search's history reaches back to the ledger seen before the first send and forward to
// that ledger, so an inclusion since then would have been found, or the source account's sequence
// number, read at or after that ledger, is still below the envelope's (SourceNotAdvanced). The
// local clock plays no part.
func ProvenDead(env Envelope, lk Lookup) bool {
	if lk.Status != LookupNotFound || env.MaxTime <= 0 || lk.LatestLedgerCloseTime.IsZero() ||
		lk.LatestLedgerCloseTime.Unix() <= env.MaxTime {
		return false
	}
	if lk.SourceNotAdvanced {
		return true
	}
	return env.SubmittedLedger > 0 &&
		lk.OldestLedger > 0 && lk.OldestLedger <= env.SubmittedLedger &&
		lk.LatestLedger >= env.SubmittedLedger
}
