package stellar

import (
	"context"
	"fmt"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Replace-by-fee (transfer.Replacer; internal/transfer/replace.go decides when and records the
// hashes). stellar-core takes a fee bump in place of the queued transaction of the same source
// and sequence number when its inclusion fee per operation is at least FEE_MULTIPLIER (10) times
// the queued one's (src/herder/TransactionQueue.cpp, canReplaceByFee in TransactionQueue::canAdd;
// below that it answers txINSUFFICIENT_FEE naming the fee). The replaced fee bump is dropped from
// that node's queue, not banned; it may still sit in other nodes' queues and land, which the
// inner hash, shared by both, covers.

// replaceMultiplier is stellar-core's TransactionQueue::FEE_MULTIPLIER.
const replaceMultiplier = 10

// Replace wraps env's signed inner transaction in a new fee bump (transfer.Replacer; see
// common.replace).
func (l *RPCLedger) Replace(ctx context.Context, env transfer.Envelope) (transfer.Envelope, error) {
	return l.replace(ctx, rpcChain{l}, env)
}

// Replace wraps env's signed inner transaction in a new fee bump (transfer.Replacer; see
// common.replace).
func (l *HorizonLedger) Replace(ctx context.Context, env transfer.Envelope) (transfer.Envelope, error) {
	return l.replace(ctx, horizonChain{l}, env)
}

var (
	_ transfer.Replacer = (*RPCLedger)(nil)
	_ transfer.Replacer = (*HorizonLedger)(nil)
	_ transfer.Replacer = (*ContractLedger)(nil)
)

// replace wraps env's signed inner transaction in a new fee bump, paid and signed by the fee
// account, at a rate per operation slot of at least 10x env's (rounded up, so core's exact rule
// holds: new inclusion fee >= 10 x old, the slots being equal), and at least what bidRate would
// bid now (the lane's fee stats, the fee the network named). It never sends.
//
// It replaces only while the envelope's lane is surge priced (surgePriced): below that nothing
// was outbid, and an envelope that waits was lost or is late: a re-send, not a higher bid, is the
// answer. A classic envelope also only when the latest closed ledger included a classic
// transaction paid by someone other than this deployment at or above its rate per operation slot
// (outbidByOthers, replace_own.go): outbid by its own envelopes alone, a replacement would only
// outbid them in turn, so it waits at its bid. A contract call keeps the surge rule alone: the
// Soroban lane fills by several resources, skipping a call that does not fit for cheaper ones
// that do (SurgePricingUtils.cpp, popTopTxs with gaps allowed), so the bids it included do not
// say who took the room.
//
// Errors: transfer.ErrNoReplacement (wrapped) for an envelope that is not a fee bump (the vault as
// the only source: its fee is inside the signed transaction), a lane not surge priced, or a
// latest ledger with no other party's transaction at or above the envelope's rate (its reason
// "outbid only by this deployment's own transactions" when its own were);
// *transfer.UnavailableError FEE_ABOVE_CAP when the replacement rate does not fit
// MAX_FEE_STROOPS (bidRate), FEE_ACCOUNT_UNDERFUNDED when the fee account cannot fund the
// replacement as stellar-core judges one (checkReplacementFunds), SIGNING_KEYS_UNAVAILABLE; a
// plain error for an envelope that cannot be decoded, a fee account other than this process's,
// or fee stats, the latest ledger's transactions, the fee account or the channel leases that
// cannot be read.
func (c *common) replace(ctx context.Context, ch chain, env transfer.Envelope) (transfer.Envelope, error) {
	gen, err := txnbuild.TransactionFromXDR(env.XDR)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: replacing %s: decoding the envelope: %w", env.InnerHash, err)
	}
	old, ok := gen.FeeBump()
	if !ok {
		return transfer.Envelope{}, fmt.Errorf("%w: the envelope is not a fee bump (the vault is its only source)", transfer.ErrNoReplacement)
	}
	shape, err := envelopeFee(env.XDR)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: replacing %s: %w", env.InnerHash, err)
	}
	surge, err := c.surgePriced(ctx, ch, shape.lane)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if !surge {
		return transfer.Envelope{}, fmt.Errorf("%w: the %s lane is not surge priced", transfer.ErrNoReplacement, shape.lane)
	}
	keys, err := c.loadKeys(ctx)
	if err != nil {
		return transfer.Envelope{}, err
	}
	fee := keys.FeeKey()
	if fee == nil || fee.Address() != old.FeeAccount() {
		return transfer.Envelope{}, fmt.Errorf("stellar: replacing %s: its fee account %s is not this process's", env.InnerHash, old.FeeAccount())
	}
	if shape.lane == laneClassic {
		if err := c.outbidByOthers(ctx, ch, shape, fee.Address(), c.ownSources(keys)); err != nil {
			return transfer.Envelope{}, err
		}
	}
	least := ceilDiv(replaceMultiplier*(shape.fee-shape.resourceFee), shape.slots)
	rate, err := c.bidRate(ctx, ch, feeBid{lane: shape.lane, slots: shape.slots, resourceFee: shape.resourceFee, atLeast: least, payments: shape.ops})
	if err != nil {
		return transfer.Envelope{}, err
	}
	newFee := rate*shape.slots + shape.resourceFee
	if err := c.checkReplacementFunds(ctx, ch, env, fee.Address(), newFee); err != nil {
		return transfer.Envelope{}, err
	}
	fb, err := rewrap(old, fee.Address(), newFee)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the replacement fee bump: %w", err)
	}
	hash, err := fb.Hash(c.passphrase)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the replacement fee bump: %w", err)
	}
	sig, err := signHash(ctx, fee, hash)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if fb, err = fb.AddSignatureDecorated(sig); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: signing the replacement fee bump: %w", err)
	}
	next := env
	next.OuterHashes = nil
	if next.OuterHash, err = fb.HashHex(c.passphrase); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the replacement fee bump: %w", err)
	}
	if next.XDR, err = fb.Base64(); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: encoding the replacement: %w", err)
	}
	inner, err := old.InnerTransaction().HashHex(c.passphrase)
	if err != nil || inner != env.InnerHash {
		return transfer.Envelope{}, fmt.Errorf("stellar: replacing %s: the envelope's inner transaction hashes to %s", env.InnerHash, inner)
	}
	next.FeeStroops = fb.MaxFee()
	// The fee account's check before sending counts this process's queued envelopes at their
	// maximum fee (feeGuard): the replacement, once sent, can charge this much instead. Noted
	// before the send, so a replacement that is never sent only makes the check stricter.
	c.guard.noteFee(env.Channel, env.InnerHash, next.FeeStroops)
	return next, nil
}

// rewrap returns old's signed inner transaction in a new, unsigned fee bump paid by feeAccount,
// whose fee is maxFee stroops (the rate per operation slot times the slots, plus the inner
// transaction's declared resource fee). It is built on the XDR because
// txnbuild.NewFeeBumpTransaction requires the rate per slot to reach the inner transaction's fee
// per operation, which for a Soroban call includes its declared resource fee: a contract call
// could then never be replaced at 10x its inclusion fee. stellar-core compares inclusion fees
// only, the resource fee left out (src/transactions/FeeBumpTransactionFrame.cpp,
// FeeBumpTransactionFrame::commonValidPreSeqNum: the fee bump's inclusion fee against the inner
// transaction's, each per minimum inclusion fee).
func rewrap(old *txnbuild.FeeBumpTransaction, feeAccount string, maxFee int64) (*txnbuild.FeeBumpTransaction, error) {
	if maxFee <= 0 {
		return nil, fmt.Errorf("fee %d stroops", maxFee)
	}
	e := old.ToXDR()
	if e.FeeBump == nil {
		return nil, fmt.Errorf("the envelope is a %s, not a fee bump", e.Type)
	}
	var src xdr.MuxedAccount
	if err := src.SetAddress(feeAccount); err != nil {
		return nil, fmt.Errorf("fee account: %w", err)
	}
	next := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTxFeeBump, FeeBump: &xdr.FeeBumpTransactionEnvelope{
		Tx: xdr.FeeBumpTransaction{FeeSource: src, Fee: xdr.Int64(maxFee), InnerTx: e.FeeBump.Tx.InnerTx, Ext: e.FeeBump.Tx.Ext},
	}}
	b64, err := xdr.MarshalBase64(next)
	if err != nil {
		return nil, err
	}
	gen, err := txnbuild.TransactionFromXDR(b64)
	if err != nil {
		return nil, err
	}
	fb, ok := gen.FeeBump()
	if !ok {
		return nil, fmt.Errorf("the rewrapped envelope is not a fee bump")
	}
	return fb, nil
}

// surgePriced reports whether lane's recent ledgers were surge priced: the fee the network last
// named for the lane (txINSUFFICIENT_FEE, FeeHintTTL) still holds, or the lane's fee stats show a
// recent ledger that charged more than the base fee per operation slot (ch.surgeShown: the
// highest published percentile, p99, of getFeeStats over its last 10 ledgers, or over Horizon the
// highest classic clearing rate of its last 5 ledgers, horizon_fees.go). stellar-core charges
// more than the base fee only in a ledger whose lane left a valid transaction out
// (src/herder/TxSetFrame.cpp, computeLaneBaseFee); how a quiet ledger shows depends on how a fee
// bump is counted: over Horizon as core does (the base fee), in stellar-rpc's window at up to
// twice its rate (horizonChain.surgeShown, rpcChain.surgeShown).
func (c *common) surgePriced(ctx context.Context, ch chain, lane feeLane) (bool, error) {
	if c.hint(lane, c.clock.Now()).rate > c.baseFeeStroops {
		return true, nil
	}
	m, err := c.marketFees(ctx, ch)
	if err != nil {
		return false, err
	}
	return ch.surgeShown(ctx, lane, m[lane], c.baseFeeStroops)
}

// sentHashes are the hashes a send of env.XDR may be answered with: the inner hash and the outer
// hash of the fee bump XDR holds, never an earlier fee bump's (a server naming one hashed
// something else).
func sentHashes(env transfer.Envelope) []string {
	if env.OuterHash == "" {
		return []string{env.InnerHash}
	}
	return []string{env.InnerHash, env.OuterHash}
}
