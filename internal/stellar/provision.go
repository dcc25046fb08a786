package stellar

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ChannelAccount is one channel account as EnsureChannels found or left it.
type ChannelAccount struct {
	// Account is the channel's G... address (public; safe to log).
	Account string `json:"account"`
	// Created is true when this call created it on chain.
	Created bool `json:"created"`
}

// channelsPerTx is how many channels one creation transaction makes: each new channel signs it,
// and an envelope holds at most 20 signatures (the fee account's and 19 channels').
const channelsPerTx = 19

// channelTxValidity bounds a creation transaction's timebounds.
const channelTxValidity = 2 * time.Minute

// ledgerIO is what ensureChannels needs of a backend besides chain: send and look up envelopes.
type ledgerIO interface {
	Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error)
	Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error)
}

// ensureChannels lists the pool's channel accounts and creates the missing ones on chain: a
// transaction from the fee account with, per channel, BeginSponsoringFutureReserves (the fee
// account sponsors the channel's reserve), CreateAccount with 0 XLM, and
// EndSponsoringFutureReserves (the channel's own operation), signed by the fee account and the
// new channels. It waits for each transaction to land. Channels need no XLM: the fee account
// pays their fee bumps. It is the reconcile action `channels`.
func (c *common) ensureChannels(ctx context.Context, ch chain, io ledgerIO) ([]ChannelAccount, error) {
	pool, ok := c.source.(*sources.ChannelPool)
	if !ok {
		return nil, fmt.Errorf("%w: this ledger has no channel pool (CHANNEL_COUNT and channel keys)", sources.ErrNoChannels)
	}
	keys, err := c.keys.Keys(ctx)
	if err != nil {
		return nil, &transfer.UnavailableError{Code: CodeSigningKeysUnavailable, Detail: "the signing keys could not be loaded", Err: err}
	}
	feeKey := keys.FeeKey()
	if feeKey == nil {
		return nil, fmt.Errorf("%w: no fee account key (feeSeed, or FEE_KMS_KEY_ID) to sponsor the channels", sources.ErrNoChannels)
	}
	chans, err := pool.Channels(keys)
	if err != nil {
		return nil, err
	}
	out := make([]ChannelAccount, len(chans))
	var missing []*keypair.Full
	var missingIdx []int
	for i, kp := range chans {
		out[i].Account = kp.Address()
		_, err := ch.sequence(ctx, kp.Address())
		switch {
		case errors.Is(err, ErrAccountMissing):
			missing = append(missing, kp)
			missingIdx = append(missingIdx, i)
		case err != nil:
			return nil, fmt.Errorf("stellar: reading channel %s: %w", kp.Address(), err)
		}
	}
	for start := 0; start < len(missing); start += channelsPerTx {
		batch := missing[start:min(start+channelsPerTx, len(missing))]
		if err := c.createChannels(ctx, ch, io, feeKey, batch); err != nil {
			return nil, err
		}
		for _, i := range missingIdx[start : start+len(batch)] {
			out[i].Created = true
		}
	}
	return out, nil
}

func (c *common) createChannels(ctx context.Context, ch chain, io ledgerIO, fee signing.Signer, batch []*keypair.Full) error {
	seq, err := ch.sequence(ctx, fee.Address())
	if err != nil {
		return fmt.Errorf("stellar: reading the fee account: %w", err)
	}
	var ops []txnbuild.Operation
	signers := []signing.Signer{fee}
	for _, kp := range batch {
		ops = append(ops,
			&txnbuild.BeginSponsoringFutureReserves{SponsoredID: kp.Address()},
			&txnbuild.CreateAccount{Destination: kp.Address(), Amount: "0"},
			&txnbuild.EndSponsoringFutureReserves{SourceAccount: kp.Address()},
		)
		signers = append(signers, signing.SeedSigner{KP: kp})
	}
	maxTime := c.clock.Now().Add(channelTxValidity)
	rate, err := c.bidRate(ctx, ch, feeBid{lane: laneClassic, slots: 1})
	if err != nil {
		return err
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: fee.Address(), Sequence: seq},
		IncrementSequenceNum: true,
		Operations:           ops,
		BaseFee:              rate,
		Preconditions:        txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime.Unix())},
	})
	if err != nil {
		return fmt.Errorf("stellar: building the channel creation: %w", err)
	}
	if tx, err = signTx(ctx, c.passphrase, tx, signers...); err != nil {
		return fmt.Errorf("stellar: signing the channel creation: %w", err)
	}
	env := transfer.Envelope{MaxTime: maxTime.Unix()}
	if env.InnerHash, err = tx.HashHex(c.passphrase); err != nil {
		return err
	}
	if env.XDR, err = tx.Base64(); err != nil {
		return err
	}
	res, err := io.Send(ctx, env)
	if err != nil {
		return fmt.Errorf("stellar: sending the channel creation: %w", err)
	}
	switch res.Status {
	case transfer.SendPending, transfer.SendDuplicate:
	case transfer.SendIncluded:
		return lookupOutcome(res.Included)
	default:
		return fmt.Errorf("stellar: the channel creation was refused: %s %s", res.Status, res.Code)
	}
	for {
		lk, err := io.Lookup(ctx, env)
		if err == nil && lk.Status != transfer.LookupNotFound {
			return lookupOutcome(&lk)
		}
		if err == nil && !lk.LatestLedgerCloseTime.IsZero() && lk.LatestLedgerCloseTime.Unix() > env.MaxTime {
			return errors.New("stellar: the channel creation expired without landing")
		}
		if err := c.clock.Sleep(ctx, 500*time.Millisecond); err != nil {
			return fmt.Errorf("stellar: waiting for the channel creation: %w", err)
		}
	}
}

func lookupOutcome(lk *transfer.Lookup) error {
	if lk == nil || lk.Status == transfer.LookupSuccess {
		return nil
	}
	return fmt.Errorf("stellar: the channel creation failed in ledger %d: %v", lk.Ledger, lk.ResultCodes)
}

// EnsureChannels lists the channel accounts and creates the missing ones on chain, reserves
// sponsored by the fee account (see ensureChannels). Errors wrap ErrNoChannels when no channels
// are configured.
func (l *RPCLedger) EnsureChannels(ctx context.Context) ([]ChannelAccount, error) {
	return l.ensureChannels(ctx, rpcChain{l}, l)
}
