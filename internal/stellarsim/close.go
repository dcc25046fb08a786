package stellarsim

import (
	"sync"
	"time"
)

// CloseLedger closes one ledger now and returns it, as stellar-core does (txset.go): the queued
// transactions due in it are trimmed as the nominating node trims its candidates (those no longer
// valid at its close time and sequence, or whose fee source cannot pay all their fees, leave the
// queue banned, never applied and charged nothing); the fees of the whole set are charged, then
// its transactions apply in core's shuffled order, each included SUCCESS or FAILED. Then the
// queue is aged and re-checked (updateQueueLocked). While a stall fault is armed nothing is closed
// and the latest ledger is returned.
//
// RPC and Horizon show the new ledger only after its visibility lag
// (Options.VisibilityLagMin/Max); core's view (submission, LatestLedger) has it at once.
func (n *Network) CloseLedger() LedgerInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.takeStall() {
		return n.latestLocked()
	}
	seq := uint32(len(n.closeTimes)) + 1
	closeTime := n.nextCloseTime()
	c := checkCtx{closeTime: closeTime, ledgerSeq: seq}
	// HerderImpl::triggerNextLedger judges the candidates against the last closed ledger's state
	// with the close-time offsets of the ledger it nominates: at its close time and sequence
	// (TxSetUtils::trimInvalid); makeTxSetFromTransactions then fits what is valid into the lanes'
	// limits, leaving the lowest bids queued and setting what each lane charges (lanes.go).
	set := n.trimInvalidLocked(n.dueLocked(seq), c, seq)
	set = n.txSetLocked(seq, set, c)
	n.applySetLocked(set, seq, closeTime)
	now := n.clock.Now()
	n.closeTimes = append(n.closeTimes, closeTime)
	n.closedAt = append(n.closedAt, now)
	n.visibleAt = append(n.visibleAt, now.Add(n.visibilityLag(seq)))
	n.updateQueueLocked(seq, closeTime)
	n.afterCloseLocked(seq)
	close(n.ledgerClosed)
	n.ledgerClosed = make(chan struct{})
	return LedgerInfo{Sequence: seq, CloseTime: time.Unix(closeTime, 0).UTC()}
}

// Advancer is a virtual clock that reports its moves: internal/vclock's Clock, whose Sleep moves
// time on when nothing else runs on it.
type Advancer interface {
	OnAdvance(fn func(now time.Time))
}

// CloseOnAdvance closes a ledger whenever clock has moved at least interval past the last close,
// for tests and benchmarks that run the network and the service on one virtual clock: a
// transfer's await then costs no real time. Several intervals passed in one move close one
// ledger (the next close counts from then).
func (n *Network) CloseOnAdvance(clock Advancer, interval time.Duration) {
	var mu sync.Mutex
	last := n.clock.Now()
	clock.OnAdvance(func(now time.Time) {
		mu.Lock()
		due := now.Sub(last) >= interval
		if due {
			last = now
		}
		mu.Unlock()
		if due {
			n.CloseLedger()
		}
	})
}
