package devstack

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
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

// sentQueue is a transfer.Queue that keeps what it is sent.
type sentQueue struct {
	mu   sync.Mutex
	sent []transfer.QueueMessage
}

func (q *sentQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, m)
	return nil
}

// countingTransport counts the round trips through it.
type countingTransport struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	t.n.Add(1)
	return t.next.RoundTrip(r)
}

// The options the load tests, the fault campaign and the emulator tests start the stack with:
// their own keys (channel accounts derived from their master seed), opening balances, network
// options and ledger closes, the Stellar transport and the servers' handlers wrapped, DynamoDB
// in-process with its client's options, an async queue of their own, and Deps to build another
// process from.
func TestStackRigOptions(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	keys.ChannelMaster = signing.NewMasterSeed([]byte("devstack-options-master-seed-0123"))
	wantChannels, err := sources.ChannelKeys(keys, 2)
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu         sync.Mutex
		served     = map[string]bool{}
		closes     int
		networkSaw stellarsim.Options
		retries    int
	)
	stellarRT := &countingTransport{}
	q := &sentQueue{}
	env := map[string]string{"CHANNEL_COUNT": "2"}
	st, err := Start(context.Background(), Options{Clock: clock, APIOnly: true, DemoWallets: 2, Keys: &keys,
		VaultUSDC: 5e14, FeeXLM: 3e12, Queue: q, InProcessDynamo: true, Getenv: func(k string) string { return env[k] },
		Network: func(o *stellarsim.Options) { networkSaw = *o; o.ExpectedCloseInterval = 5 * time.Second },
		// Every move of the clock of a second or more closes a ledger (the default waits 5 s).
		CloseLedgers: func(n *stellarsim.Network) {
			last := clock.Now()
			clock.OnAdvance(func(now time.Time) {
				mu.Lock()
				due := now.Sub(last) >= time.Second
				if due {
					last, closes = now, closes+1
				}
				mu.Unlock()
				if due {
					n.CloseLedger()
				}
			})
		},
		WrapStellar: func(next http.RoundTripper) http.RoundTripper { stellarRT.next = next; return stellarRT },
		WrapHandler: func(server string, h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				served[server] = true
				mu.Unlock()
				h.ServeHTTP(w, r)
			})
		},
		DynamoOptions: func(o *dynamodb.Options) { retries = o.RetryMaxAttempts; o.RetryMaxAttempts = 1 }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })

	if networkSaw.Clock == nil || networkSaw.Contracts == nil {
		t.Errorf("Network saw options without the clock or the contract host: %+v", networkSaw)
	}
	if retries != 0 {
		t.Errorf("DynamoOptions ran after another option set RetryMaxAttempts %d", retries)
	}
	if len(st.Info.Channels) != 2 || st.Info.Channels[0] != wantChannels[0].Address() || st.Info.Channels[1] != wantChannels[1].Address() {
		t.Errorf("channels %v, want those of Keys' master seed %s %s", st.Info.Channels, wantChannels[0].Address(), wantChannels[1].Address())
	}
	if st.Info.Vault.Account != keys.Vault.Address() || st.Info.FeeAccount.Account != keys.Fee.Address() {
		t.Errorf("vault %s fee %s, want Keys' %s %s", st.Info.Vault.Account, st.Info.FeeAccount.Account, keys.Vault.Address(), keys.Fee.Address())
	}
	usdc := stellarsim.Asset{Code: st.Info.Assets[0].Code, Issuer: st.Info.Assets[0].Issuer}
	if b, err := st.Network.Balance(keys.Vault.Address(), usdc); err != nil || b != 5e14 {
		t.Errorf("vault USDC %d, %v; want 5e14 stroops", b, err)
	}
	// The fee account paid the channels' creation: a few stroops and their reserves.
	if b, err := st.Network.Balance(keys.Fee.Address(), stellarsim.Native); err != nil || b > 3e12 || b < 3e12-100*10_000_000 {
		t.Errorf("fee account XLM %d, %v; want 3e12 stroops less the channels' creation", b, err)
	}
	if st.Info.DynamoDBEndpoint != inProcessDynamoURL || st.Minidyn == nil {
		t.Errorf("InProcessDynamo: endpoint %q, minidyn %v", st.Info.DynamoDBEndpoint, st.Minidyn)
	}
	if st.Vaults == nil || st.Info.VaultContract == "" {
		t.Errorf("no vault host or contract: %v %q", st.Vaults, st.Info.VaultContract)
	}

	// A transfer: its Stellar requests go through WrapStellar, its ledgers close on CloseLedgers'
	// rule, and DynamoDB and the network serve through WrapHandler.
	before, sentBefore, closesBefore := clock.Now(), stellarRT.n.Load(), closes
	out, err := st.Service.Orchestrator.Transfer(context.Background(), transfer.Input{ClientKey: "rig-options-0001",
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: st.Info.Wallets[0].Account,
			Amount: "1", Asset: "USDC", Stroops: 10_000_000}})
	if err != nil || out.TransactionHash == "" {
		t.Fatalf("transfer = %+v, %v", out, err)
	}
	mu.Lock()
	if stellarRT.n.Load() == sentBefore || !served["dynamodb"] || !served["stellar"] {
		t.Errorf("WrapStellar saw %d requests, WrapHandler served %v; want both servers and the requests", stellarRT.n.Load()-sentBefore, served)
	}
	// Virtual time moves in steps of at most the ledger wait's poll, so CloseLedgers' rule (a
	// second) closes more often than the 5 s default would.
	if n := closes - closesBefore; n < 2 || float64(n) < clock.Now().Sub(before).Seconds()/5+1 {
		t.Errorf("%d closes in %v of virtual time: CloseLedgers' rule did not run", n, clock.Now().Sub(before))
	}
	mu.Unlock()

	// Prefer: respond-async goes to Queue, and Deps builds another process of the deployment.
	req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(fmt.Sprintf(
		`{"operationType":"withdraw","walletAddress":%q,"amount":"2","asset":"USDC"}`, st.Info.Wallets[1].Account)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "rig-options-0002")
	req.Header.Set("Prefer", "respond-async")
	rec := httptest.NewRecorder()
	st.Service.Handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusAccepted || len(q.sent) != 1 {
		t.Errorf("async post: %d %s, %d messages queued; want 202 and one", rec.Code, rec.Body, len(q.sent))
	}
	if st.Deps.Queue != q || st.Deps.Config.VaultAccount != keys.Vault.Address() {
		t.Errorf("Deps: queue %v, vault %q", st.Deps.Queue, st.Deps.Config.VaultAccount)
	}
	if _, err := wiring.Build(st.Deps); err != nil {
		t.Errorf("wiring.Build(Deps): %v", err)
	}
}

// A stack started Beside another runs its own service (vault, fee account, channels, table) on
// the other's network, asset and wallets; closing it leaves the network to the first.
func TestStackBeside(t *testing.T) {
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	env := map[string]string{"CHANNEL_COUNT": "1"}
	getenv := func(k string) string { return env[k] }
	a, err := Start(context.Background(), Options{Clock: clock, APIOnly: true, DemoWallets: 2, Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	b, err := Start(context.Background(), Options{Clock: clock, APIOnly: true, Getenv: getenv, Beside: a})
	if err != nil {
		t.Fatal(err)
	}
	if b.Network != a.Network || b.Vaults != a.Vaults {
		t.Fatal("the stack beside started a network of its own")
	}
	if b.Info.Vault.Account == a.Info.Vault.Account || b.Info.FeeAccount.Account == a.Info.FeeAccount.Account ||
		b.Info.Channels[0] == a.Info.Channels[0] || b.Info.VaultContract == a.Info.VaultContract || b.Info.DynamoDBEndpoint == a.Info.DynamoDBEndpoint {
		t.Errorf("the stack beside shares an account, contract or table: %+v and %+v", b.Info, a.Info)
	}
	if !reflect.DeepEqual(b.Info.Assets, a.Info.Assets) || !reflect.DeepEqual(b.Info.Wallets, a.Info.Wallets) {
		t.Errorf("beside: assets %v wallets %v, want the first's %v %v", b.Info.Assets, b.Info.Wallets, a.Info.Assets, a.Info.Wallets)
	}
	usdc := stellarsim.Asset{Code: a.Info.Assets[0].Code, Issuer: a.Info.Assets[0].Issuer}
	pay := func(st *Stack, key string) {
		t.Helper()
		out, err := st.Service.Orchestrator.Transfer(context.Background(), transfer.Input{ClientKey: key,
			Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: a.Info.Wallets[1].Account,
				Amount: "1", Asset: "USDC", Stroops: 10_000_000}})
		if err != nil || out.TransactionHash == "" {
			t.Fatalf("%s: transfer = %+v, %v", key, out, err)
		}
	}
	pay(b, "beside-0001")
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	pay(a, "beside-0002")
	if got, err := a.Network.Balance(a.Info.Wallets[1].Account, usdc); err != nil || got != 20_000_000 {
		t.Errorf("wallet USDC %d, %v; want 2 USDC, one from each service", got, err)
	}
}
