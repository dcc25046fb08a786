package stellarsim

import (
	"maps"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// applyTx applies t, a transaction of ledger seq's set whose fee (charged, stroops) was charged
// with the set's (applySetLocked), and includes it in the ledger, SUCCESS or FAILED. Callers hold
// n.mu.
//
// It is judged again first, as stellar-core applies it: TransactionFrame::commonPreApply runs
// commonValid with applying=true (the closing ledger's close time and sequence, no offsets; the
// fee already charged, so the source fails txINSUFFICIENT_BALANCE only once below its reserve)
// and processSignatures; FeeBumpTransactionFrame::apply judges only the inner transaction, with
// chargeFee false (its fee source is not judged again, even if it was charged short). A
// transaction that fails there is included FAILED with that code, its operations not applied, its
// sequence number consumed once past the sequence check (applyFailureOf). Otherwise its sequence
// number is consumed and its operations apply all-or-nothing, as
// TransactionFrame::applyOperations (src/transactions/TransactionFrame.cpp) applies them: each
// operation in its own scope nested in the transaction's (LedgerTxn ltxOp(ltxTx)), kept only if
// it succeeded (protocol 14 and later), so each later operation is judged after the earlier ones
// applied; every operation runs and gets its result even after one failed; the transaction's
// scope is committed only if all succeeded, else the result is txFAILED with every operation's
// result and nothing of it moved (the fee stays charged, the sequence number consumed).
func (n *Network) applyTx(t *txInfo, seq uint32, closeTime int64, order int32, charged int64) *AppliedTx {
	fee := charged
	var failed *applyFailure
	if terr := n.checkTx(t, checkCtx{closeTime: closeTime, ledgerSeq: seq, applying: true}); terr != nil {
		failed = applyFailureOf(t, terr)
	}
	if failed == nil || failed.seqConsumed {
		n.saveAccount(seq, t.source)
		if src := n.state.accounts[t.source]; src != nil {
			src.seq = t.seq
			src.lastModified = seq
		}
	}

	v := newView(n.state)
	ac := &applyCtx{n: n, v: v, t: t, ledger: seq, closeTime: closeTime, sponsors: map[string]string{}}
	opResults := make([]xdr.OperationResult, len(t.ops))
	ok := true
	opChanges := make([]xdr.LedgerEntryChanges, len(t.ops))
	opEvents := make([][]xdr.ContractEvent, len(t.ops))
	if failed == nil {
		for i, op := range t.ops {
			ac.v = v.child()
			sponsors := maps.Clone(ac.sponsors)
			ac.changes, ac.events = nil, nil
			r, good := ac.applyOp(op)
			opResults[i] = r
			opChanges[i], opEvents[i] = ac.changes, ac.events
			ok = ok && good
			if good {
				ac.v.merge()
			} else {
				ac.sponsors = sponsors
			}
		}
		ac.v = v
	}
	code := xdr.TransactionResultCodeTxSuccess
	switch {
	case failed != nil:
		code, opResults = failed.code, failed.ops
	case !ok:
		code = xdr.TransactionResultCodeTxFailed
	case len(ac.sponsors) > 0:
		code = xdr.TransactionResultCodeTxBadSponsorship
		opResults = nil
	default:
		v.commit(seq, n)
	}
	// Protocol 23: the unused refundable resource fee goes back to the fee
	// source (TransactionFrame::refundSorobanFee), never more than was charged.
	txEvents := feeEvent(n.passphrase, t.feeSource, charged, xdr.TransactionEventStageTransactionEventStageBeforeAllTxs)
	if refund := min(n.sorobanRefund(t, ac.refundable, code == xdr.TransactionResultCodeTxSuccess), fee); refund > 0 {
		n.state.accounts[t.feeSource].balance += refund // commit may have replaced the entry
		fee -= refund
		txEvents = append(txEvents, feeEvent(n.passphrase, t.feeSource, -refund, xdr.TransactionEventStageTransactionEventStageAfterAllTxs)...)
	}

	var result xdr.TransactionResult
	if t.feeBump {
		result = feeBumpResult(fee, t.innerRaw, code, opResults)
	} else {
		result = simpleResult(fee, code, opResults)
	}
	rec := &AppliedTx{
		Hash:             t.innerHash,
		Source:           t.source,
		FeeSource:        t.feeSource,
		Sequence:         t.seq,
		Ledger:           seq,
		CloseTime:        time.Unix(closeTime, 0).UTC(),
		ApplicationOrder: order,
		Status:           "SUCCESS",
		FeeCharged:       fee,
		ResultCode:       TxCodeName(code),
		EnvelopeXDR:      t.envXDR,
	}
	if t.feeBump {
		rec.FeeBumpHash = t.fullHash
	}
	if code != xdr.TransactionResultCodeTxSuccess {
		rec.Status = "FAILED"
	}
	if tb := t.env.TimeBounds(); tb != nil {
		rec.MaxTime = int64(tb.MaxTime)
	}
	rec.MemoType, rec.Memo = horizonMemo(t.env.Memo())
	for i, op := range t.ops {
		rec.Ops = append(rec.Ops, summarizeOp(t, op))
		if i < len(opResults) {
			rec.OpResults = append(rec.OpResults, opCodeName(opResults[i]))
		}
	}
	rec.ResultXDR, _ = xdr.MarshalBase64(result)
	if code != xdr.TransactionResultCodeTxSuccess {
		ac.ret = nil // a failed transaction returns nothing
	}
	meta := txMeta(len(t.ops), t.soroban != nil, ac.ret)
	if code == xdr.TransactionResultCodeTxSuccess {
		// A failed transaction's operations change nothing, and its meta lists no change and no
		// operation event (events.go).
		for i, ch := range opChanges {
			if len(ch) > 0 {
				meta.V4.Operations[i].Changes = ch
			}
			if len(opEvents[i]) > 0 {
				meta.V4.Operations[i].Events = opEvents[i]
			}
		}
		rec.opEvents = opEvents
	}
	if len(txEvents) > 0 {
		meta.V4.Events = txEvents
	}
	rec.txEvents = txEvents
	rec.ResultMetaXDR, _ = xdr.MarshalBase64(meta)

	n.applied = append(n.applied, rec)
	n.byHash[t.innerHash] = rec
	n.byHash[t.fullHash] = rec
	n.banApplied(t.fullHash, seq)
	return rec
}

// applyCtx carries one transaction's operations through apply.
type applyCtx struct {
	n         *Network
	v         *view
	t         *txInfo
	ledger    uint32
	closeTime int64
	sponsors  map[string]string // sponsored account -> sponsor, between Begin and End
	ret       *xdr.ScVal        // a Soroban invocation's return value, for the meta
	// refundable is the refundable resource fee the Soroban operation consumed.
	refundable int64
	// changes are the ledger-entry changes of the operation being applied, for its meta.
	changes xdr.LedgerEntryChanges
	// events are the contract events of the operation being applied (events.go).
	events []xdr.ContractEvent
}

func (ac *applyCtx) applyOp(op xdr.Operation) (xdr.OperationResult, bool) {
	srcID := ac.t.opSource(op)
	src := ac.v.account(srcID)
	if src == nil {
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNoAccount}, false
	}
	reserve := ac.n.opts.BaseReserve
	switch op.Body.Type {
	case xdr.OperationTypeCreateAccount:
		return ac.createAccount(src, *op.Body.CreateAccountOp, reserve)
	case xdr.OperationTypePayment:
		return ac.payment(src, *op.Body.PaymentOp, reserve)
	case xdr.OperationTypeChangeTrust:
		return ac.changeTrust(src, *op.Body.ChangeTrustOp, reserve)
	case xdr.OperationTypeSetOptions:
		return ac.setOptions(src, *op.Body.SetOptionsOp, reserve)
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		sponsored := op.Body.BeginSponsoringFutureReservesOp.SponsoredId.Address()
		if _, ok := ac.sponsors[sponsored]; ok {
			return beginSponsoringResult(xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesAlreadySponsored), false
		}
		_, srcSponsored := ac.sponsors[srcID]
		sponsoring := false
		for _, sp := range ac.sponsors {
			if sp == sponsored {
				sponsoring = true
			}
		}
		if srcSponsored || sponsoring {
			return beginSponsoringResult(xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesRecursive), false
		}
		ac.sponsors[sponsored] = srcID
		return successResult(op.Body.Type), true
	case xdr.OperationTypeEndSponsoringFutureReserves:
		if _, ok := ac.sponsors[srcID]; !ok {
			r, _ := xdr.NewEndSponsoringFutureReservesResult(xdr.EndSponsoringFutureReservesResultCodeEndSponsoringFutureReservesNotSponsored, nil)
			return opInner(xdr.OperationTypeEndSponsoringFutureReserves, r), false
		}
		delete(ac.sponsors, srcID)
		return successResult(op.Body.Type), true
	case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
		if ac.n.contracts == nil {
			return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
		}
		return ac.n.contracts.Apply(ContractContext{
			Ledger:     LedgerInfo{Sequence: ac.ledger, CloseTime: time.Unix(ac.closeTime, 0).UTC()},
			Source:     srcID,
			TxHash:     ac.t.innerHash,
			Passphrase: ac.n.passphrase,
			Balances:   viewBalances{ac.v},
			Soroban:    ac.t.soroban,
			Return:     func(v xdr.ScVal) { ac.ret = &v },
			Protocol23: !ac.n.opts.Protocol22Restore,
			Refundable: &ac.refundable,
			Emit:       func(ev xdr.ContractEvent) { ac.events = append(ac.events, ev) },
		}, op)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
}
