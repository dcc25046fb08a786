package stellarsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// AppliedTx is one transaction included in a ledger (SUCCESS or FAILED).
type AppliedTx struct {
	Hash             string      `json:"hash"`                    // inner transaction hash
	FeeBumpHash      string      `json:"fee_bump_hash,omitempty"` // outer hash when fee-bumped
	Source           string      `json:"source"`
	FeeSource        string      `json:"fee_source"`
	Sequence         int64       `json:"sequence,string"`
	Ledger           uint32      `json:"ledger"`
	CloseTime        time.Time   `json:"close_time"`
	ApplicationOrder int32       `json:"application_order"`
	Status           string      `json:"status"` // SUCCESS or FAILED
	FeeCharged       int64       `json:"fee_charged"`
	ResultCode       string      `json:"result_code"` // of the (inner) transaction: txSUCCESS, txFAILED, txBAD_SPONSORSHIP
	OpResults        []string    `json:"op_results"`  // Horizon names: op_success, op_underfunded, ...
	Ops              []OpSummary `json:"operations"`
	MaxTime          int64       `json:"max_time,omitempty"`
	EnvelopeXDR      string      `json:"envelope_xdr"`
	ResultXDR        string      `json:"result_xdr"`
	ResultMetaXDR    string      `json:"result_meta_xdr"`
}

// OpSummary is an operation in brief.
type OpSummary struct {
	Type        string `json:"type"`
	Source      string `json:"source"`
	Destination string `json:"destination,omitempty"`
	Asset       string `json:"asset,omitempty"`
	Amount      int64  `json:"amount,omitempty"` // stroops; the limit for change_trust
}

// applyTx charges the fee, consumes the sequence number and applies the
// operations all-or-nothing. Callers hold n.mu and have validated t.
func (n *Network) applyTx(t *txInfo, seq uint32, closeTime int64, order int32) *AppliedTx {
	fee := n.chargedFee(t)
	n.saveAccount(seq, t.feeSource)
	n.saveAccount(seq, t.source)
	feeAcct := n.state.accounts[t.feeSource]
	feeAcct.balance -= min(fee, feeAcct.balance)
	feeAcct.lastModified = seq
	src := n.state.accounts[t.source]
	src.seq = t.seq
	src.lastModified = seq

	v := newView(n.state)
	ac := &applyCtx{n: n, v: v, t: t, ledger: seq, closeTime: closeTime, sponsors: map[string]string{}}
	opResults := make([]xdr.OperationResult, len(t.ops))
	ok := true
	for i, op := range t.ops {
		r, good := ac.applyOp(op)
		opResults[i] = r
		ok = ok && good
	}
	code := xdr.TransactionResultCodeTxSuccess
	switch {
	case !ok:
		code = xdr.TransactionResultCodeTxFailed
	case len(ac.sponsors) > 0:
		code = xdr.TransactionResultCodeTxBadSponsorship
		opResults = nil
	default:
		v.commit(seq, n)
	}
	// Protocol 23: the unused refundable resource fee goes back to the fee
	// source (TransactionFrame::refundSorobanFee).
	if refund := n.sorobanRefund(t, ac.refundable, code == xdr.TransactionResultCodeTxSuccess); refund > 0 {
		n.state.accounts[t.feeSource].balance += refund // commit may have replaced feeAcct
		fee -= refund
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
	for i, op := range t.ops {
		rec.Ops = append(rec.Ops, summarizeOp(t, op))
		if i < len(opResults) {
			rec.OpResults = append(rec.OpResults, opCodeName(opResults[i]))
		}
	}
	rec.ResultXDR, _ = xdr.MarshalBase64(result)
	meta := xdr.TransactionMeta{V: 3, V3: &xdr.TransactionMetaV3{
		TxChangesBefore: xdr.LedgerEntryChanges{},
		Operations:      make([]xdr.OperationMeta, len(t.ops)),
		TxChangesAfter:  xdr.LedgerEntryChanges{},
	}}
	for i := range meta.V3.Operations {
		meta.V3.Operations[i].Changes = xdr.LedgerEntryChanges{}
	}
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
	// refundable is the refundable resource fee the Soroban operation consumed.
	refundable int64
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
			Protocol23: !ac.n.opts.Legacy.RestorePreamble,
			Refundable: &ac.refundable,
		}, op)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
}

func (ac *applyCtx) createAccount(src *account, op xdr.CreateAccountOp, reserve int64) (xdr.OperationResult, bool) {
	dest := op.Destination.Address()
	if ac.v.account(dest) != nil {
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountAlreadyExist), false
	}
	start := int64(op.StartingBalance)
	sponsorID := ac.sponsors[dest]
	if sponsorID == "" {
		if start < 2*reserve {
			return createAccountResult(xdr.CreateAccountResultCodeCreateAccountLowReserve), false
		}
	} else {
		sp := ac.v.account(sponsorID)
		if sp == nil || sp.balance-minBalance(sp, reserve) < 2*reserve {
			return createAccountResult(xdr.CreateAccountResultCodeCreateAccountLowReserve), false
		}
	}
	if src.balance-minBalance(src, reserve) < start {
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountUnderfunded), false
	}
	src.balance -= start
	na := &account{id: dest, balance: start, seq: int64(ac.ledger) << 32}
	if sponsorID != "" {
		sp := ac.v.account(sponsorID)
		sp.numSponsoring += 2
		na.numSponsored = 2
		na.sponsor = sponsorID
	}
	ac.v.createAccount(na)
	return createAccountResult(xdr.CreateAccountResultCodeCreateAccountSuccess), true
}

func (ac *applyCtx) payment(src *account, op xdr.PaymentOp, reserve int64) (xdr.OperationResult, bool) {
	destID := op.Destination.ToAccountId().Address()
	amount := int64(op.Amount)
	dest := ac.v.account(destID)
	if dest == nil {
		return paymentResult(xdr.PaymentResultCodePaymentNoDestination), false
	}
	asset := assetFromXDR(op.Asset)
	if asset.IsNative() {
		if src.balance-minBalance(src, reserve) < amount {
			return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
		}
		if dest.id != src.id {
			if dest.balance > math.MaxInt64-amount {
				return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
			}
			src.balance -= amount
			dest.balance += amount
		}
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	// Destination side first, then source, as core's path payment does.
	var destTL, srcTL *trustline
	if destID != asset.Issuer {
		destTL = ac.v.trustline(destID, asset)
		if destTL == nil {
			return paymentResult(xdr.PaymentResultCodePaymentNoTrust), false
		}
		if destTL.balance > destTL.limit-amount {
			return paymentResult(xdr.PaymentResultCodePaymentLineFull), false
		}
	}
	if src.id != asset.Issuer {
		srcTL = ac.v.trustline(src.id, asset)
		if srcTL == nil {
			return paymentResult(xdr.PaymentResultCodePaymentSrcNoTrust), false
		}
		if srcTL.balance < amount {
			return paymentResult(xdr.PaymentResultCodePaymentUnderfunded), false
		}
	}
	if destTL != nil && srcTL != nil && destID == src.id {
		return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
	}
	if destTL != nil {
		destTL.balance += amount
	}
	if srcTL != nil {
		srcTL.balance -= amount
	}
	return paymentResult(xdr.PaymentResultCodePaymentSuccess), true
}

func (ac *applyCtx) changeTrust(src *account, op xdr.ChangeTrustOp, reserve int64) (xdr.OperationResult, bool) {
	asset, _ := changeTrustAsset(op.Line) // validated at submission
	limit := int64(op.Limit)
	tl := ac.v.trustline(src.id, asset)
	if tl != nil {
		if limit == 0 {
			if tl.balance != 0 {
				return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustInvalidLimit), false
			}
			src.numSubEntries--
			if tl.sponsor != "" {
				if sp := ac.v.account(tl.sponsor); sp != nil {
					sp.numSponsoring--
				}
				src.numSponsored--
			}
			ac.v.setTrustline(src.id, asset, nil)
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
		}
		if limit < tl.balance {
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustInvalidLimit), false
		}
		tl.limit = limit
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
	}
	if limit == 0 {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustTrustLineMissing), false
	}
	if ac.v.account(asset.Issuer) == nil {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustNoIssuer), false
	}
	nt := &trustline{limit: limit}
	if sponsorID := ac.sponsors[src.id]; sponsorID != "" {
		sp := ac.v.account(sponsorID)
		if sp == nil || sp.balance-minBalance(sp, reserve) < reserve {
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustLowReserve), false
		}
		sp.numSponsoring++
		src.numSponsored++
		nt.sponsor = sponsorID
	} else if src.balance < minBalance(src, reserve)+reserve {
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustLowReserve), false
	}
	src.numSubEntries++
	ac.v.setTrustline(src.id, asset, nt)
	return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess), true
}

func opInner(typ xdr.OperationType, inner any) xdr.OperationResult {
	tr, err := xdr.NewOperationResultTr(typ, inner)
	if err != nil {
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpInner, Tr: &tr}
}

func createAccountResult(c xdr.CreateAccountResultCode) xdr.OperationResult {
	r, _ := xdr.NewCreateAccountResult(c, nil)
	return opInner(xdr.OperationTypeCreateAccount, r)
}

func paymentResult(c xdr.PaymentResultCode) xdr.OperationResult {
	r, _ := xdr.NewPaymentResult(c, nil)
	return opInner(xdr.OperationTypePayment, r)
}

func changeTrustResult(c xdr.ChangeTrustResultCode) xdr.OperationResult {
	r, _ := xdr.NewChangeTrustResult(c, nil)
	return opInner(xdr.OperationTypeChangeTrust, r)
}

func beginSponsoringResult(c xdr.BeginSponsoringFutureReservesResultCode) xdr.OperationResult {
	r, _ := xdr.NewBeginSponsoringFutureReservesResult(c, nil)
	return opInner(xdr.OperationTypeBeginSponsoringFutureReserves, r)
}

// successResult is the success arm for the supported operation types.
func successResult(t xdr.OperationType) xdr.OperationResult {
	switch t {
	case xdr.OperationTypeCreateAccount:
		return createAccountResult(xdr.CreateAccountResultCodeCreateAccountSuccess)
	case xdr.OperationTypePayment:
		return paymentResult(xdr.PaymentResultCodePaymentSuccess)
	case xdr.OperationTypeChangeTrust:
		return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustSuccess)
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		return beginSponsoringResult(xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesSuccess)
	case xdr.OperationTypeEndSponsoringFutureReserves:
		r, _ := xdr.NewEndSponsoringFutureReservesResult(xdr.EndSponsoringFutureReservesResultCodeEndSponsoringFutureReservesSuccess, nil)
		return opInner(t, r)
	}
	return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}
}

var opTypeNames = map[xdr.OperationType]string{
	xdr.OperationTypeCreateAccount:                 "create_account",
	xdr.OperationTypePayment:                       "payment",
	xdr.OperationTypeChangeTrust:                   "change_trust",
	xdr.OperationTypeBeginSponsoringFutureReserves: "begin_sponsoring_future_reserves",
	xdr.OperationTypeEndSponsoringFutureReserves:   "end_sponsoring_future_reserves",
	xdr.OperationTypeInvokeHostFunction:            "invoke_host_function",
	xdr.OperationTypeExtendFootprintTtl:            "extend_footprint_ttl",
	xdr.OperationTypeRestoreFootprint:              "restore_footprint",
}

func opTypeName(t xdr.OperationType) string {
	if s, ok := opTypeNames[t]; ok {
		return s
	}
	return t.String()
}

func summarizeOp(t *txInfo, op xdr.Operation) OpSummary {
	s := OpSummary{Type: opTypeName(op.Body.Type), Source: t.opSource(op)}
	switch op.Body.Type {
	case xdr.OperationTypeCreateAccount:
		s.Destination = op.Body.CreateAccountOp.Destination.Address()
		s.Asset = "native"
		s.Amount = int64(op.Body.CreateAccountOp.StartingBalance)
	case xdr.OperationTypePayment:
		s.Destination = op.Body.PaymentOp.Destination.ToAccountId().Address()
		s.Asset = assetFromXDR(op.Body.PaymentOp.Asset).String()
		s.Amount = int64(op.Body.PaymentOp.Amount)
	case xdr.OperationTypeChangeTrust:
		if a, ok := changeTrustAsset(op.Body.ChangeTrustOp.Line); ok {
			s.Asset = a.String()
		}
		s.Amount = int64(op.Body.ChangeTrustOp.Limit)
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		s.Destination = op.Body.BeginSponsoringFutureReservesOp.SponsoredId.Address()
	}
	return s
}

// ledgerHash is a stand-in ledger hash, stable for a sequence and close time.
func ledgerHash(seq uint32, closeTime int64) string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], seq)
	binary.BigEndian.PutUint64(b[4:], uint64(closeTime))
	h := sha256.Sum256(b[:])
	return hex.EncodeToString(h[:])
}
