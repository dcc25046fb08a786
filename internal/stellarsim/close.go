package stellarsim

import (
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
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
	// The lanes' limits leave the lowest bids queued and set what each lane charges (lanes.go).
	due := n.txSetLocked(seq, n.dueLocked(seq), c)
	// The transaction set as the nominating node trims it, against the last closed ledger
	// (HerderImpl::triggerNextLedger -> TxSetUtils::trimInvalid): what was valid then is in the
	// set even if an earlier transaction of this ledger changes its source's signers.
	inSet := make(map[*pendingTx]bool, len(due))
	for _, p := range due {
		inSet[p] = n.checkTx(p.tx, c) == nil
	}
	applying := c
	applying.applying = true
	for _, p := range due {
		delete(n.queue, p.tx.source)
		var failed *authFailure
		check := c
		if inSet[p] {
			check = applying
		}
		if terr := n.checkTx(p.tx, check); terr != nil {
			// Core signs the set's transactions again at apply (TransactionFrame::commonPreApply:
			// commonValid with applying=true, processSignatures): one whose signatures no longer
			// authorize is applied as FAILED, its fee charged and its sequence number consumed.
			if failed = authFailureOf(p.tx, terr); failed == nil || !inSet[p] {
				n.banAtClose(p.tx.fullHash, seq)
				p.envelope.Outcome = "dropped at ledger close: " + terr.name()
				continue
			}
		}
		order++
		rec := n.applyTx(p.tx, seq, closeTime, order, failed)
		p.envelope.Outcome = "included in ledger " + itoa(int64(seq)) + ": " + rec.Status
	}
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

// authFailure is the (inner) transaction's failure when only its signatures fail at apply.
type authFailure struct {
	code xdr.TransactionResultCode
	ops  []xdr.OperationResult
}

// authFailureOf is terr as an apply-time signature failure of t's (inner) transaction: txBAD_AUTH,
// txBAD_AUTH_EXTRA, or txFAILED with an opBAD_AUTH (TransactionFrame::commonValid and
// processSignatures); nil for any other refusal. A fee bump's own (outer) signatures are not
// judged at apply (checkCtx.applying).
func authFailureOf(t *txInfo, terr *txError) *authFailure {
	code, res := terr.code, terr.result.Result.Results
	if t.feeBump {
		if terr.code != xdr.TransactionResultCodeTxFeeBumpInnerFailed || terr.result.Result.InnerResultPair == nil {
			return nil
		}
		code, res = terr.inner, terr.result.Result.InnerResultPair.Result.Result.Results
	}
	switch code {
	case xdr.TransactionResultCodeTxBadAuth, xdr.TransactionResultCodeTxBadAuthExtra:
		return &authFailure{code: code}
	case xdr.TransactionResultCodeTxFailed:
		if res == nil {
			return nil
		}
		for _, r := range *res {
			if r.Code == xdr.OperationResultCodeOpBadAuth {
				return &authFailure{code: code, ops: *res}
			}
		}
	}
	return nil
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
