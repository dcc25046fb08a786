package wiring

import (
	"context"
	"fmt"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// StellarLedger is the Stellar backend the service runs on: Stellar RPC or Horizon
// (STELLAR_BACKEND).
type StellarLedger interface {
	transfer.Ledger
	// EnsureChannels lists the channel accounts and creates the missing ones on chain (the
	// reconcile action `channels`).
	EnsureChannels(ctx context.Context) ([]stellar.ChannelAccount, error)
	// CheckNetwork fails if the backend serves another network than NETWORK_PASSPHRASE.
	CheckNetwork(ctx context.Context) error
	// Balances reads an account's XLM and configured assets (the scheduled sweep's Watch).
	Balances(ctx context.Context, account string) (stellar.Balances, error)
	// CheckSigners fails if a key cannot sign for the account it signs for (SignerCheck).
	SignerChecker
}

// buildLedger picks the backend and, when CHANNEL_COUNT > 0, a channel pool whose leases live in
// the transfers table.
func buildLedger(d Deps, assets []txnbuild.CreditAsset, cadence *transfer.Cadence) (StellarLedger, *sources.ChannelPool, error) {
	clock := d.Clock
	if clock == nil {
		clock = transfer.SystemClock{}
	}
	// The ledger interval that sets how long a call waits for a transaction source and the
	// Retry-After of CHANNELS_BUSY: the process-wide estimate the orchestrator's awaits keep
	// (transfer.Cadence; 5 s until it has seen two ledgers).
	ledgerInterval := cadence.Interval
	var pool *sources.ChannelPool
	// The ledger built below: the pool's admission reads the latest ledger through it when the
	// process has seen none (a new environment's first call).
	var latest transfer.LatestReader
	if d.Config.ChannelCount > 0 {
		var err error
		leases := dynamo.NewChannelLeases(d.Dynamo, d.Config.Table)
		cfg := sources.ChannelPoolConfig{
			Leases: leases, Count: d.Config.ChannelCount, Clock: clock,
			LedgerInterval: ledgerInterval, WaitLedgers: d.ChannelWaitLedgers, ReleaseTimeout: d.ChannelReleaseTimeout,
			LatestClose: func(ctx context.Context) time.Time {
				if c := cadence.Latest().CloseTime; !c.IsZero() || latest == nil {
					return c
				}
				l, err := latest.LatestLedger(ctx)
				if err != nil {
					return time.Time{}
				}
				cadence.Observe(l, clock.Now())
				return l.CloseTime
			},
		}
		// Leases are scheduled on the channel calendar (internal/stellar/sources/channelsched.go)
		// when the client can make its UpdateItem; without it, unscheduled.
		if _, ok := d.Dynamo.(dynamo.TicketClient); ok {
			cfg.Tickets = leases
		}
		pool, err = sources.NewChannelPool(cfg)
		if err != nil {
			return nil, nil, err
		}
	}
	switch d.Config.Backend {
	case "rpc":
		l, err := stellar.NewRPCLedger(stellar.RPCConfig{
			URL: d.Config.RPCURL, HTTPClient: d.HTTPClient, Passphrase: d.Config.NetworkPassphrase,
			VaultAccount: d.Config.VaultAccount, Assets: assets, MaxFeeStroops: d.Config.MaxFeeStroops,
			BatchPayments: batchPayments(d.Getenv),
			FeePercentile: d.Config.FeePercentile, Keys: d.Keys, Channels: pool, Clock: clock,
			LoadBalanced: d.Config.RPCLoadBalanced, LedgerInterval: ledgerInterval,
		})
		if err != nil {
			return nil, nil, err
		}
		latest = l
		sl, err := withVaultContract(d.Config.VaultContract, l)
		return sl, pool, err
	case "horizon":
		l, err := stellar.NewHorizonLedger(stellar.HorizonConfig{
			URL: d.Config.HorizonURL, HTTPClient: d.HTTPClient, Passphrase: d.Config.NetworkPassphrase,
			VaultAccount: d.Config.VaultAccount, Assets: assets, MaxFeeStroops: d.Config.MaxFeeStroops,
			BatchPayments: batchPayments(d.Getenv),
			FeePercentile: d.Config.FeePercentile, Keys: d.Keys, Channels: pool, Clock: clock,
			LedgerInterval: ledgerInterval,
		})
		if err == nil {
			latest = l
		}
		return l, pool, err
	default:
		return nil, nil, fmt.Errorf("STELLAR_BACKEND must be rpc or horizon, not %q", d.Config.Backend)
	}
}

// batchPayments is the most payments one of the deployment's envelopes holds: BATCH_SIZE as this
// function reads it (config.Settings), 1 without an environment.
func batchPayments(getenv config.Getenv) int {
	if getenv == nil {
		return 1
	}
	return config.Settings(getenv).BatchSize
}
