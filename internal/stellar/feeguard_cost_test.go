package stellar_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// countingLeases is the real lease store, counting the lease reads of the fee account check.
type countingLeases struct {
	*dynamo.ChannelLeases
	reads atomic.Int64
}

func (c *countingLeases) ChannelHolder(ctx context.Context, channel string) (string, time.Time, time.Time, error) {
	c.reads.Add(1)
	return c.ChannelLeases.ChannelHolder(ctx, channel)
}

// What the fee account check costs in lease reads, with 4 channels: none while the fee account
// can pay this fee and every other channel's at MAX_FEE_STROOPS; one per other channel (3, read
// in parallel) when it is within that margin of its reserve. Every transfer pays in both cases.
func TestFeeAccountCheckReadsLeasesOnlyNearTheReserve(t *testing.T) {
	for _, near := range []bool{false, true} {
		t.Run(fmt.Sprintf("near=%v", near), func(t *testing.T) {
			const channels, maxFee = 4, 1_000_000
			clock, n := startSimNet(t, simNetOpts{})
			sim := fundedKeys(t, n, fundOpts{vaultTrustline: true, vaultUSDC: 100 * unit, fee: true})
			keys, usdc, vault, fee := sim.keys, sim.usdc, sim.vault, sim.fee
			db, _ := dynamotest.Minidyn(t)
			store := dynamotest.NewStore(t, db)
			leases := &countingLeases{ChannelLeases: dynamo.NewChannelLeases(db, store.Table())}
			pool, err := sources.NewChannelPool(sources.ChannelPoolConfig{Leases: leases, Count: channels, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			ledger, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
				Assets: []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}, Keys: signing.StaticKeys{K: keys},
				MaxFeeStroops: maxFee, Channels: pool, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ledger.EnsureChannels(context.Background()); err != nil {
				t.Fatal(err)
			}
			if near { // room for a few fees, well below (channels-1) x MAX_FEE_STROOPS above the reserve
				a, _ := n.Account(fee)
				reserve := int64(2+a.NumSubEntries+a.NumSponsoring-a.NumSponsored) * stellar.DefaultBaseReserveStroops
				if err := n.Burn(fee, stellarsim.Native, a.Balance-reserve-10_000); err != nil {
					t.Fatal(err)
				}
			}
			orch := &transfer.Orchestrator{Store: store, Ledger: ledger, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
			wallet := keypair.MustRandom().Address()
			if err := n.CreateAccount(wallet, 10*unit); err != nil {
				t.Fatal(err)
			}
			if err := n.AddTrustline(wallet, usdc, 0); err != nil {
				t.Fatal(err)
			}
			const transfers = 3
			for i := range transfers {
				if _, err := orch.Transfer(context.Background(), payout(fmt.Sprintf("payout-%d", i), wallet, 1)); err != nil {
					t.Fatalf("transfer %d: %v", i, err)
				}
			}
			want := int64(0)
			if near {
				want = transfers * (channels - 1)
			}
			if got := leases.reads.Load(); got != want {
				t.Fatalf("%d lease reads for %d transfers, want %d", got, transfers, want)
			}
		})
	}
}
