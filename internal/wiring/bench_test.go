package wiring_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

type rig struct {
	svc    *wiring.Service
	cfg    config.Config
	keys   signing.KeySource
	db     *dynamotest.CountingClient
	net    *stellarsim.Network
	wallet string
}

// newRig assembles the service as the Lambda does, on minidyn and the local network.
func newRig(tb testing.TB) *rig {
	tb.Helper()
	wallet := keypair.MustRandom()
	clock, n, keys, usdc := localNetwork(tb, wallet.Address())

	client, _ := dynamotest.Minidyn(tb)
	counting := dynamotest.NewCountingClient(client)
	store := dynamotest.NewStore(tb, counting)
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"TABLE_NAME": store.Table(), "STELLAR_RPC_URL": n.RPCURL(), "NETWORK_PASSPHRASE": n.Passphrase(),
			"VAULT_ACCOUNT": keys.Vault.Address(), "ASSETS": "USDC:" + usdc.Issuer,
		}[k]
	})
	if err != nil {
		tb.Fatal(err)
	}
	src := signing.StaticKeys{K: keys}
	svc, err := wiring.Build(wiring.Deps{Config: cfg, Getenv: func(string) string { return "" }, Dynamo: counting,
		Keys: src, Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	counting.Reset()
	return &rig{svc: svc, cfg: cfg, keys: src, db: counting, net: n, wallet: wallet.Address()}
}

// localNetwork starts the local network on a virtual clock shared with the service (Sleep moves it
// on and a ledger closes for every 5 s passed, so a transfer's await costs no real time), with a
// funded vault holding USDC and the wallets trusting it.
func localNetwork(tb testing.TB, wallets ...string) (*vclock.Clock, *stellarsim.Network, signing.Keys, stellarsim.Asset) {
	tb.Helper()
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	n, err := stellarsim.Start(stellarsim.Options{Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	n.CloseOnAdvance(clock, 5*time.Second)
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		tb.Fatal(err)
	}
	issuer, _ := n.CreateKeypair(1e11)
	usdc := n.IssueAsset("USDC", issuer)
	must(tb, n.CreateAccount(keys.Vault.Address(), 1e11))
	must(tb, n.AddTrustline(keys.Vault.Address(), usdc, 0))
	must(tb, n.Mint(keys.Vault.Address(), usdc, 1e15))
	for _, w := range wallets {
		must(tb, n.CreateAccount(w, 1e11))
		must(tb, n.AddTrustline(w, usdc, 0))
	}
	return clock, n, keys, usdc
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

func (r *rig) input(key string) transfer.Input {
	return transfer.Input{ClientKey: key, Request: transfer.Request{
		OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000,
	}}
}

// BenchmarkFreshTransfer: claim, prepare (sequence number, build, sign), attach, send, await one
// ledger close, settle. Reports DynamoDB requests and writes per transfer.
func BenchmarkFreshTransfer(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if _, err := r.svc.Orchestrator.Transfer(ctx, r.input(fmt.Sprintf("bench-fresh-%08d", i))); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(r.db.Total())/float64(b.N), "ddb-requests/op")
	b.ReportMetric(float64(r.db.Writes())/float64(b.N), "ddb-writes/op")
}

// BenchmarkReplay: a retry of a settled transfer. On DynamoDB the failed conditional put returns
// the winner (ALL_OLD), one request; minidyn omits it, so here it costs a consistent read too.
func BenchmarkReplay(b *testing.B) {
	r := newRig(b)
	ctx := context.Background()
	in := r.input("bench-replay-0001")
	if _, err := r.svc.Orchestrator.Transfer(ctx, in); err != nil {
		b.Fatal(err)
	}
	r.db.Reset()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		out, err := r.svc.Orchestrator.Transfer(ctx, in)
		if err != nil || !out.Replayed {
			b.Fatal(out, err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(r.db.Total())/float64(b.N), "ddb-requests/op")
	b.ReportMetric(float64(r.db.Writes())/float64(b.N), "ddb-writes/op")
}

// TestRequestsPerTransfer pins the request counts the benchmarks report: a fresh transfer writes
// three times (claim, attach envelope, settle); a replay writes once.
func TestRequestsPerTransfer(t *testing.T) {
	r := newRig(t)
	ctx := context.Background()
	in := r.input("count-0001")
	if _, err := r.svc.Orchestrator.Transfer(ctx, in); err != nil {
		t.Fatal(err)
	}
	if w := r.db.Writes(); w != 3 {
		t.Fatalf("a fresh transfer made %d writes (%v), want 3", w, r.db.Counts())
	}
	r.db.Reset()
	if out, err := r.svc.Orchestrator.Transfer(ctx, in); err != nil || !out.Replayed {
		t.Fatal(out, err)
	}
	if w := r.db.Writes(); w != 1 {
		t.Fatalf("a replay made %d writes (%v), want 1", w, r.db.Counts())
	}
}
