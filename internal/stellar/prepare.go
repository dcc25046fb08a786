package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// chain is what Prepare reads from the network; each backend (RPC, Horizon) provides it.
type chain interface {
	// sequence returns account's current sequence number; a missing account is a
	// *transfer.UnavailableError wrapping ErrAccountMissing.
	sequence(ctx context.Context, account string) (int64, error)
	// latest returns the latest closed ledger's sequence and close time.
	latest(ctx context.Context) (uint32, time.Time, error)
	// feeStats returns the network's recent inclusion fees per operation, per lane, in stroops
	// (fees.go).
	feeStats(ctx context.Context) (marketFees, error)
	// surgeShown reports whether fees, lane's distribution as feeStats read it, shows a recent
	// ledger surge priced, the base fee being base: charged above it per operation slot, read
	// as this backend's fee stats count a fee bump (surgePriced, replace.go). It may read the
	// latest ledger's transactions where the distribution cannot tell.
	surgeShown(ctx context.Context, lane feeLane, fees feeDistribution, base int64) (bool, error)
	// accounts reads the source's sequence number with what checkFunds judges: the fee account
	// and the vault's trustline (funds.go); a missing source is as for sequence.
	accounts(ctx context.Context, q accountQuery) (accountSnapshot, error)
	// baseReserve reads the latest ledger header's base reserve, in stroops (funds.go).
	baseReserve(ctx context.Context) (int64, error)
	// latestBids reads the transactions the latest closed ledger included, each with its fee
	// payer and bid (replace_own.go).
	latestBids(ctx context.Context) (laneBids, error)
}

// common is the configuration both backends share.
type common struct {
	passphrase     string
	vault          rawAddress
	vaultAccount   string // vault's canonical strkey
	assets         assetSet
	baseFeeStroops int64
	maxFeeStroops  int64
	// batchPayments is the most payments one of the deployment's envelopes holds (BATCH_SIZE, at
	// least 1): the fee guard counts another process's envelope at capFor(batchPayments).
	batchPayments int64
	feePercentile int
	keys          signing.KeySource
	source        sources.Source
	pool          *sources.ChannelPool // nil without channels
	clock         transfer.Clock
	fees          *feeCache
	guard         feeGuard     // this process's envelopes and their fees (feeguard.go)
	reserve       reserveCache // the network's base reserve (funds.go)
	bids          bidsCache    // the latest closed ledger's bids read (replace_own.go)
	// interval is the ledger interval (RPCConfig.LedgerInterval): how long a busy vault's slot is
	// waited for, and the Retry-After of a busy vault (SendResult.SourceBusy).
	interval func() time.Duration
}

// newCommon checks the shared configuration.
func newCommon(passphrase, vaultAccount string, assets []txnbuild.CreditAsset, baseFee, maxFee int64, percentile int,
	keys signing.KeySource, pool *sources.ChannelPool, clock transfer.Clock, interval func() time.Duration) (*common, error) {
	if passphrase == "" {
		return nil, errors.New("stellar: a network passphrase is required")
	}
	vault, err := decodeAccount(vaultAccount)
	if err != nil {
		// Not echoed: a misplaced secret seed would end up in the log.
		return nil, errors.New("stellar: the vault account is not a G... account")
	}
	if keys == nil {
		return nil, errors.New("stellar: a key source is required")
	}
	if baseFee == 0 {
		baseFee = txnbuild.MinBaseFee
	}
	if baseFee < txnbuild.MinBaseFee {
		return nil, fmt.Errorf("stellar: base fee %d is below the network minimum %d stroops", baseFee, txnbuild.MinBaseFee)
	}
	if maxFee != 0 && maxFee < baseFee {
		return nil, fmt.Errorf("stellar: max fee %d stroops is below the base fee %d", maxFee, baseFee)
	}
	if percentile != 0 && !validPercentile(percentile) {
		return nil, fmt.Errorf("stellar: fee percentile %d is not one of 10, 20, ..., 90, 95, 99", percentile)
	}
	set, err := newAssetSet(assets)
	if err != nil {
		return nil, err
	}
	if clock == nil {
		clock = transfer.SystemClock{}
	}
	c := &common{passphrase: passphrase, vault: vault, vaultAccount: vault.String(), assets: set, baseFeeStroops: baseFee,
		maxFeeStroops: maxFee, feePercentile: percentile, keys: keys, source: sources.NewVaultSource(vault.String(), clock, interval), clock: clock,
		fees: &feeCache{}, interval: interval}
	if pool != nil {
		c.source, c.pool = pool, pool
	}
	return c, nil
}

// sourceBusy is the transfer.SendResult.SourceBusy of a TRY_AGAIN_LATER answer to env (a
// ledger's close time as the answer reported it: lastClose). An envelope whose transaction source
// is the vault (not fee-bumped) is refused so when the vault's queue slot is taken: stellar-core
// queues one transaction per source account (TransactionQueue::canAdd), and this process holds
// the vault for one transfer at a time (sources.VaultSource), so another process's transfer or an
// in-doubt one holds it. The slot frees when that transaction is included, at the next ledger
// close: sources.BusyRetryAfter with nobody ahead. 0 for a channel's envelope, whose lease no one else holds.
func (c *common) sourceBusy(env transfer.Envelope, lastClose time.Time) time.Duration {
	if env.OuterHash != "" || env.Channel != c.vaultAccount {
		return 0
	}
	interval := sources.LedgerInterval(c.interval)
	return sources.BusyRetryAfter(0, 1, interval, sources.UntilNextClose(lastClose, c.clock.Now(), interval))
}

func notSupported(detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Kind: transfer.KindUnacceptable, Field: "operationType", Detail: detail}
}

// prepare validates req, acquires a transaction source, and builds and signs the envelope (see
// RPCLedger.Prepare for the contract).
func (c *common) prepare(ctx context.Context, ch chain, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	maxTime := terms.MaxTime
	pay, asset, keys, err := c.checkPayment(ctx, req, maxTime)
	if err != nil {
		return transfer.Envelope{}, err
	}
	return c.withSource(ctx, ch, keys, maxTime, func(lease sources.Lease) (transfer.Envelope, error) {
		return c.build(ctx, ch, lease, pay, req.Stroops, asset, terms)
	})
}

// payment is what a classic payment's envelope says beyond its source, amount and asset: where it
// goes and the transaction's memo (nil: none).
type payment struct {
	to   destination
	memo txnbuild.Memo
}

// checkPayment is what prepare refuses before it asks for a transaction source: an operation
// other than a withdrawal, a wallet that is not a G... or M... account (paymentDestination) or
// whose account is one of this service's (an M... address is judged by the account it pays), a
// memo the network would not take (txMemo), an unknown asset, an amount that is not positive, a
// maxTime unset (typed *transfer.ValidationError, or a plain error), and keys that cannot be
// loaded (SIGNING_KEYS_UNAVAILABLE). It returns the payment, the asset and the keys.
func (c *common) checkPayment(ctx context.Context, req transfer.Request, maxTime time.Time) (payment, vaultAsset, signing.Keys, error) {
	switch req.OperationType {
	case transfer.Withdraw:
	case transfer.Deposit:
		return payment{}, vaultAsset{}, signing.Keys{}, notSupported("deposits need a vault contract (Soroban), which this deployment does not have yet; only withdrawals are supported")
	default:
		return payment{}, vaultAsset{}, signing.Keys{}, notSupported(fmt.Sprintf("operation %q is not supported", req.OperationType))
	}
	to, err := paymentDestination(req)
	if err != nil {
		return payment{}, vaultAsset{}, signing.Keys{}, err
	}
	memo, err := txMemo(req.Memo)
	if err != nil {
		return payment{}, vaultAsset{}, signing.Keys{}, err
	}
	asset, ok := c.assets.find(req.Asset)
	if !ok {
		return payment{}, vaultAsset{}, signing.Keys{}, unknownAsset(req.Asset)
	}
	if req.Stroops <= 0 {
		return payment{}, vaultAsset{}, signing.Keys{}, &transfer.ValidationError{Code: transfer.CodeInvalidAmount, Kind: transfer.KindUnacceptable, Field: "amount",
			Detail: "amount must be greater than zero"}
	}
	if maxTime.Unix() <= 0 {
		return payment{}, vaultAsset{}, signing.Keys{}, errors.New("stellar: Prepare needs a maxTime (timebounds must be bounded)")
	}
	keys, err := c.loadKeys(ctx)
	if err != nil {
		return payment{}, vaultAsset{}, signing.Keys{}, err
	}
	if err := c.guardWallet(to.account, asset, keys); err != nil {
		return payment{}, vaultAsset{}, signing.Keys{}, err
	}
	return payment{to: to, memo: memo}, asset, keys, nil
}

// Admit is transfer.Admission for a ledger with channel accounts: before the call claims its
// key, whether the channel calendar has a slot for it within the wait (ChannelPool.Admit; its
// CHANNELS_BUSY, or nil with the context that carries the slot for this call's Prepare). A
// request Prepare would refuse before asking for a source (checkPayment: the client's mistake, or
// keys that cannot be loaded) is left to Prepare (ctx, nil), so it is answered with its own
// refusal, never CHANNELS_BUSY, and books no slot. Without channels it decides nothing: the
// vault's slot is this process's and decided in Prepare. A ContractLedger inherits it: a request
// its classic checks refuse (a deposit, a C... wallet) is left to its own Prepare.
func (c *common) Admit(ctx context.Context, req transfer.Request, maxTime time.Time) (context.Context, error) {
	if c.pool == nil {
		return ctx, nil
	}
	_, _, keys, err := c.checkPayment(ctx, req, maxTime)
	if err != nil {
		return ctx, nil
	}
	if keys.FeeKey() == nil || keys.VaultKey() == nil {
		// The pool refuses these keys before it books (ChannelPool.Acquire): Prepare answers
		// that, not a busy answer to retry.
		return ctx, nil
	}
	chans, err := c.pool.Channels(keys)
	if err != nil {
		return ctx, nil
	}
	return c.pool.Admit(ctx, chans, maxTime)
}

// Release is transfer.Admission's: the slot Admit set aside in ctx, if the call's Prepare did
// not lease it (the claim lost to a replay, a conflict, another call of the request), is kept
// for this process's next call (ChannelPool.Unadmit).
func (c *common) Release(ctx context.Context) {
	if c.pool != nil {
		c.pool.Unadmit(ctx)
	}
}

// loadKeys reads the signing keys; a failure is SIGNING_KEYS_UNAVAILABLE (503, nothing built).
func (c *common) loadKeys(ctx context.Context) (signing.Keys, error) {
	keys, err := c.keys.Keys(ctx)
	if err != nil {
		// The key source's errors never carry seeds (ParseKeys names fields only).
		return signing.Keys{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "the signing keys could not be loaded", Err: err}
	}
	return keys, nil
}

// withSource runs build with a transaction source (the vault, or a leased channel account) and
// returns its envelope with SubmittedLedger set and the lease bound to it; on any error the lease
// is released, since nothing was sent. Both the payment and the contract-call paths use it.
func (c *common) withSource(ctx context.Context, ch chain, keys signing.Keys, maxTime time.Time, build func(sources.Lease) (transfer.Envelope, error)) (transfer.Envelope, error) {
	terms := sources.LeaseTerms{MaxTime: maxTime, Until: maxTime, Vault: c.vaultAccount}
	if dl, ok := ctx.Deadline(); ok {
		// The invocation's deadline, on the ledger's clock (virtual in tests).
		terms.Until = c.clock.Now().Add(time.Until(dl))
	}
	// The latest ledger is read before the source is acquired: its close time decides whether an
	// earlier in-doubt envelope's channel quarantine is over and when the next ledger should
	// close (a busy source's Retry-After), and it is an earlier (so safer) SubmittedLedger.
	latest, ledgerClose, err := ch.latest(ctx)
	if err != nil {
		return transfer.Envelope{}, err
	}
	terms.LedgerClose = ledgerClose
	lease, err := c.source.Acquire(ctx, keys, terms)
	if err != nil {
		var ue *transfer.UnavailableError
		if errors.As(err, &ue) || ctx.Err() != nil {
			return transfer.Envelope{}, err
		}
		return transfer.Envelope{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "no transaction source is available", Err: err}
	}
	lease.LedgerClose = ledgerClose
	env, err := build(lease)
	if err != nil {
		c.source.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
		return transfer.Envelope{}, err
	}
	env.SubmittedLedger = latest
	c.source.Bind(lease, env)
	if lease.FeeSource != nil {
		c.guard.note(lease, env)
	}
	return env, nil
}

// build reads the source's sequence number from the network (never from a cache: a stale one
// would be refused with txBAD_SEQ), with the vault's trustline and the fee account in the same
// read, builds the payment of stroops of asset (its code as configured) to pay's destination
// (its canonical G... or M... strkey) with pay's memo, signs it, wraps it in a fee bump when the
// lease has a fee source, and refuses it before it is sent when the vault or the fee payer
// cannot pay (checkFunds).
func (c *common) build(ctx context.Context, ch chain, lease sources.Lease, pay payment, stroops int64, asset vaultAsset, terms transfer.Terms) (transfer.Envelope, error) {
	snap, err := ch.accounts(ctx, c.fundsQuery(lease, asset.credit, true))
	if err != nil {
		return transfer.Envelope{}, err
	}
	ops := []txnbuild.Operation{&txnbuild.Payment{
		Destination:   pay.to.strkey(),
		Amount:        amount.StringFromInt64(stroops),
		Asset:         asset.credit,
		SourceAccount: lease.OpSource,
	}}
	env, err := c.buildClassic(ctx, ch, lease, snap.source.seq, ops, pay.memo, terms)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if err := checkBuilt(env.XDR, pay, stroops, asset); err != nil {
		return transfer.Envelope{}, err
	}
	if err := c.checkFunds(ctx, ch, lease, snap, env, stroops, asset, true); err != nil {
		return transfer.Envelope{}, err
	}
	return env, nil
}

// buildClassic builds the classic transaction of ops from the lease's account at its sequence
// number seq + 1 with memo (nil: none) and terms' timebounds, bidding the classic lane's rate per
// operation slot (a fee bump's slot included), and seals it: signed, and fee-bumped when the lease
// has a fee source, whose fee bump pays the rate while the inner transaction offers the base fee.
func (c *common) buildClassic(ctx context.Context, ch chain, lease sources.Lease, seq int64, ops []txnbuild.Operation, memo txnbuild.Memo,
	terms transfer.Terms) (transfer.Envelope, error) {
	feeBumped := lease.FeeSource != nil
	slots := int64(len(ops))
	if feeBumped {
		slots++
	}
	rate, err := c.bidRate(ctx, ch, feeBid{lane: laneClassic, slots: slots, payments: int64(len(ops))})
	if err != nil {
		return transfer.Envelope{}, err
	}
	innerRate := rate
	if feeBumped {
		// The fee account pays; the inner transaction only has to offer the minimum.
		innerRate = c.baseFeeStroops
	} else if err := c.innerFeeFits(rate, slots); err != nil {
		return transfer.Envelope{}, err
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: lease.Account, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           ops,
		BaseFee:              innerRate,
		Memo:                 memo,
		Preconditions:        txnbuild.Preconditions{TimeBounds: timebounds(terms)},
	})
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the transaction: %w", err)
	}
	return c.seal(ctx, tx, lease, rate, terms.MaxTime, feeBumped)
}

// innerFeeFits refuses a transaction's own fee above what its fee field holds: a Transaction's
// fee is a uint32 count of stroops (Stellar-transaction.x: `uint32 fee`; txnbuild.NewTransaction
// refuses more with a plain error), where a fee bump's is an int64. Only an envelope the vault
// pays itself (no channel, no fee bump) can reach it: rate x slots above 4,294,967,295, a
// MAX_FEE_STROOPS above about 42.9M for a batch of 100. It is *transfer.UnavailableError
// FEE_ABOVE_CAP (503, nothing sent, retry after about a ledger), what a bid above the cap is, rather than an error a client
// would see as the service's own failure.
func (c *common) innerFeeFits(rate, slots int64) error {
	if rate <= 0 || slots <= 0 || rate <= math.MaxUint32/slots {
		return nil
	}
	return &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, RetryAfter: sources.LedgerInterval(c.interval).Round(time.Second),
		Detail: fmt.Sprintf("the classic lane needs %d stroops per operation; %d operations would need %d stroops, above the %d a transaction's own fee can hold (it is paid by the vault, without a fee bump); nothing was submitted",
			rate, slots, mulCapped(rate, slots), uint32(math.MaxUint32))}
}

// seal signs tx with the lease's signers and, when feeBumped, wraps it in a fee bump paid and
// signed by the lease's fee source at rate stroops per operation slot (CAP-15). It returns the
// envelope: XDR, inner (and outer) hash, maxTime (epoch seconds), channel and the most it can
// charge, in stroops. A signer that fails (KMS unreachable, access denied, throttled, a signature
// that does not verify) is *transfer.UnavailableError SIGNING_KEYS_UNAVAILABLE: nothing is sent.
func (c *common) seal(ctx context.Context, tx *txnbuild.Transaction, lease sources.Lease, rate int64, maxTime time.Time, feeBumped bool) (transfer.Envelope, error) {
	tx, err := signTx(ctx, c.passphrase, tx, lease.Signers...)
	if err != nil {
		return transfer.Envelope{}, err
	}
	inner, err := tx.HashHex(c.passphrase)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the transaction: %w", err)
	}
	env := transfer.Envelope{InnerHash: inner, MaxTime: maxTime.Unix(), Channel: lease.Account, FeeStroops: tx.MaxFee()}
	if !feeBumped {
		if env.XDR, err = tx.Base64(); err != nil {
			return transfer.Envelope{}, fmt.Errorf("stellar: encoding the envelope: %w", err)
		}
		return env, nil
	}
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{
		Inner: tx, FeeAccount: lease.FeeSource.Address(), BaseFee: rate,
	})
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the fee bump: %w", err)
	}
	hash, err := fb.Hash(c.passphrase)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the fee bump: %w", err)
	}
	sig, err := signHash(ctx, lease.FeeSource, hash)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if fb, err = fb.AddSignatureDecorated(sig); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: signing the fee bump: %w", err)
	}
	if env.OuterHash, err = fb.HashHex(c.passphrase); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the fee bump: %w", err)
	}
	if env.XDR, err = fb.Base64(); err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: encoding the envelope: %w", err)
	}
	env.FeeStroops = fb.MaxFee()
	return env, nil
}

// timebounds are terms as the transaction's timebounds {minTime, maxTime}, epoch seconds. minTime
// is the claim's (transfer.ClaimMinTime): a past instant that makes the envelope unique to its
// claim; 0 when unset.
func timebounds(terms transfer.Terms) txnbuild.TimeBounds {
	minTime := int64(0)
	if !terms.MinTime.IsZero() {
		minTime = terms.MinTime.Unix()
	}
	return txnbuild.NewTimebounds(minTime, terms.MaxTime.Unix())
}

// signTx signs tx's hash with each signer and adds the signatures, as txnbuild's Transaction.Sign
// does with keypairs; errors as signHash.
func signTx(ctx context.Context, passphrase string, tx *txnbuild.Transaction, signers ...signing.Signer) (*txnbuild.Transaction, error) {
	hash, err := tx.Hash(passphrase)
	if err != nil {
		return nil, fmt.Errorf("stellar: hashing the transaction: %w", err)
	}
	sigs := make([]xdr.DecoratedSignature, 0, len(signers))
	for _, s := range signers {
		sig, err := signHash(ctx, s, hash)
		if err != nil {
			return nil, err
		}
		sigs = append(sigs, sig)
	}
	if tx, err = tx.AddSignatureDecorated(sigs...); err != nil {
		return nil, fmt.Errorf("stellar: signing the transaction: %w", err)
	}
	return tx, nil
}

// signHash has s sign hash. A failure is *transfer.UnavailableError SIGNING_KEYS_UNAVAILABLE (503,
// nothing was sent), a KMS that did not answer before the invocation's deadline included (an
// unreachable KMS often hangs rather than refuses; it is no failure of the Stellar network, which
// the circuit breaker counts); or the context's error when the caller cancelled.
func signHash(ctx context.Context, s signing.Signer, hash [32]byte) (xdr.DecoratedSignature, error) {
	sig, err := s.SignHash(ctx, hash)
	if err == nil {
		return sig, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return xdr.DecoratedSignature{}, fmt.Errorf("stellar: signing: %w", ctx.Err())
	}
	return xdr.DecoratedSignature{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable,
		Detail: "the signing key service did not sign; nothing was submitted", Err: err}
}
