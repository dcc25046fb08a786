package stellarsim

import (
	"time"
)

// CloseLedger closes one ledger now and returns it. Queued transactions due
// in this ledger are re-validated against its close time and sequence (those
// no longer valid, e.g. past maxTime, are dropped from the queue, banned and
// never applied, as HerderImpl::triggerNextLedger trims them from the
// transaction set) and the rest are applied in submission order. Then the
// queue is aged and re-checked (updateQueueLocked). While a stall fault is
// armed nothing is closed and the latest ledger is returned.
//
// RPC and Horizon show the new ledger only after its visibility lag
// (Options.VisibilityLagMin/Max); core's view (submission, LatestLedger) has
// it at once.
func (n *Network) CloseLedger() LedgerInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.takeStall() {
		return n.latestLocked()
	}
	seq := uint32(len(n.closeTimes)) + 1
	closeTime := n.nextCloseTime()
	c := checkCtx{closeTime: closeTime, ledgerSeq: seq}

	var order int32
	for _, p := range n.dueLocked(seq) {
		delete(n.queue, p.tx.source)
		if terr := n.checkTx(p.tx, c); terr != nil {
			n.banAtClose(p.tx.fullHash, seq)
			p.envelope.Outcome = "dropped at ledger close: " + terr.name()
			continue
		}
		order++
		rec := n.applyTx(p.tx, seq, closeTime, order)
		p.envelope.Outcome = "included in ledger " + itoa(int64(seq)) + ": " + rec.Status
	}
	now := n.clock.Now()
	n.closeTimes = append(n.closeTimes, closeTime)
	n.closedAt = append(n.closedAt, now)
	n.visibleAt = append(n.visibleAt, now.Add(n.visibilityLag(seq)))
	n.updateQueueLocked(seq, closeTime)
	close(n.ledgerClosed)
	n.ledgerClosed = make(chan struct{})
	return LedgerInfo{Sequence: seq, CloseTime: time.Unix(closeTime, 0).UTC()}
}
