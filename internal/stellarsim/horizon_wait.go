package stellarsim

import (
	"net/http"
	"time"
)

// This file is how Horizon's synchronous submission waits for its own history
// (stellar-horizon internal/txsub/system.go): what the instance that took the
// request has ingested, woken by the events that change it.

// pollVirtual is how often a waiting handler looks at a clock that neither is
// the real clock nor reports its moves (Advancer): such a clock moves only
// when its owner says so, and nothing tells the network.
const pollVirtual = 10 * time.Millisecond

// watchClock makes a clock that reports its moves (Advancer, internal/vclock)
// wake the handlers waiting on the network's time (timeMoved).
func (n *Network) watchClock() {
	a, ok := n.clock.(Advancer)
	if !ok {
		return
	}
	a.OnAdvance(func(time.Time) {
		n.mu.Lock()
		close(n.timeMoved)
		n.timeMoved = make(chan struct{})
		n.mu.Unlock()
	})
}

// horizonShownLocked is the latest ledger the Horizon instance of view shows
// now: it moves on as the clock passes the ledgers' visibility times (and the
// instances fault's extra lag for that instance). Callers hold n.mu.
func (n *Network) horizonShownLocked(v readView) uint32 {
	return n.visibleLocked(n.instanceLagLocked("horizon", v.instance))
}

// instanceLagLocked is the extra ingestion lag of instance inst of api under
// the instances fault (readViewLocked), 0 without it. Callers hold n.mu.
func (n *Network) instanceLagLocked(api string, inst int) time.Duration {
	f := n.armedFor(FaultInstances, api)
	if f == nil || f.Instances < 2 {
		return 0
	}
	return f.Delay * time.Duration(inst) / time.Duration(f.Instances-1)
}

// awaitShown waits until done, judged under n.mu with the ledger the Horizon
// instance that took r shows, holds. It wakes at every ledger close, at every
// move of a clock that reports them, at the next visibility time on the real
// clock, and every pollVirtual on any other clock; it never moves the clock
// itself, so a virtual clock is not held up by a waiting handler. It returns
// false when timeout fires, the client leaves or the network closes.
func (n *Network) awaitShown(r *http.Request, timeout <-chan time.Time, done func(shown uint32) bool) bool {
	n.mu.Lock()
	view := n.viewOf(r, "horizon") // the instance that took the request
	n.mu.Unlock()
	_, realTime := n.clock.(realClock)
	_, reports := n.clock.(Advancer)
	for {
		n.mu.Lock()
		shown := n.horizonShownLocked(view)
		ok := done(shown)
		closed, moved := n.ledgerClosed, n.timeMoved
		var next time.Duration = -1
		if realTime && int(shown) < len(n.visibleAt) {
			next = n.visibleAt[shown].Add(n.instanceLagLocked("horizon", view.instance)).Sub(n.clock.Now())
		}
		n.mu.Unlock()
		if ok {
			return true
		}
		if !n.waitShownEvent(r, timeout, closed, moved, next, !realTime && !reports) {
			return false
		}
	}
}

// waitShownEvent waits for one of awaitShown's wake-ups: true to look again,
// false to give up.
func (n *Network) waitShownEvent(r *http.Request, timeout <-chan time.Time, closed, moved <-chan struct{}, next time.Duration, poll bool) bool {
	var tick <-chan time.Time
	switch {
	case next >= 0:
		t := time.NewTimer(next + time.Millisecond)
		defer t.Stop()
		tick = t.C
	case poll:
		t := time.NewTimer(pollVirtual)
		defer t.Stop()
		tick = t.C
	}
	select {
	case <-closed:
		return true
	case <-moved:
		return true
	case <-tick:
		return true
	case <-timeout:
	case <-r.Context().Done():
	case <-n.stop:
	}
	return false
}
