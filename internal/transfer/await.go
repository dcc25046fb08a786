package transfer

import "time"

// Awaiting an envelope ledger by ledger (README, "Latency"). After a send, the envelope can be in
// no ledger before the one after the latest at the send (the target). The wait sleeps until the
// target should be visible (Cadence.VisibleAt), then reads tightly: with a LatestReader, cheap
// probes of the latest ledger until the target is visible, then one Lookup; without one, Lookups.
// A Lookup that finds nothing in a ledger at or after the target shows that ledger closed without
// the envelope: the target moves past it and the wait sleeps again. So a caller hears of its
// ledger about a tight poll after the network shows it, with a look-up or two per ledger.

// ledgerWait is one envelope's await schedule.
type ledgerWait struct {
	c     *Cadence
	probe LatestReader // nil: the ledger has no cheap read of the latest ledger
	// target is the first ledger not yet seen to close without the envelope (0: unknown yet).
	target uint32
	// dueAt is when target was first expected visible; scheduled says the wait slept until then
	// and has not read since.
	dueAt     time.Time
	scheduled bool
	// backoff is the pause after a failed read; 0 after a good one.
	backoff time.Duration
	// sentAt is when the envelope was first sent, if that send says where to start looking
	// (firstAfterSend); zero otherwise.
	sentAt time.Time
}

// Pauses after failed reads: short first, then about a ledger.
const (
	firstBackoff = 250 * time.Millisecond
	maxBackoff   = 2 * time.Second
)

func (o *Orchestrator) newLedgerWait() *ledgerWait {
	c := o.Cadence
	if c == nil {
		c = &Cadence{}
	}
	w := &ledgerWait{c: c}
	w.probe, _ = o.Ledger.(LatestReader)
	return w
}

func (w *ledgerWait) observe(l LedgerInfo, at time.Time) { w.c.Observe(l, at) }

// waitFor moves the target to seq if that is later.
func (w *ledgerWait) waitFor(seq uint32) {
	if seq > w.target {
		w.target, w.dueAt, w.scheduled = seq, time.Time{}, false
	}
}

// firstAfterSend is the first ledger worth looking for an envelope sent at `at`, when the latest
// ledger the network showed was latest: the one after it, or later if the cadence expects some
// to have closed unseen before the send (the visibility lag can exceed the interval). Only when
// to look depends on it: a Lookup searches the whole history, so a wrong guess never misses a
// transaction, but the costs are lopsided. A guess too early costs one Lookup (it shows the
// ledgers up to the latest closed without the envelope, and the target moves past them); a
// guess too late sleeps through the envelope's ledger, a whole interval of latency. So the
// guess counts only the ledgers that surely closed before the send: those that closed more than
// a second before it (they were nominated without the envelope), where the latest's close was
// up to a second after its close time (whole seconds, truncated), and each ledger after it took
// the high end of the recent gaps (LatestGap), not their median.
func (w *ledgerWait) firstAfterSend(latest LedgerInfo, at time.Time) uint32 {
	w.sentAt = at
	next := latest.Sequence + 1
	if latest.Sequence == 0 || latest.CloseTime.IsZero() {
		return next
	}
	if k := (at.Sub(latest.CloseTime) - 2*time.Second) / w.c.LatestGap(); k > 0 {
		next += uint32(min(k, 10))
	}
	return next
}

// closedBeforeSend reports whether ledger l surely closed before the first send, by
// firstAfterSend's rule: more than a second before it, counting its close up to a second after
// its close time (whole seconds, truncated).
func (w *ledgerWait) closedBeforeSend(l LedgerInfo) bool {
	return !l.CloseTime.IsZero() && w.sentAt.Sub(l.CloseTime) > 2*time.Second
}

// due reports whether a Lookup is worth making now: the target may be visible. With a probe it
// reads the latest ledger first and says no while the target is not visible yet, unless the
// target is overdue by two ledger intervals: then the probe may be reading a stalled or lagging
// instance, and the Lookups go on at the overdue pace (next) whatever it says.
func (o *Orchestrator) due(a *attempt, w *ledgerWait) bool {
	scheduled := w.scheduled
	w.scheduled = false
	if w.probe == nil || w.target == 0 || w.c.Latest().Sequence >= w.target {
		return true
	}
	if !w.dueAt.IsZero() && o.Clock.Now().Sub(w.dueAt) > 2*w.c.Interval() {
		return true
	}
	a.probes++
	l, err := w.probe.LatestLedger(a.net)
	if err != nil {
		return true // the Lookup will say what it can
	}
	w.observe(l, o.Clock.Now())
	if !w.sentAt.IsZero() && l.Sequence >= w.target && w.closedBeforeSend(l) {
		// The probe shows a ledger that closed before the send (the first guess was cautious):
		// it cannot hold the envelope, and neither can any before it. Wait for the next one
		// rather than look up what cannot be there.
		w.waitFor(l.Sequence + 1)
		return false
	}
	if l.Sequence < w.target {
		return false
	}
	if scheduled {
		// The target was visible at the first read at its predicted time: the prediction may be
		// late (or exact; the two look alike, so a calibrated estimate costs a probe or two).
		w.c.Late(o.Clock.Now())
	}
	return true
}

// looked takes in a Lookup's answer: the ledger it covered (a NOT_FOUND's LatestLedger) closed
// without the envelope, so the target moves past it.
func (w *ledgerWait) looked(lk Lookup, err error, at time.Time) {
	if err != nil {
		w.failed()
		return
	}
	w.backoff = 0
	if lk.Status != LookupNotFound || lk.LatestLedger == 0 {
		return
	}
	w.observe(LedgerInfo{Sequence: lk.LatestLedger, CloseTime: lk.LatestLedgerCloseTime}, at)
	w.waitFor(lk.LatestLedger + 1)
}

// sent takes in a send's answer, as looked does a look-up's: a failed send lengthens the pause; an
// answered one shows the network's latest ledger, and after an envelope's first send the target is
// the first ledger that can hold it (firstAfterSend).
func (w *ledgerWait) sent(res SendResult, err error, first bool, at time.Time) {
	if err != nil {
		w.failed()
		return
	}
	w.backoff = 0
	latest := LedgerInfo{Sequence: res.LatestLedger, CloseTime: res.LatestLedgerCloseTime}
	w.observe(latest, at)
	if first {
		w.waitFor(w.firstAfterSend(latest, at))
	}
}

// failed lengthens the pause after a failed read or send.
func (w *ledgerWait) failed() { w.backoff = min(max(2*w.backoff, firstBackoff), maxBackoff) }

// tight is the period of reads while the target is due.
func (w *ledgerWait) tight() time.Duration {
	if w.backoff > 0 {
		return w.backoff
	}
	return w.c.TightPoll()
}

// next is how long to sleep before the next read: until the target's earliest plausible
// visibility (Cadence.VisibleAt), then reads two tight polls apart until its likely visibility
// (the median gap), then tight polls; once the target is overdue by more than a ledger interval
// past its latest plausible close (a stalled network or a lagging reader), polls spaced an eighth
// of the overdue time, at most maxBackoff.
func (w *ledgerWait) next(now time.Time) time.Duration {
	if w.backoff > 0 {
		return w.backoff
	}
	if at := w.c.VisibleAt(w.target); at.After(now) {
		if w.dueAt.IsZero() {
			w.dueAt = at
		}
		w.scheduled = true
		// Never more than an interval ahead: a prediction further out rests on a cadence that
		// has changed (a network that was idle or stalled, or a visibility lag learnt while a
		// reader trailed the network and gone since: a sleep of that lag could outlast the
		// budget, park a landed envelope in doubt and never read again to correct it). While the
		// lag is real, this costs a read per interval until the prediction.
		return min(at.Sub(now), w.c.Interval())
	}
	if w.dueAt.IsZero() {
		w.dueAt = now
	}
	tight := w.c.TightPoll()
	// Overdue counts from the latest plausible close, not the earliest the wait started at.
	if over := now.Sub(w.dueAt) - (w.c.LatestGap() - w.c.EarliestGap()); over > w.c.Interval() {
		return min(max(tight, over/8), maxBackoff)
	}
	// Before the median gap would make the target visible, it is visible only if its gap was
	// short (three ledgers in ten on pubnet): reads there are spaced two tight polls, which
	// halves their cost for a tight poll more of latency on those ledgers alone.
	if likely := w.c.LikelyVisibleAt(w.target); likely.After(now) {
		return min(2*tight, likely.Sub(now))
	}
	return tight
}
