package wiring

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Gauges are the gauges Watch writes (metrics.Writer).
type Gauges interface {
	BalanceGauge(ctx context.Context, account, asset string, stroops int64)
	ChannelLeasesGauge(ctx context.Context, n int)
}

// BalanceReader reads an account's XLM and configured assets (StellarLedger's Balances).
type BalanceReader interface {
	Balances(ctx context.Context, account string) (stellar.Balances, error)
}

// LeaseReader reads one channel's lease (dynamo.ChannelLeases).
type LeaseReader interface {
	Channel(ctx context.Context, channel string) (dynamo.ChannelLease, error)
}

// Watch is what the scheduled sweep watches besides the in-doubt queue (reconcile.Config.Watch):
// the vault's balance of each configured asset and of XLM, the fee account's XLM, and how many
// channel accounts are leased. Every run writes a gauge for each (metrics.Balance by account and
// asset, metrics.ChannelLeasesInUse), so that the balance alarms, whose missing data breaches,
// hear from it every minute (README.md, "Monitoring"). A read that fails writes nothing for what
// it would have read and is logged (WARN): the alarm then sees missing data.
type Watch struct {
	Ledger BalanceReader
	Gauges Gauges
	// Vault is VAULT_ACCOUNT; Assets the configured codes, each written even when the vault has
	// no trustline to it (as 0: it cannot pay that asset).
	Vault  string
	Assets []string
	// Accounts returns the fee account ("" without fee bumps) and the channel accounts (none
	// without channels), read from the signing keys; nil when the function has no keys.
	Accounts func(ctx context.Context) (fee string, channels []string, err error)
	// Leases reads the channel leases; nil without channels.
	Leases LeaseReader
	// Clock judges the leases (a transfer.Clock); nil means time.Now.
	Clock  interface{ Now() time.Time }
	Logger *slog.Logger
}

// Run writes the gauges; it never fails (see Watch).
func (w *Watch) Run(ctx context.Context) {
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	if b, err := w.Ledger.Balances(ctx, w.Vault); err != nil {
		log.WarnContext(ctx, "watch: reading the vault's balances failed", "account", w.Vault, "err", err)
	} else {
		w.Gauges.BalanceGauge(ctx, metrics.AccountVault, metrics.AssetXLM, b.Native)
		for _, code := range w.Assets {
			w.Gauges.BalanceGauge(ctx, metrics.AccountVault, code, b.Credit[code])
		}
	}
	if w.Accounts == nil {
		return
	}
	fee, channels, err := w.Accounts(ctx)
	if err != nil {
		log.WarnContext(ctx, "watch: reading the signing keys' accounts failed", "err", err)
		return
	}
	if fee != "" {
		if b, err := w.Ledger.Balances(ctx, fee); err != nil {
			log.WarnContext(ctx, "watch: reading the fee account's balance failed", "account", fee, "err", err)
		} else {
			w.Gauges.BalanceGauge(ctx, metrics.AccountFee, metrics.AssetXLM, b.Native)
		}
	}
	if w.Leases == nil || len(channels) == 0 {
		return
	}
	n, err := w.leasesInUse(ctx, channels)
	if err != nil {
		log.WarnContext(ctx, "watch: reading the channel leases failed", "err", err)
		return
	}
	w.Gauges.ChannelLeasesGauge(ctx, n)
}

// leasesInUse counts the channels that cannot be leased now: a lease that has not expired, or a
// quarantine (the maxTime of the last envelope built on it) not yet passed by the local clock.
// One consistent GetItem per channel (at most 128 a minute).
func (w *Watch) leasesInUse(ctx context.Context, channels []string) (int, error) {
	now := time.Now()
	if w.Clock != nil {
		now = w.Clock.Now()
	}
	n := 0
	for _, ch := range channels {
		l, err := w.Leases.Channel(ctx, ch)
		switch {
		case errors.Is(err, transfer.ErrNotFound):
		case err != nil:
			return 0, err
		case l.LeaseExpiresAt.After(now) || l.QuarantinedUntil.After(now):
			n++
		}
	}
	return n, nil
}

// KeyAccounts is Watch.Accounts over the signing keys: the fee key's account and the channel
// accounts the pool uses (pool nil: none).
func KeyAccounts(keys signing.KeySource, pool *sources.ChannelPool) func(ctx context.Context) (string, []string, error) {
	return func(ctx context.Context) (string, []string, error) {
		k, err := keys.Keys(ctx)
		if err != nil {
			return "", nil, err
		}
		// The fee account is its key's address: the seed's, or the KMS key's (SIGNER=kms).
		fee := ""
		if f := k.FeeKey(); f != nil {
			fee = f.Address()
		}
		if pool == nil {
			return fee, nil, nil
		}
		chans, err := pool.Channels(k)
		if err != nil {
			return fee, nil, err
		}
		out := make([]string, len(chans))
		for i, c := range chans {
			out[i] = c.Address()
		}
		return fee, out, nil
	}
}
