package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// checkCtx is the ledger a transaction is judged against: at submission the
// last closed one's close time with core's upper-bound offset and the next
// sequence (submitCtx), at apply the closing one.
type checkCtx struct {
	closeTime   int64  // unix seconds
	upperOffset int64  // seconds added to closeTime for the maxTime check (TransactionFrame::isTooLate)
	ledgerSeq   uint32 // sequence of the ledger it would be in
	// applying is the check of a transaction of the set as it is applied (applyTx), its fee
	// already charged with the set's: a transaction's source fails txINSUFFICIENT_BALANCE only
	// below its reserve (TransactionFrame::commonValid: feeToPay 0 when applying), and a fee
	// bump's outer transaction is not judged at all (FeeBumpTransactionFrame::apply applies the
	// inner transaction with chargeFee false).
	applying bool
}

// checkTx applies stellar-core's validity rules in core's order. nil means valid.
// Callers hold n.mu.
func (n *Network) checkTx(t *txInfo, c checkCtx) *txError {
	fee := n.chargedFee(t)
	if !t.feeBump {
		code, ops := n.checkInner(t, c, true)
		if code == xdr.TransactionResultCodeTxSuccess {
			return nil
		}
		return &txError{result: simpleResult(fee, code, ops), code: code}
	}
	if c.applying {
		if code, ops := n.checkInner(t, c, false); code != xdr.TransactionResultCodeTxSuccess {
			return &txError{result: feeBumpResult(fee, t.innerRaw, code, ops), code: xdr.TransactionResultCodeTxFeeBumpInnerFailed, inner: code}
		}
		return nil
	}
	fail := func(code xdr.TransactionResultCode) *txError {
		return &txError{result: simpleResult(fee, code, nil), code: code}
	}
	minFee := n.opts.BaseFee*int64(len(t.ops)+1) + t.resourceFee
	if t.outerFee < minFee || t.feeRate() < t.innerRate() {
		return fail(xdr.TransactionResultCodeTxInsufficientFee)
	}
	feeAcct := n.state.accounts[t.feeSource]
	if feeAcct == nil {
		return fail(xdr.TransactionResultCodeTxNoAccount)
	}
	outer := newSigSet(t.fullRaw, t.env.FeeBumpSignatures())
	// FeeBumpTransactionFrame::commonValid: the fee source's low threshold.
	if !outer.authorizes(t.feeSource, feeAcct, thLow) {
		return fail(xdr.TransactionResultCodeTxBadAuth)
	}
	if feeAcct.balance-minBalance(feeAcct, n.opts.BaseReserve) < t.outerFee {
		return fail(xdr.TransactionResultCodeTxInsufficientBalance)
	}
	// FeeBumpTransactionFrame::checkValid (protocol 26, CAP-77): a frozen fee source, after its own
	// checks and before the extra signatures.
	if n.accountFrozen(t.feeSource) {
		return fail(xdr.TransactionResultCodeTxFrozenKeyAccessed)
	}
	// FeeBumpTransactionFrame::checkValidImpl: the outer signatures' extras are judged before the
	// inner transaction.
	if !outer.allUsed() {
		return fail(xdr.TransactionResultCodeTxBadAuthExtra)
	}
	if code, ops := n.checkInner(t, c, false); code != xdr.TransactionResultCodeTxSuccess {
		return &txError{result: feeBumpResult(fee, t.innerRaw, code, ops), code: xdr.TransactionResultCodeTxFeeBumpInnerFailed, inner: code}
	}
	return nil
}

// checkInner validates the (inner) transaction. chargeFee is false for the
// inner transaction of a fee bump, whose own fee and balance are not checked.
func (n *Network) checkInner(t *txInfo, c checkCtx, chargeFee bool) (xdr.TransactionResultCode, []xdr.OperationResult) {
	if len(t.ops) == 0 {
		return xdr.TransactionResultCodeTxMissingOperation, nil
	}
	age, gap := t.env.MinSeqAge(), t.env.MinSeqLedgerGap()
	if len(t.ops) > 100 || t.env.MinSeqNum() != nil || (age != nil && *age != 0) ||
		(gap != nil && *gap != 0) || len(t.env.ExtraSigners()) > 0 {
		// Preconditions beyond time and ledger bounds are not modelled: refuse them loudly.
		return xdr.TransactionResultCodeTxMalformed, nil
	}
	soroban := false
	for _, op := range t.ops {
		if isSorobanOp(op) {
			if n.contracts == nil || len(t.ops) != 1 {
				return xdr.TransactionResultCodeTxMalformed, nil
			}
			soroban = true
		}
	}
	// Core: a Soroban operation needs the Soroban extension and a classic
	// transaction must not carry one; the resource fee must fit in the fee.
	if soroban != (t.soroban != nil) {
		return xdr.TransactionResultCodeTxMalformed, nil
	}
	// TransactionFrame::validateSorobanMemo, judged in commonValidPreSeqNum from protocol 25 (so at
	// submission and again at close): an InvokeHostFunction transaction may carry no memo and no
	// muxed source, of the transaction or of the operation.
	if soroban && t.ops[0].Body.Type == xdr.OperationTypeInvokeHostFunction {
		op := t.ops[0]
		if t.env.Memo().Type != xdr.MemoTypeMemoNone || t.env.SourceAccount().Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519 ||
			(op.SourceAccount != nil && op.SourceAccount.Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519) {
			return xdr.TransactionResultCodeTxSorobanInvalid, nil
		}
	}
	if t.resourceFee < 0 || (chargeFee && t.resourceFee > t.innerFee) {
		return xdr.TransactionResultCodeTxSorobanInvalid, nil
	}
	if soroban && !n.opts.Protocol22Restore && !n.sorobanDataValid(t) {
		return xdr.TransactionResultCodeTxSorobanInvalid, nil
	}
	// TransactionFrame::isTooEarly / isTooLate (src/transactions/TransactionFrame.cpp),
	// with lower offset 0 and the upper offset of checkCtx.
	if tb := t.env.TimeBounds(); tb != nil {
		if tb.MinTime != 0 && int64(tb.MinTime) > c.closeTime {
			return xdr.TransactionResultCodeTxTooEarly, nil
		}
		if tb.MaxTime != 0 && int64(tb.MaxTime) < c.closeTime+c.upperOffset {
			return xdr.TransactionResultCodeTxTooLate, nil
		}
	}
	if lb := t.env.LedgerBounds(); lb != nil {
		if uint32(lb.MinLedger) > c.ledgerSeq {
			return xdr.TransactionResultCodeTxTooEarly, nil
		}
		if lb.MaxLedger != 0 && uint32(lb.MaxLedger) <= c.ledgerSeq {
			return xdr.TransactionResultCodeTxTooLate, nil
		}
	}
	if chargeFee && t.innerFee-t.resourceFee < n.opts.BaseFee*int64(len(t.ops)) {
		return xdr.TransactionResultCodeTxInsufficientFee, nil
	}
	src := n.state.accounts[t.source]
	if src == nil {
		return xdr.TransactionResultCodeTxNoAccount, nil
	}
	// TransactionFrame::commonValidPreSeqNum (protocol 26, CAP-77): a transaction that accesses a
	// frozen ledger key is invalid (frozen.go), before the sequence number is judged.
	if n.accessesFrozenKey(t) {
		return xdr.TransactionResultCodeTxFrozenKeyAccessed, nil
	}
	if t.seq != src.seq+1 {
		return xdr.TransactionResultCodeTxBadSeq, nil
	}
	sigs := newSigSet(t.innerRaw, t.env.Signatures())
	// TransactionFrame::commonValid: the source account's low threshold, else txBAD_AUTH.
	if !sigs.authorizes(t.source, src, thLow) {
		return xdr.TransactionResultCodeTxBadAuth, nil
	}
	// TransactionFrame::commonValid: the fee still to pay must leave the source at or above its
	// reserve; when applying it was charged already (feeToPay 0).
	feeToPay := t.innerFee
	if c.applying {
		feeToPay = 0
	}
	if chargeFee && src.balance-minBalance(src, n.opts.BaseReserve) < feeToPay {
		return xdr.TransactionResultCodeTxInsufficientBalance, nil
	}
	results := make([]xdr.OperationResult, len(t.ops))
	ok := true
	sponsored := map[string]bool{} // accounts inside a Begin/EndSponsoringFutureReserves sandwich
	for i, op := range t.ops {
		switch op.Body.Type {
		case xdr.OperationTypeBeginSponsoringFutureReserves:
			sponsored[op.Body.BeginSponsoringFutureReservesOp.SponsoredId.Address()] = true
		case xdr.OperationTypeEndSponsoringFutureReserves:
			delete(sponsored, t.opSource(op))
		case xdr.OperationTypeSetOptions:
			// A signer added inside a sandwich is sponsored (SetOptionsOpFrame::addOrChangeSigner ->
			// createSignerWithPossibleSponsorship); sponsored signers are not modelled: refused loudly.
			if so := op.Body.SetOptionsOp; so.Signer != nil && so.Signer.Weight != 0 && sponsored[t.opSource(op)] {
				results[i] = xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}
				ok = false
				continue
			}
		}
		// OperationFrame::checkSignature: the operation source's threshold at the operation's
		// level (thresholdLevel), else opBAD_AUTH; the transaction source is checked again.
		opSrc := t.opSource(op)
		if !sigs.authorizes(opSrc, n.state.accounts[opSrc], thresholdLevel(op)) {
			results[i] = xdr.OperationResult{Code: xdr.OperationResultCodeOpBadAuth}
			ok = false
			continue
		}
		r, valid := checkOp(t, op)
		results[i] = r
		ok = ok && valid
	}
	if !ok {
		return xdr.TransactionResultCodeTxFailed, results
	}
	if !sigs.allUsed() {
		return xdr.TransactionResultCodeTxBadAuthExtra, nil
	}
	return xdr.TransactionResultCodeTxSuccess, nil
}

// checkOp is each operation's stateless validity check (core's doCheckValid).
func checkOp(t *txInfo, op xdr.Operation) (xdr.OperationResult, bool) {
	src := t.opSource(op)
	switch op.Body.Type {
	case xdr.OperationTypeCreateAccount:
		b := op.Body.CreateAccountOp
		if b.StartingBalance < 0 || b.Destination.Address() == src {
			return createAccountResult(xdr.CreateAccountResultCodeCreateAccountMalformed), false
		}
	case xdr.OperationTypePayment:
		b := op.Body.PaymentOp
		if b.Amount <= 0 || !validAsset(b.Asset) {
			return paymentResult(xdr.PaymentResultCodePaymentMalformed), false
		}
	case xdr.OperationTypeChangeTrust:
		b := op.Body.ChangeTrustOp
		a, ok := changeTrustAsset(b.Line)
		if !ok || b.Limit < 0 || a.Issuer == src {
			return changeTrustResult(xdr.ChangeTrustResultCodeChangeTrustMalformed), false
		}
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		if op.Body.BeginSponsoringFutureReservesOp.SponsoredId.Address() == src {
			return beginSponsoringResult(xdr.BeginSponsoringFutureReservesResultCodeBeginSponsoringFutureReservesMalformed), false
		}
	case xdr.OperationTypeEndSponsoringFutureReserves:
	case xdr.OperationTypeSetOptions:
		return checkSetOptions(src, *op.Body.SetOptionsOp)
	case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
		// Gate is in checkInner: only reachable with a ContractHost.
	default:
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
	}
	return successResult(op.Body.Type), true
}

// validAsset is core's isAssetValid: codes are alphanumeric, zero-padded on
// the right only, and 12-character codes are longer than 4.
func validAsset(a xdr.Asset) bool {
	var raw []byte
	switch a.Type {
	case xdr.AssetTypeAssetTypeNative:
		return true
	case xdr.AssetTypeAssetTypeCreditAlphanum4:
		raw = a.AlphaNum4.AssetCode[:]
	case xdr.AssetTypeAssetTypeCreditAlphanum12:
		raw = a.AlphaNum12.AssetCode[:]
	default:
		return false
	}
	n := 0
	for n < len(raw) && raw[n] != 0 {
		c := raw[n]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
		n++
	}
	for _, c := range raw[n:] {
		if c != 0 {
			return false
		}
	}
	if a.Type == xdr.AssetTypeAssetTypeCreditAlphanum12 {
		return n > 4
	}
	return n > 0
}

// changeTrustAsset converts a ChangeTrust line; pool shares and native are not allowed.
func changeTrustAsset(line xdr.ChangeTrustAsset) (Asset, bool) {
	var x xdr.Asset
	switch line.Type {
	case xdr.AssetTypeAssetTypeCreditAlphanum4:
		x = xdr.Asset{Type: line.Type, AlphaNum4: line.AlphaNum4}
	case xdr.AssetTypeAssetTypeCreditAlphanum12:
		x = xdr.Asset{Type: line.Type, AlphaNum12: line.AlphaNum12}
	default:
		return Asset{}, false
	}
	if !validAsset(x) {
		return Asset{}, false
	}
	return assetFromXDR(x), true
}
