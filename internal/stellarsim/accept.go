package stellarsim

import (
	"encoding/hex"
	"fmt"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// txInfo is a decoded envelope with what the rules need.
type txInfo struct {
	env       xdr.TransactionEnvelope
	envXDR    string
	fullHash  string // hash of the envelope as submitted (outer hash for a fee bump)
	innerHash string // hash of the inner transaction (== fullHash when not a fee bump)
	innerRaw  [32]byte
	fullRaw   [32]byte
	feeBump   bool
	source    string // inner transaction source
	feeSource string // who pays the fee (fee-bump source, or source)
	seq       int64
	innerFee  int64
	outerFee  int64 // fee-bump fee; 0 when not a fee bump
	ops       []xdr.Operation
	// soroban is the (inner) transaction's SorobanTransactionData, nil for a
	// classic transaction; resourceFee is its declared resource fee (stroops).
	soroban     *xdr.SorobanTransactionData
	resourceFee int64
}

// decodeEnvelope parses a base64 TransactionEnvelope and hashes it with the
// network passphrase. An error means the XDR itself is unusable.
func decodeEnvelope(b64, passphrase string) (*txInfo, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &env); err != nil {
		return nil, fmt.Errorf("decoding transaction envelope: %w", err)
	}
	t := &txInfo{env: env, envXDR: b64}
	full, err := network.HashTransactionInEnvelope(env, passphrase)
	if err != nil {
		return nil, fmt.Errorf("hashing transaction envelope: %w", err)
	}
	t.fullRaw = full
	t.innerRaw = full
	if env.IsFeeBump() {
		t.feeBump = true
		inner, err := network.HashTransaction(env.FeeBump.Tx.InnerTx.V1.Tx, passphrase)
		if err != nil {
			return nil, fmt.Errorf("hashing inner transaction: %w", err)
		}
		t.innerRaw = inner
		t.outerFee = env.FeeBumpFee()
		t.feeSource = env.FeeBumpAccount().ToAccountId().Address()
	}
	t.fullHash = hex.EncodeToString(t.fullRaw[:])
	t.innerHash = hex.EncodeToString(t.innerRaw[:])
	t.source = env.SourceAccount().ToAccountId().Address()
	if !t.feeBump {
		t.feeSource = t.source
	}
	t.seq = env.SeqNum()
	t.innerFee = int64(env.Fee())
	t.ops = env.Operations()
	if t.soroban = sorobanData(env); t.soroban != nil {
		t.resourceFee = int64(t.soroban.ResourceFee)
	}
	return t, nil
}

// sorobanData is the (inner) transaction's Soroban extension, if any.
func sorobanData(env xdr.TransactionEnvelope) *xdr.SorobanTransactionData {
	var tx *xdr.Transaction
	switch {
	case env.IsFeeBump() && env.FeeBump.Tx.InnerTx.V1 != nil:
		tx = &env.FeeBump.Tx.InnerTx.V1.Tx
	case env.V1 != nil:
		tx = &env.V1.Tx
	default:
		return nil
	}
	if tx.Ext.V != 1 {
		return nil
	}
	return tx.Ext.SorobanData
}

// isSorobanOp reports whether op is one of the three Soroban operations.
func isSorobanOp(op xdr.Operation) bool {
	switch op.Body.Type {
	case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
		return true
	}
	return false
}

// opSource is the account an operation acts for.
func (t *txInfo) opSource(op xdr.Operation) string {
	if op.SourceAccount != nil {
		return op.SourceAccount.ToAccountId().Address()
	}
	return t.source
}

// feeRate is the inclusion fee per operation (the fee minus the declared
// Soroban resource fee), counting the fee-bump wrapper as one more op (that
// is how core compares a fee bump against what it replaces).
func (t *txInfo) feeRate() float64 {
	if t.feeBump {
		return float64(t.outerFee-t.resourceFee) / float64(len(t.ops)+1)
	}
	return t.innerRate()
}

// innerRate is the inner transaction's inclusion fee per operation.
func (t *txInfo) innerRate() float64 {
	return float64(t.innerFee-t.resourceFee) / float64(max(len(t.ops), 1))
}

// checkCtx is the ledger a transaction is judged against: the next one at
// submission, the closing one at apply.
type checkCtx struct {
	closeTime int64  // unix seconds
	ledgerSeq uint32 // sequence of the ledger it would be in
}

// sigSet tracks which signatures of a list were used, to spot extras.
type sigSet struct {
	hash [32]byte
	sigs []xdr.DecoratedSignature
	used []bool
}

func newSigSet(hash [32]byte, sigs []xdr.DecoratedSignature) *sigSet {
	return &sigSet{hash: hash, sigs: sigs, used: make([]bool, len(sigs))}
}

// signedBy reports whether address's master key signed the hash. Accounts
// here have only the master key, weight 1, thresholds 0: one signature is enough.
func (s *sigSet) signedBy(address string) bool {
	kp, err := keypair.ParseAddress(address)
	if err != nil {
		return false
	}
	hint := kp.Hint()
	for i, sig := range s.sigs {
		if s.used[i] || sig.Hint != xdr.SignatureHint(hint) {
			continue
		}
		if kp.Verify(s.hash[:], sig.Signature) == nil {
			s.used[i] = true
			return true
		}
	}
	// A key may sign once and be required several times (tx and op source).
	for i, sig := range s.sigs {
		if s.used[i] && sig.Hint == xdr.SignatureHint(hint) && kp.Verify(s.hash[:], sig.Signature) == nil {
			return true
		}
	}
	return false
}

func (s *sigSet) allUsed() bool {
	for _, u := range s.used {
		if !u {
			return false
		}
	}
	return true
}

// txError is a transaction refused or dropped before inclusion.
type txError struct {
	result xdr.TransactionResult
	code   xdr.TransactionResultCode // the outer code
	inner  xdr.TransactionResultCode // for txFEE_BUMP_INNER_FAILED
}

func (e *txError) name() string {
	if e.code == xdr.TransactionResultCodeTxFeeBumpInnerFailed {
		return TxCodeName(e.code) + "/" + TxCodeName(e.inner)
	}
	return TxCodeName(e.code)
}

// simpleResult builds a TransactionResult with a void or op-results arm.
func simpleResult(fee int64, code xdr.TransactionResultCode, ops []xdr.OperationResult) xdr.TransactionResult {
	r := xdr.TransactionResult{FeeCharged: xdr.Int64(fee)}
	r.Result.Code = code
	if code == xdr.TransactionResultCodeTxSuccess || code == xdr.TransactionResultCodeTxFailed {
		if ops == nil {
			ops = []xdr.OperationResult{}
		}
		r.Result.Results = &ops
	}
	return r
}

// feeBumpResult wraps an inner outcome the way core reports fee bumps.
func feeBumpResult(outerFee int64, innerHash [32]byte, innerCode xdr.TransactionResultCode, ops []xdr.OperationResult) xdr.TransactionResult {
	code := xdr.TransactionResultCodeTxFeeBumpInnerSuccess
	if innerCode != xdr.TransactionResultCodeTxSuccess {
		code = xdr.TransactionResultCodeTxFeeBumpInnerFailed
	}
	inner := xdr.InnerTransactionResult{}
	inner.Result.Code = innerCode
	if innerCode == xdr.TransactionResultCodeTxSuccess || innerCode == xdr.TransactionResultCodeTxFailed {
		if ops == nil {
			ops = []xdr.OperationResult{}
		}
		inner.Result.Results = &ops
	}
	r := xdr.TransactionResult{FeeCharged: xdr.Int64(outerFee)}
	r.Result.Code = code
	r.Result.InnerResultPair = &xdr.InnerTransactionResultPair{TransactionHash: xdr.Hash(innerHash), Result: inner}
	return r
}

// chargedFee is what core charges at apply without surge pricing: base fee
// per operation (plus one for the fee-bump wrapper), capped by the bid, plus
// the whole declared Soroban resource fee (the refund of unused refundable
// resources is not modelled).
func (n *Network) chargedFee(t *txInfo) int64 {
	if t.feeBump {
		return min(t.outerFee-t.resourceFee, n.opts.BaseFee*int64(len(t.ops)+1)) + t.resourceFee
	}
	return min(t.innerFee-t.resourceFee, n.opts.BaseFee*int64(len(t.ops))) + t.resourceFee
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
	if !outer.signedBy(t.feeSource) {
		return fail(xdr.TransactionResultCodeTxBadAuth)
	}
	if feeAcct.balance-minBalance(feeAcct, n.opts.BaseReserve) < t.outerFee {
		return fail(xdr.TransactionResultCodeTxInsufficientBalance)
	}
	if code, ops := n.checkInner(t, c, false); code != xdr.TransactionResultCodeTxSuccess {
		return &txError{result: feeBumpResult(fee, t.innerRaw, code, ops), code: xdr.TransactionResultCodeTxFeeBumpInnerFailed, inner: code}
	}
	if !outer.allUsed() {
		return fail(xdr.TransactionResultCodeTxBadAuthExtra)
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
	if t.resourceFee < 0 || (chargeFee && t.resourceFee > t.innerFee) {
		return xdr.TransactionResultCodeTxSorobanInvalid, nil
	}
	if tb := t.env.TimeBounds(); tb != nil {
		if tb.MinTime != 0 && int64(tb.MinTime) > c.closeTime {
			return xdr.TransactionResultCodeTxTooEarly, nil
		}
		if tb.MaxTime != 0 && int64(tb.MaxTime) < c.closeTime {
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
	if t.seq != src.seq+1 {
		return xdr.TransactionResultCodeTxBadSeq, nil
	}
	sigs := newSigSet(t.innerRaw, t.env.Signatures())
	if !sigs.signedBy(t.source) {
		return xdr.TransactionResultCodeTxBadAuth, nil
	}
	if chargeFee && src.balance-minBalance(src, n.opts.BaseReserve) < t.innerFee {
		return xdr.TransactionResultCodeTxInsufficientBalance, nil
	}
	results := make([]xdr.OperationResult, len(t.ops))
	ok := true
	for i, op := range t.ops {
		opSrc := t.opSource(op)
		if opSrc != t.source && !sigs.signedBy(opSrc) {
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
