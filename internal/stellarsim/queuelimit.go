package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// This file is stellar-core's TxQueueLimiter (src/herder/TxQueueLimiter.cpp) with
// SurgePricingPriorityQueue::canFitWithEviction (src/herder/SurgePricingUtils.cpp): each queue
// (classic, Soroban) holds at most Options.QueueMultiplier times its ledger limits; a new
// transaction that does not fit evicts the lowest bids if it outbids them, and is refused
// otherwise.

// evictedBid is a lane's highest evicted bid since the last ledger close
// (TxQueueLimiter::mLaneEvictedInclusionFee): an inclusion fee over a number of operations.
type evictedBid struct{ fee, ops int64 }

// queueLimits are a lane's queue limits (TxQueueLimiter::maxScaledLedgerResources): the ledger
// limits times the pool multiplier.
func (n *Network) queueLimits(lane int) resources {
	return n.ledgerLimits(lane).scale(int64(n.opts.QueueMultiplier))
}

// queueRoomLocked is TxQueueLimiter::canAddTx for s's transaction, old being the queued
// transaction it replaces by fee (nil if none). It reports the queued transactions to evict to
// make room and true, or refuses s as TransactionQueue::canAdd does and reports false: the
// transaction is banned (TransactionQueue::ban) and answered ERROR txINSUFFICIENT_FEE with
// feeCharged the full fee it would need, or TRY_AGAIN_LATER when no fee would do (it is larger
// than the queue, or only its own source's transaction could make room). Callers hold n.mu.
func (n *Network) queueRoomLocked(s *submission, old *pendingTx) ([]*pendingTx, bool) {
	t := s.tx
	lane := t.lane()
	refuse := func(needInclusion int64) ([]*pendingTx, bool) {
		n.banAtClose(t.fullHash, uint32(len(n.closeTimes)))
		if needInclusion <= 0 {
			s.status = StatusTryAgainLater
			return nil, false
		}
		// canAddTx reports the inclusion fee to beat; canAdd answers the full fee
		// (minimum inclusion fee + the declared resource fee) in feeCharged.
		r := simpleResult(needInclusion+t.resourceFee, xdr.TransactionResultCodeTxInsufficientFee, nil)
		s.status, s.errResult, s.errCode = StatusError, &r, xdr.TransactionResultCodeTxInsufficientFee
		return nil, false
	}
	// Since the last close, a new transaction must beat the best bid evicted from its lane
	// (computeBetterFee on mLaneEvictedInclusionFee), even if it would fit.
	if b := n.cong.evicted[lane]; b.ops != 0 && feeRateCmp(b.fee, b.ops, t.inclusionFee(), t.numOps()) >= 0 {
		return refuse(betterFee(t.numOps(), b.fee, b.ops))
	}
	limit := n.queueLimits(lane)
	need := t.laneResources()
	if old != nil {
		need = need.subNonNeg(old.tx.laneResources())
	}
	if need.anyGreater(limit) {
		return refuse(0)
	}
	var queued []*pendingTx
	var total resources
	for _, p := range n.queue {
		if p.tx.lane() == lane {
			queued = append(queued, p)
			total = total.add(p.tx.laneResources())
		}
	}
	if !total.add(need).anyGreater(limit) {
		return nil, true
	}
	needed := total.add(need).subNonNeg(limit)
	// The limiter's queue has the lowest fee rate on top (isHighestPriority false).
	byRate(queued, splitmix64(n.opts.SurgeSeed^0x71), false)
	var evict []*pendingTx
	for _, p := range queued {
		e := p.tx
		// The evicted transaction must bid a strictly lower rate than the new one.
		if feeRateCmp(e.inclusionFee(), e.numOps(), t.inclusionFee(), t.numOps()) >= 0 {
			return refuse(betterFee(t.numOps(), e.inclusionFee(), e.numOps()))
		}
		if e.source == t.source {
			return refuse(0)
		}
		evict = append(evict, p)
		needed = needed.subNonNeg(e.laneResources())
		if !needed.anyPositive() {
			return evict, true
		}
	}
	return refuse(0)
}

// evictLocked is TxQueueLimiter::evictTransactions after t entered the queue at the last closed
// ledger: each evicted transaction leaves the queue and is banned (TransactionQueue::tryAdd),
// and its bid becomes the one later transactions of its lane must beat until the next close.
// Callers hold n.mu.
func (n *Network) evictLocked(evict []*pendingTx, by *txInfo) {
	seq := uint32(len(n.closeTimes))
	for _, p := range evict {
		if n.queue[p.tx.source] != p {
			continue
		}
		delete(n.queue, p.tx.source)
		n.banAtClose(p.tx.fullHash, seq)
		n.cong.evicted[p.tx.lane()] = evictedBid{p.tx.inclusionFee(), p.tx.numOps()}
		if p.envelope != nil {
			p.envelope.Outcome = "evicted from the full queue by a higher bid (" + by.fullHash + ") at ledger " + itoa(int64(seq)) + ", banned: never applied"
		}
	}
}
