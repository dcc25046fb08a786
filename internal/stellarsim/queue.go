package stellarsim

import (
	"math"
	"math/big"
	"sort"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// This file is stellar-core's transaction queue (src/herder/TransactionQueue.cpp,
// src/herder/HerderImpl.cpp): what it accepts, how long it keeps a
// transaction, and what it bans.

// Queue constants, from src/herder/HerderImpl.cpp.
const (
	// queueTimeoutLedgers is TRANSACTION_QUEUE_TIMEOUT_LEDGERS: a queued
	// transaction not included within this many ledger closes is evicted
	// and banned (TransactionQueue::shift).
	queueTimeoutLedgers = 4
	// banLedgers is TRANSACTION_QUEUE_BAN_LEDGERS, the length of the ring of
	// banned-hash sets TransactionQueue::shift rotates at every close.
	banLedgers = 10
	// expectedCloseTimeMult is EXPECTED_CLOSE_TIME_MULT
	// (src/transactions/TransactionUtils.h).
	expectedCloseTimeMult = 2
)

// pendingTx is an accepted transaction waiting in the queue.
type pendingTx struct {
	tx        *txInfo
	order     uint64
	includeAt uint32 // first ledger it may be included in
	age       int    // ledger closes it has waited through (core's AccountState.mAge)
	envelope  *ReceivedEnvelope
}

// upperBoundCloseTimeOffset is core's getUpperBoundCloseTimeOffset
// (src/transactions/TransactionUtils.cpp): EXPECTED_CLOSE_TIME_MULT times the
// expected ledger close time in whole seconds
// (LedgerManagerImpl::getExpectedLedgerCloseTime), plus the time since the
// last close. TransactionQueue::canAdd passes it to
// TransactionFrame::checkValidForOverlay, whose isTooLate refuses maxTime
// below last close time + this offset: an envelope must stay valid for the
// ledger after next.
func (n *Network) upperBoundCloseTimeOffset(lastClose int64) int64 {
	drift := max(n.clock.Now().Unix()-lastClose, 0)
	return int64(n.opts.ExpectedCloseInterval/time.Second)*expectedCloseTimeMult + drift
}

// submitCtx is the ledger a new envelope is judged against: core's
// TransactionQueue::canAdd uses the last closed ledger's close time with
// lower offset 0 and the upper-bound offset, and its sequence + 1 for ledger
// bounds.
func (n *Network) submitCtx() checkCtx {
	latest := n.latestLocked()
	ct := latest.CloseTime.Unix()
	return checkCtx{closeTime: ct, upperOffset: n.upperBoundCloseTimeOffset(ct), ledgerSeq: latest.Sequence + 1}
}

// isBanned is TransactionQueue::isBanned, judged at the current last closed ledger.
func (n *Network) isBanned(fullHash string) bool {
	until, ok := n.banned[fullHash]
	return ok && uint32(len(n.closeTimes)) <= until
}

// banApplied bans a transaction applied in ledger seq. TransactionQueue::removeApplied
// puts it in the newest banned set and shift() then rotates once, so it is
// banned while the last closed ledger is seq .. seq+banLedgers-2 (N..N+8)
// and then fails the sequence check (txBAD_SEQ).
func (n *Network) banApplied(fullHash string, seq uint32) {
	n.banned[fullHash] = seq + banLedgers - 2
}

// banAtClose bans a transaction evicted or found invalid at the close of
// ledger seq: TransactionQueue::shift and TransactionQueue::ban put it in the
// newest set after the rotation, so it is banned for seq .. seq+banLedgers-1.
func (n *Network) banAtClose(fullHash string, seq uint32) {
	n.banned[fullHash] = max(n.banned[fullHash], seq+banLedgers-1)
}

// Against a source's queued transaction (HerderImpl::recvTransaction, then
// TransactionQueue::tryAdd and canAdd): one of the other kind (classic or
// Soroban) gets TRY_AGAIN_LATER before anything else (queueAnswer); the ban
// check comes next, then the duplicate or the inner transaction of the queued
// fee bump gets DUPLICATE and an older sequence number ERROR txBAD_SEQ
// (queuedAnswer), before the rules below.
//
// acceptLocked applies the queue rules in stellar-core's order
// (TransactionQueue::canAdd): duplicate, banned (TRY_AGAIN_LATER), one
// transaction per source (another one gets TRY_AGAIN_LATER; a fee bump of the
// same sequence number replaces the queued one at 10x its fee rate, below
// that it gets ERROR txINSUFFICIENT_FEE), then validity for the next ledger
// with the upper-bound close time offset, then whether the fee source can also pay the fees
// already queued for it (canPayQueuedFees: ERROR txINSUFFICIENT_BALANCE).
func (n *Network) acceptLocked(s *submission) {
	t := s.tx
	queued := n.queue[t.source]
	if queued != nil && queueAnswer(s, queued.tx) {
		return
	}
	if n.isBanned(t.fullHash) {
		s.status = StatusTryAgainLater
		return
	}
	replace := false
	if queued != nil {
		if queuedAnswer(s, queued.tx) {
			return
		}
		if !t.feeBump || t.seq != queued.tx.seq {
			s.status = StatusTryAgainLater
			return
		}
		// Replace-by-fee: core wants FEE_MULTIPLIER (10) x the queued fee rate
		// and otherwise answers ERROR txINSUFFICIENT_FEE with the fee it would need.
		if need, ok := canReplaceByFee(t, queued.tx); !ok {
			r := simpleResult(need, xdr.TransactionResultCodeTxInsufficientFee, nil)
			s.status, s.errResult, s.errCode = StatusError, &r, xdr.TransactionResultCodeTxInsufficientFee
			return
		}
		replace = true
	}
	// TxQueueLimiter::canAddTx runs before the validity checks (queuelimit.go).
	var old *pendingTx
	if replace {
		old = queued
	}
	evict, room := n.queueRoomLocked(s, old)
	if !room {
		return
	}
	if terr := n.checkTx(t, n.submitCtx()); terr != nil {
		s.status = StatusError
		s.errResult, s.errCode = &terr.result, terr.code
		return
	}
	var replaced *pendingTx
	if replace {
		replaced = queued
	}
	if terr := n.canPayQueuedFees(t, replaced); terr != nil {
		s.status = StatusError
		s.errResult, s.errCode = &terr.result, terr.code
		return
	}
	s.status = StatusPending
	s.rec.Accepted = true
	if replace {
		queued.envelope.Outcome = "replaced in queue by fee bump " + t.fullHash
		delete(n.queue, t.source)
	}
	n.evictLocked(evict, t)
	if s.faults.dropEnvelope {
		s.rec.Outcome = "evicted from queue (drop_envelope fault): never applied"
		return
	}
	n.nextOrder++
	p := &pendingTx{
		tx:        t,
		order:     n.nextOrder,
		includeAt: s.latest.Sequence + 1 + uint32(s.faults.delayInclusion),
		envelope:  s.rec,
	}
	if replace {
		// The age is the source account's, not the transaction's (TransactionQueue::tryAdd puts
		// the replacement in the account's slot, *oldTx = {tx, ...}, and leaves
		// AccountState.mAge alone): a replacement is evicted at the close the transaction it
		// replaced would have been. The replaced one is dropped (prepareDropTransaction), not
		// banned: it could be sent again once the slot is free.
		p.age = queued.age
	}
	n.queue[t.source] = p
}

// feeMultiplier is TransactionQueue::FEE_MULTIPLIER (src/herder/TransactionQueue.cpp): a fee bump
// replaces the queued transaction of its sequence number only at this many times its fee rate.
const feeMultiplier = 10

// canReplaceByFee is stellar-core's canReplaceByFee (src/herder/TransactionQueue.cpp, used by
// TransactionQueue::canAdd for a fee bump of the queued transaction's sequence number), on
// inclusion fees and operation counts (a fee bump counting one more, getNumOperations, at least
// 1), exactly: newFee x oldOps >= FEE_MULTIPLIER x oldFee x newOps. When it does not hold it
// returns the least full fee that would: ceil(FEE_MULTIPLIER x oldFee x newOps / oldOps) plus
// the new transaction's resource fee (the flat part), what core puts in the txINSUFFICIENT_FEE
// answer's feeCharged (INT64_MAX when it does not fit). The products are computed in big
// integers, as core computes them in 128 bits (bigMultiply, bigDivide128 rounding up).
func canReplaceByFee(t, old *txInfo) (int64, bool) {
	newFee, newOps := t.inclusionFee(), max(t.numOps(), 1)
	oldFee, oldOps := old.inclusionFee(), max(old.numOps(), 1)
	least := new(big.Int).Mul(big.NewInt(oldFee), big.NewInt(newOps*feeMultiplier))
	if newFee >= 0 && new(big.Int).Mul(big.NewInt(newFee), big.NewInt(oldOps)).Cmp(least) >= 0 {
		return 0, true
	}
	need := new(big.Int).Add(least, big.NewInt(oldOps-1))
	need.Quo(need, big.NewInt(oldOps))
	if !need.IsInt64() {
		return math.MaxInt64, false
	}
	return need.Int64() + t.resourceFee, false
}

// queueAnswer is HerderImpl::recvTransaction's check before the queue
// (src/herder/HerderImpl.cpp): core keeps classic and Soroban transactions in
// two queues and allows one transaction per source account across both, so
// a transaction of the other kind than the source's queued one gets
// TRY_AGAIN_LATER before its own queue sees it (no duplicate or sequence
// check). It reports whether s is answered.
func queueAnswer(s *submission, queued *txInfo) bool {
	if (queued.soroban != nil) == (s.tx.soroban != nil) {
		return false
	}
	s.status = StatusTryAgainLater
	return true
}

// queuedAnswer is TransactionQueue::canAdd against the source's queued
// transaction (src/herder/TransactionQueue.cpp, after the ban check):
// isDuplicateTx answers DUPLICATE for the same envelope and for the inner
// transaction of a queued fee bump sent on its own (it compares the fee
// bump's getInnerFullHash with the new envelope's hash); then a sequence
// number below the queued one is ERROR txBAD_SEQ (createTxErrorResult: no
// fee charged). It reports whether s is answered; a higher or equal sequence
// number goes on to the one-per-source rule.
func queuedAnswer(s *submission, queued *txInfo) bool {
	t := s.tx
	if queued.fullHash == t.fullHash || (queued.feeBump && !t.feeBump && queued.innerHash == t.fullHash) {
		s.status = StatusDuplicate
		return true
	}
	if t.seq < queued.seq {
		r := simpleResult(0, xdr.TransactionResultCodeTxBadSeq, nil)
		s.status, s.errResult, s.errCode = StatusError, &r, xdr.TransactionResultCodeTxBadSeq
		return true
	}
	return false
}

// dueLocked lists the queued transactions that may be included in ledger
// seq, in submission order.
func (n *Network) dueLocked(seq uint32) []*pendingTx {
	due := make([]*pendingTx, 0, len(n.queue))
	for _, p := range n.queue {
		if p.includeAt <= seq {
			due = append(due, p)
		}
	}
	sort.Slice(due, func(i, j int) bool { return due[i].order < due[j].order })
	return due
}

// updateQueueLocked is HerderImpl::updateTransactionQueue after ledger seq
// closed with closeTime: TransactionQueue::shift ages every queued
// transaction and evicts and bans one that has waited
// TRANSACTION_QUEUE_TIMEOUT_LEDGERS closes; then the rest are re-validated
// against the new last closed ledger with the upper-bound close time offset
// (TxSetUtils::getInvalidTxListWithErrors: each transaction's validity, then whether each fee
// source can pay all its queued fees; invalidTxs) and the invalid ones banned
// (TransactionQueue::ban). Callers hold n.mu.
func (n *Network) updateQueueLocked(seq uint32, closeTime int64) {
	for _, p := range n.sortedQueue() {
		p.age++
		if p.age >= queueTimeoutLedgers {
			delete(n.queue, p.tx.source)
			n.banAtClose(p.tx.fullHash, seq)
			p.envelope.Outcome = "evicted from queue after " + itoa(queueTimeoutLedgers) + " ledgers (at ledger " + itoa(int64(seq)) + "): never applied"
		}
	}
	c := checkCtx{closeTime: closeTime, upperOffset: n.upperBoundCloseTimeOffset(closeTime), ledgerSeq: seq + 1}
	queued := n.sortedQueue()
	invalid := n.invalidTxs(queued, c)
	for _, p := range queued {
		if why, bad := invalid[p]; bad {
			delete(n.queue, p.tx.source)
			n.banAtClose(p.tx.fullHash, seq)
			p.envelope.Outcome = "dropped from queue after ledger " + itoa(int64(seq)) + ": " + why + ": never applied"
		}
	}
}

func (n *Network) sortedQueue() []*pendingTx {
	out := make([]*pendingTx, 0, len(n.queue))
	for _, p := range n.queue {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}
