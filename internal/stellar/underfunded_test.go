package stellar_test

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A classic vault that lacks the asset: its payment is included FAILED op_underfunded on the
// local network as stellar-core includes it (fee charged, sequence number consumed, nothing
// moved). The service answers 503 VAULT_UNDERFUNDED with the key released, not a stored
// rejection; once the vault is funded, a retry with the same key pays exactly once. With the
// vault as the only source and with channel accounts fee-bumped by the fee account.
func TestClassicVaultUnderfundedReleasesKeyAndRetryPaysOnce(t *testing.T) {
	for _, channels := range []int{0, 2} {
		clock := vclock.New(time.Unix(2_000_000_000, 0))
		n, err := stellarsim.Start(stellarsim.Options{Clock: clock, Legacy: stellarsim.Legacy{NoVisibilityLag: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = n.Close() })
		var mu sync.Mutex
		var last time.Time
		clock.OnAdvance(func(now time.Time) {
			mu.Lock()
			defer mu.Unlock()
			if now.Sub(last) >= 5*time.Second {
				last = now
				n.CloseLedger()
			}
		})
		keys, err := stellar.GenerateKeys(0)
		if err != nil {
			t.Fatal(err)
		}
		keys.ChannelMaster = stellar.NewMasterSeed([]byte("0123456789abcdef0123456789abcdef"))
		issuer := keypair.MustRandom()
		usdc := n.IssueAsset("USDC", issuer)
		vault, wallet := keys.Vault.Address(), keypair.MustRandom().Address()
		for _, step := range []error{
			n.CreateAccount(vault, 100*unit), n.AddTrustline(vault, usdc, 0), n.Mint(vault, usdc, 1*unit),
			n.CreateAccount(keys.Fee.Address(), 100*unit), n.CreateAccount(wallet, 10*unit), n.AddTrustline(wallet, usdc, 0),
		} {
			if step != nil {
				t.Fatal(step)
			}
		}
		db, _ := dynamotest.Minidyn(t)
		store := dynamotest.NewStore(t, db)
		cfg := stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
			Assets: []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}, Keys: stellar.StaticKeys{K: keys},
			MaxFeeStroops: 1_000_000, Clock: clock}
		if channels > 0 {
			pool, err := stellar.NewChannelPool(stellar.ChannelPoolConfig{Leases: dynamo.NewChannelLeases(db, store.Table()), Count: channels, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			cfg.Channels = pool
		}
		ledger, err := stellar.NewRPCLedger(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if channels > 0 {
			if _, err := ledger.EnsureChannels(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		orch := &transfer.Orchestrator{Store: store, Ledger: ledger, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
		in := transfer.Input{ClientKey: "payout-0001", Request: transfer.Request{OperationType: transfer.Withdraw,
			WalletAddress: wallet, Amount: "5", Asset: "USDC", Stroops: 5 * unit}}
		applied := len(n.Applied())

		_, err = orch.Transfer(context.Background(), in)
		var u *transfer.UnavailableError
		if !errors.As(err, &u) || u.Code != transfer.CodeVaultUnderfunded || u.Problem().Status != 503 {
			t.Fatalf("channels %d: %v, want 503 VAULT_UNDERFUNDED", channels, err)
		}
		if _, err := store.Get(context.Background(), transfer.StoreKey(wallet, in.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("channels %d: the key is still held (%v): want it released", channels, err)
		}
		txs := n.Applied()[applied:]
		if len(txs) != 1 || txs[0].Status != "FAILED" || len(txs[0].OpResults) != 1 || txs[0].OpResults[0] != "op_underfunded" || txs[0].FeeCharged <= 0 {
			t.Fatalf("channels %d: applied %+v, want one payment included FAILED op_underfunded", channels, txs)
		}

		if err := n.Mint(vault, usdc, 10*unit); err != nil { // an operator funds the vault
			t.Fatal(err)
		}
		before, _ := n.Balance(wallet, usdc)
		out, err := orch.Transfer(context.Background(), in)
		if err != nil || out.Replayed {
			t.Fatalf("channels %d: retry after funding: %+v %v", channels, out, err)
		}
		again, err := orch.Transfer(context.Background(), in)
		if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash {
			t.Fatalf("channels %d: second retry: %+v %v, want the payment replayed", channels, again, err)
		}
		if got, _ := n.Balance(wallet, usdc); got != before+5*unit {
			t.Fatalf("channels %d: wallet %d -> %d, want exactly one payment of 5", channels, before, got)
		}
		paid := 0
		for _, tx := range n.Applied()[applied:] {
			if tx.Status == "SUCCESS" {
				paid++
			}
		}
		if paid != 1 {
			t.Fatalf("channels %d: %d payments landed, want 1", channels, paid)
		}
	}
}
