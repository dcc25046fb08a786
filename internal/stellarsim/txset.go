package stellarsim

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sort"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// This file is how stellar-core (master, protocol 23 and later) turns queued transactions into a
// ledger: the nominating node trims the candidates (TxSetUtils::trimInvalid), the set is applied
// in a shuffled order (TxSetFrame.cpp, ApplicableTxSetFrame::getPhasesInApplyOrder), the fees of
// the whole set are charged before any transaction applies (LedgerManagerImpl::processFeesSeqNums)
// and then each transaction applies (TransactionFrame::apply, FeeBumpTransactionFrame::apply).
// Every transaction of the set is included, SUCCESS or FAILED: none is dropped at apply.

// availableBalance is core's getAvailableBalance (src/transactions/TransactionUtils.cpp): the
// balance above the account's reserve (no liabilities are modelled); negative below it.
func (n *Network) availableBalance(a *account) int64 {
	return a.balance - minBalance(a, n.opts.BaseReserve)
}

// queuedFees is the sum of the full fees of the queued transactions whose fee source is
// feeSource: TransactionQueue's AccountState.mTotalFees, kept per fee source (a fee bump's is its
// outer fee source).
func (n *Network) queuedFees(feeSource string) int64 {
	var total int64
	for _, p := range n.queue {
		if p.tx.feeSource == feeSource {
			total = addSaturated(total, p.tx.fullFee())
		}
	}
	return total
}

func addSaturated(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// canPayQueuedFees is the last check of TransactionQueue::canAdd: the fee source's available
// balance, less the new transaction's full fee, must still cover the full fees of its
// transactions already queued, else ERROR txINSUFFICIENT_BALANCE. A fee bump replacing a queued
// transaction of the same fee source counts only the difference (canAdd: newFullFee -=
// currentTx->getFullFee()). The error is the transaction's createTxErrorResult: the code at the
// top level (a fee bump's too, without an inner result) and feeCharged 0. Callers hold n.mu.
func (n *Network) canPayQueuedFees(t *txInfo, replaced *pendingTx) *txError {
	acct := n.state.accounts[t.feeSource]
	if acct == nil {
		return nil // checkTx refused it already (txNO_ACCOUNT)
	}
	newFee := t.fullFee()
	if replaced != nil && replaced.tx.feeSource == t.feeSource {
		newFee -= replaced.tx.fullFee()
	}
	if n.availableBalance(acct)-newFee < n.queuedFees(t.feeSource) {
		code := xdr.TransactionResultCodeTxInsufficientBalance
		return &txError{result: simpleResult(0, code, nil), code: code}
	}
	return nil
}

// cantPayFee names the set-level refusal of TxSetUtils::getInvalidTxListWithErrors
// (TxSetValidationResult::ACCOUNT_CANT_PAY_FEE).
const cantPayFee = "fee source cannot pay the full fees of all its transactions (ACCOUNT_CANT_PAY_FEE)"

// invalidTxs is TxSetUtils::getInvalidTxListWithErrors (src/herder/TxSetUtils.cpp) over txs,
// judged by c, phase by phase: the classic transactions, then the Soroban ones
// (TxSetPhaseFrame order in TxSetFrame.cpp makeTxSetFromTransactions, and HerderImpl::
// updateTransactionQueue's classic queue before the Soroban one). Within a phase, each
// transaction's own validity first (checkValid); then every valid one whose fee source's
// available balance is below the full fees of that fee source's valid transactions counted so far
// (accountFeeMap) is invalid too. The fee map is one for both phases (protocol 26: TxSetFrame.cpp,
// ApplicableTxSetFrame::checkValid, useCrossPhaseFeeMap; the nominating node has shared it since
// the same change): a fee source's classic fees count against its Soroban transactions, not the
// other way round. It returns why each invalid one is, keyed by the pending transaction. Callers
// hold n.mu.
func (n *Network) invalidTxs(txs []*pendingTx, c checkCtx) map[*pendingTx]string {
	invalid := map[*pendingTx]string{}
	total := map[string]int64{}
	var classic, soroban []*pendingTx
	for _, p := range txs {
		if p.tx.soroban != nil {
			soroban = append(soroban, p)
		} else {
			classic = append(classic, p)
		}
	}
	for _, phase := range [][]*pendingTx{classic, soroban} {
		for _, p := range phase {
			if terr := n.checkTx(p.tx, c); terr != nil {
				invalid[p] = terr.name()
				continue
			}
			total[p.tx.feeSource] = addSaturated(total[p.tx.feeSource], p.tx.fullFee())
		}
		for _, p := range phase {
			if _, bad := invalid[p]; bad {
				continue
			}
			if acct := n.state.accounts[p.tx.feeSource]; acct == nil || n.availableBalance(acct) < total[p.tx.feeSource] {
				invalid[p] = cantPayFee
			}
		}
	}
	return invalid
}

// trimInvalidLocked is the nominating node's HerderImpl::triggerNextLedger ->
// TxSetFrame::makeTxSetFromTransactions -> TxSetUtils::trimInvalid: the candidates are judged
// against the last closed ledger's state at the closing ledger's close time and sequence (c), and
// the invalid ones leave the queue, banned (TransactionQueue::ban), never applied and charged
// nothing. It returns the valid ones, in the candidates' order. Callers hold n.mu.
func (n *Network) trimInvalidLocked(due []*pendingTx, c checkCtx, seq uint32) []*pendingTx {
	invalid := n.invalidTxs(due, c)
	set := make([]*pendingTx, 0, len(due))
	for _, p := range due {
		why, bad := invalid[p]
		if !bad {
			set = append(set, p)
			continue
		}
		delete(n.queue, p.tx.source)
		n.banAtClose(p.tx.fullHash, seq)
		p.envelope.Outcome = "dropped at ledger close: " + why
	}
	return set
}

// applyOrder is the order the set applies in. stellar-core applies the classic phase, then the
// Soroban phase (ApplicableTxSetFrame::getPhasesInApplyOrder); within the classic phase
// sortedForApplySequential takes one transaction per source account per batch (the queue holds one
// per source, so one batch) and sorts it by full hash XORed with the transaction set's hash
// (ApplyTxSorter, lessThanXored), and the Soroban phase's stages and clusters are sorted the same
// way (sortedForApplyParallel). The set's hash is a stand-in: sha256 of Options.ApplyOrderSeed,
// the ledger sequence and the set's full hashes, so the order is as unpredictable to a submitter
// as core's and the same on every run with the same seed. Options.ApplyInSubmissionOrder keeps the
// submission order.
func (n *Network) applyOrder(set []*pendingTx, seq uint32) []*pendingTx {
	out := append([]*pendingTx(nil), set...)
	if n.opts.ApplyInSubmissionOrder {
		return out
	}
	h := sha256.New()
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], n.opts.ApplyOrderSeed)
	binary.BigEndian.PutUint32(b[8:], seq)
	h.Write(b[:])
	for _, p := range set {
		h.Write(p.tx.fullRaw[:])
	}
	var setHash [32]byte
	copy(setHash[:], h.Sum(nil))
	xored := func(t *txInfo) []byte {
		x := make([]byte, 32)
		for i := range x {
			x[i] = t.fullRaw[i] ^ setHash[i]
		}
		return x
	}
	sort.SliceStable(out, func(i, j int) bool {
		si, sj := out[i].tx.soroban != nil, out[j].tx.soroban != nil
		if si != sj {
			return !si // classic phase first
		}
		return bytes.Compare(xored(out[i].tx), xored(out[j].tx)) < 0
	})
	return out
}

// applySetLocked applies the transaction set of ledger seq: it leaves the queue, the fees of all
// its transactions are charged in apply order before any applies (processFeesSeqNums: the fee
// source pays min(balance, fee), even below its reserve), then each applies in that order and is
// included, SUCCESS or FAILED (applyTx). Callers hold n.mu.
func (n *Network) applySetLocked(set []*pendingTx, seq uint32, closeTime int64) {
	ordered := n.applyOrder(set, seq)
	charged := make([]int64, len(ordered))
	for i, p := range ordered {
		delete(n.queue, p.tx.source)
		charged[i] = n.chargeFee(p.tx, seq)
	}
	for i, p := range ordered {
		rec := n.applyTx(p.tx, seq, closeTime, int32(i+1), charged[i])
		p.envelope.Outcome = "included in ledger " + itoa(int64(seq)) + ": " + rec.Status
		if rec.Status != "SUCCESS" {
			p.envelope.Outcome += " (" + rec.ResultCode + ")"
		}
	}
}

// chargeFee is TransactionFrame::processFeeSeqNum / FeeBumpTransactionFrame::processFeeSeqNum:
// the fee source pays the fee the ledger charges (chargedFee), or its whole balance if that is
// less; it may end below its reserve. Since protocol 10 the sequence number is not touched here.
// It returns what was charged.
func (n *Network) chargeFee(t *txInfo, seq uint32) int64 {
	acct := n.state.accounts[t.feeSource]
	if acct == nil {
		return 0 // trimmed at nomination (txNO_ACCOUNT); core throws "Unexpected database state"
	}
	fee := min(n.chargedFee(t), acct.balance)
	if fee <= 0 {
		return 0
	}
	n.saveAccount(seq, t.feeSource)
	acct.balance -= fee
	acct.lastModified = seq
	return fee
}

// applyFailure is a transaction of the set that fails its apply-time check
// (TransactionFrame::commonPreApply: commonValid with applying=true, then processSignatures): its
// operations do not apply and it is included FAILED with code and ops (for a fee bump, the inner
// transaction's). seqConsumed says whether commonValid got past the sequence check
// (ValidationType kInvalidUpdateSeqNum or later: processSeqNum runs).
type applyFailure struct {
	code        xdr.TransactionResultCode
	ops         []xdr.OperationResult
	seqConsumed bool
}

// applyFailureOf is terr, an apply-time check's refusal of t, as the failure t is included with.
func applyFailureOf(t *txInfo, terr *txError) *applyFailure {
	code, res := terr.code, terr.result.Result.Results
	if t.feeBump && terr.code == xdr.TransactionResultCodeTxFeeBumpInnerFailed && terr.result.Result.InnerResultPair != nil {
		code, res = terr.inner, terr.result.Result.InnerResultPair.Result.Result.Results
	}
	f := &applyFailure{code: code}
	if code == xdr.TransactionResultCodeTxFailed && res != nil {
		f.ops = *res
	}
	switch code {
	// TransactionFrame::commonValid: after isBadSeq the result is kInvalidUpdateSeqNum
	// (txBAD_MIN_SEQ_AGE_OR_GAP, txBAD_AUTH), then kInvalidPostAuth (txINSUFFICIENT_BALANCE);
	// processSignatures (opBAD_AUTH in txFAILED, txBAD_AUTH_EXTRA) and the operations' own
	// checks (txFAILED) come after processSeqNum.
	case xdr.TransactionResultCodeTxBadMinSeqAgeOrGap, xdr.TransactionResultCodeTxBadAuth,
		xdr.TransactionResultCodeTxInsufficientBalance, xdr.TransactionResultCodeTxBadAuthExtra,
		xdr.TransactionResultCodeTxFailed:
		f.seqConsumed = true
	}
	return f
}
