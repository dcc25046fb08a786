package stellar

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// chain is what Prepare reads from the network; each backend (RPC, Horizon) provides it.
type chain interface {
	// sequence returns account's current sequence number; a missing account is a
	// *transfer.UnavailableError wrapping ErrAccountMissing.
	sequence(ctx context.Context, account string) (int64, error)
	// latest returns the latest closed ledger's sequence and close time.
	latest(ctx context.Context) (uint32, time.Time, error)
	// inclusionFee returns the network's recent inclusion fee per operation at percentile p
	// (10, 20, ..., 90, 95 or 99), in stroops.
	inclusionFee(ctx context.Context, p int) (int64, error)
}

// common is the configuration both backends share.
type common struct {
	passphrase     string
	vaultAccount   string
	assets         map[string]txnbuild.CreditAsset
	baseFeeStroops int64
	maxFeeStroops  int64
	feePercentile  int
	keys           KeySource
	source         source
	clock          transfer.Clock
	fees           *feeCache
}

// newCommon checks the shared configuration.
func newCommon(passphrase, vault string, assets []txnbuild.CreditAsset, baseFee, maxFee int64, percentile int,
	keys KeySource, pool *ChannelPool, clock transfer.Clock) (*common, error) {
	if passphrase == "" {
		return nil, errors.New("stellar: a network passphrase is required")
	}
	if !strkey.IsValidEd25519PublicKey(vault) {
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
	m := map[string]txnbuild.CreditAsset{}
	for _, a := range assets {
		code := strings.ToUpper(a.Code)
		if len(code) == 0 || len(code) > 12 {
			return nil, fmt.Errorf("stellar: asset code %q must be 1 to 12 characters", a.Code)
		}
		if !strkey.IsValidEd25519PublicKey(a.Issuer) {
			return nil, fmt.Errorf("stellar: asset %s: the issuer is not a G... account", code)
		}
		if _, dup := m[code]; dup {
			return nil, fmt.Errorf("stellar: asset %s is configured twice", code)
		}
		m[code] = txnbuild.CreditAsset{Code: a.Code, Issuer: a.Issuer}
	}
	if len(m) == 0 {
		return nil, errors.New("stellar: at least one asset is required")
	}
	if clock == nil {
		clock = transfer.SystemClock{}
	}
	c := &common{passphrase: passphrase, vaultAccount: vault, assets: m, baseFeeStroops: baseFee, maxFeeStroops: maxFee,
		feePercentile: percentile, keys: keys, source: vaultSource{account: vault}, clock: clock, fees: &feeCache{}}
	if pool != nil {
		c.source = pool
	}
	return c, nil
}

func notSupported(detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Status: http.StatusUnprocessableEntity, Field: "operationType", Detail: detail}
}

// prepare validates req, acquires a transaction source, and builds and signs the envelope (see
// RPCLedger.Prepare for the contract).
func (c *common) prepare(ctx context.Context, ch chain, req transfer.Request, maxTime time.Time) (transfer.Envelope, error) {
	switch req.OperationType {
	case transfer.Withdraw:
	case transfer.Deposit:
		return transfer.Envelope{}, notSupported("deposits need a vault contract (Soroban), which this deployment does not have yet; only withdrawals are supported")
	default:
		return transfer.Envelope{}, notSupported(fmt.Sprintf("operation %q is not supported", req.OperationType))
	}
	switch {
	case strkey.IsValidEd25519PublicKey(req.WalletAddress):
	case strkey.IsValidContractAddress(req.WalletAddress):
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: "withdrawals to contract addresses (C...) need a vault contract (Soroban), which this deployment does not have yet; use a G... account"}
	default:
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: "walletAddress must be a G... account"}
	}
	asset, ok := c.assets[strings.ToUpper(req.Asset)]
	if !ok {
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAsset, Status: http.StatusUnprocessableEntity, Field: "asset",
			Detail: fmt.Sprintf("asset %q is not configured on this ledger", req.Asset)}
	}
	if req.Stroops <= 0 {
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAmount, Status: http.StatusUnprocessableEntity, Field: "amount",
			Detail: "amount must be greater than zero"}
	}
	// A payment from the vault to itself only burns a fee, and one to the asset's issuer burns the
	// asset: neither is a withdrawal to a wallet.
	switch req.WalletAddress {
	case c.vaultAccount:
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: "walletAddress is the vault itself"}
	case asset.Issuer:
		return transfer.Envelope{}, &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Status: http.StatusUnprocessableEntity, Field: "walletAddress",
			Detail: fmt.Sprintf("walletAddress is the issuer of %s; a payment to it would burn the asset", asset.Code)}
	}
	if maxTime.Unix() <= 0 {
		return transfer.Envelope{}, errors.New("stellar: Prepare needs a maxTime (timebounds must be bounded)")
	}

	return c.withSource(ctx, ch, maxTime, func(lease sourceLease) (transfer.Envelope, error) {
		return c.build(ctx, ch, lease, req, asset, maxTime)
	})
}

// withSource runs build with a transaction source (the vault, or a leased channel account) and
// returns its envelope with SubmittedLedger set and the lease bound to it; on any error the lease
// is released, since nothing was sent. Both the payment and the contract-call paths use it.
func (c *common) withSource(ctx context.Context, ch chain, maxTime time.Time, build func(sourceLease) (transfer.Envelope, error)) (transfer.Envelope, error) {
	keys, err := c.keys.Keys(ctx)
	if err != nil {
		// The key source's errors never carry seeds (ParseKeys names fields only).
		return transfer.Envelope{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "the signing keys could not be loaded", Err: err}
	}
	terms := leaseTerms{maxTime: maxTime, until: maxTime}
	if dl, ok := ctx.Deadline(); ok {
		// The invocation's deadline, on the ledger's clock (virtual in tests).
		terms.until = c.clock.Now().Add(time.Until(dl))
	}
	var latest uint32
	if c.source.needsLedgerFirst() {
		// The latest ledger is read before the lease: its close time decides whether an earlier
		// in-doubt envelope's quarantine is over, and it is an earlier (so safer) SubmittedLedger.
		if latest, terms.ledgerClose, err = ch.latest(ctx); err != nil {
			return transfer.Envelope{}, err
		}
	}
	lease, err := c.source.acquire(ctx, keys, terms)
	if err != nil {
		var ue *transfer.UnavailableError
		if errors.As(err, &ue) || ctx.Err() != nil {
			return transfer.Envelope{}, err
		}
		return transfer.Envelope{}, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "no transaction source is available", Err: err}
	}
	env, err := build(lease)
	if err == nil && latest == 0 {
		latest, _, err = ch.latest(ctx)
	}
	if err != nil {
		c.source.release(ctx, lease, transfer.Envelope{Channel: lease.account})
		return transfer.Envelope{}, err
	}
	env.SubmittedLedger = latest
	c.source.bind(lease, env)
	return env, nil
}

// build reads the source's sequence number from the network (never from a cache: a stale one
// would be refused with txBAD_SEQ), builds the payment, signs it, and wraps it in a fee bump when
// the lease has a fee source.
func (c *common) build(ctx context.Context, ch chain, lease sourceLease, req transfer.Request, asset txnbuild.CreditAsset, maxTime time.Time) (transfer.Envelope, error) {
	seq, err := ch.sequence(ctx, lease.account)
	if err != nil {
		return transfer.Envelope{}, err
	}
	ops := []txnbuild.Operation{&txnbuild.Payment{
		Destination:   req.WalletAddress,
		Amount:        amount.StringFromInt64(req.Stroops),
		Asset:         asset,
		SourceAccount: lease.opSource,
	}}
	feeBumped := lease.feeSource != nil
	rate, err := c.feeRate(ctx, ch, len(ops), feeBumped)
	if err != nil {
		return transfer.Envelope{}, err
	}
	innerRate := rate
	if feeBumped {
		// The fee account pays; the inner transaction only has to offer the minimum.
		innerRate = c.baseFeeStroops
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: lease.account, Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           ops,
		BaseFee:              innerRate,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime.Unix())},
	})
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the transaction: %w", err)
	}
	return c.seal(tx, lease, rate, maxTime, feeBumped)
}

// seal signs tx with the lease's signers and, when feeBumped, wraps it in a fee bump paid and
// signed by the lease's fee source at rate stroops per operation slot (CAP-15). It returns the
// envelope: XDR, inner (and outer) hash, maxTime (epoch seconds), channel and the most it can
// charge, in stroops.
func (c *common) seal(tx *txnbuild.Transaction, lease sourceLease, rate int64, maxTime time.Time, feeBumped bool) (transfer.Envelope, error) {
	tx, err := tx.Sign(c.passphrase, lease.signers...)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: signing the transaction: %w", err)
	}
	inner, err := tx.HashHex(c.passphrase)
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: hashing the transaction: %w", err)
	}
	env := transfer.Envelope{InnerHash: inner, MaxTime: maxTime.Unix(), Channel: lease.account, FeeStroops: tx.MaxFee()}
	if !feeBumped {
		if env.XDR, err = tx.Base64(); err != nil {
			return transfer.Envelope{}, fmt.Errorf("stellar: encoding the envelope: %w", err)
		}
		return env, nil
	}
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{
		Inner: tx, FeeAccount: lease.feeSource.Address(), BaseFee: rate,
	})
	if err != nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: building the fee bump: %w", err)
	}
	if fb, err = fb.Sign(c.passphrase, lease.feeSource); err != nil {
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
