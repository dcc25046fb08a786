package devstack

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The options tests and benchmarks start the stack with: on a virtual clock (the network's ledgers
// close as it moves, so the transfer's await takes no real time), the API function alone (no
// Invoke API, no stream read-backs), its DynamoDB requests seen by WrapDynamo, through either
// backend (STELLAR_BACKEND; HORIZON_URL is the stack's Horizon).
func TestStackTestOptions(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			clock := vclock.New(time.Unix(1_900_000_000, 0))
			env := map[string]string{"CHANNEL_COUNT": "0", "STELLAR_BACKEND": backend}
			var counting *dynamotest.CountingClient
			st, err := Start(context.Background(), Options{Clock: clock, APIOnly: true, DemoWallets: 1,
				Getenv: func(k string) string { return env[k] },
				WrapDynamo: func(c *dynamodb.Client) dynamo.Client {
					counting = dynamotest.NewCountingClient(c)
					return counting
				}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = st.Close() })
			if st.Info.LambdaURL != "" || st.Info.EventsURL != "" {
				t.Errorf("APIOnly serves an Invoke API: %q %q", st.Info.LambdaURL, st.Info.EventsURL)
			}
			if st.Config.Backend != backend {
				t.Fatalf("the service's backend is %q, want %q", st.Config.Backend, backend)
			}
			counting.Reset()
			before, ledger := clock.Now(), st.Network.LatestLedger().Sequence
			out, err := st.Service.Orchestrator.Transfer(context.Background(), transfer.Input{ClientKey: "options-0001",
				Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: st.Info.Wallets[0].Account,
					Amount: "1", Asset: "USDC", Stroops: 10_000_000}})
			if err != nil || out.TransactionHash == "" {
				t.Fatalf("transfer = %+v, %v", out, err)
			}
			if !clock.Now().After(before) || st.Network.LatestLedger().Sequence <= ledger {
				t.Errorf("the virtual clock moved from %v to %v and the ledger from %d to %d; want both on",
					before, clock.Now(), ledger, st.Network.LatestLedger().Sequence)
			}
			if w := counting.Writes(); w != 3 {
				t.Errorf("WrapDynamo saw %d writes (%v), want 3 (claim, attach, settle)", w, counting.Counts())
			}
		})
	}
}
