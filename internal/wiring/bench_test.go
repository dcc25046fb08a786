package wiring_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
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

// newRig starts the API function of the local stack (devstack.Start, which assembles it as the
// Lambda does, on minidyn and the local network) with the vault as the only source, on a virtual
// clock shared with the network (Sleep moves it on and a ledger closes for every 5 s passed, so a
// transfer's await costs no real time), its DynamoDB requests counted from when it is built.
func newRig(tb testing.TB) *rig {
	tb.Helper()
	var counting *dynamotest.CountingClient
	st, err := devstack.Start(context.Background(), devstack.Options{
		Clock: vclock.New(time.Unix(1_900_000_000, 0)), APIOnly: true, DemoWallets: 1,
		Getenv: func(k string) string { return map[string]string{"CHANNEL_COUNT": "0"}[k] },
		WrapDynamo: func(c *dynamodb.Client) dynamo.Client {
			counting = dynamotest.NewCountingClient(c)
			return counting
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	counting.Reset()
	return &rig{svc: st.Service, cfg: st.Config, keys: st.Keys, db: counting, net: st.Network, wallet: st.Info.Wallets[0].Account}
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
