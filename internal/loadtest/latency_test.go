package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The round trips both sides pay in virtual time, so that every request the service makes beyond
// the direct submitter's counts against it.
const (
	// stellarRTT is one HTTPS request to a Stellar RPC provider in or near the caller's region
	// over a kept-alive connection: a few milliseconds of network each way plus the provider's own
	// handling (a database read for getTransaction and getLedgerEntries).
	stellarRTT = 15 * time.Millisecond
	// dynamoRTT is one DynamoDB item request from a Lambda in the table's region: DynamoDB answers
	// single-item reads and conditional writes in single-digit milliseconds, and the SDK's
	// HTTPS request adds a little.
	dynamoRTT = 6 * time.Millisecond
	// directPoll is how often the direct submitter asks getTransaction (the reference
	// client latency is measured against: a tight loop that learns of the inclusion within one poll of RPC showing it).
	directPoll = 25 * time.Millisecond
	// directValidity is the direct submitter's maxTime, from when it builds the envelope.
	directValidity = 30 * time.Second
	// directGiveUp bounds the direct submitter's wait for its envelope (virtual time).
	directGiveUp = 60 * time.Second
)

// rpcTransport is an http.RoundTripper to the local network that takes stellarRTT of virtual time
// per request (half on the way there, half back) and counts requests by JSON-RPC method.
type rpcTransport struct {
	clock *vclock.Clock
	base  http.RoundTripper

	mu     sync.Mutex
	counts map[string]int
}

func newRPCTransport(clock *vclock.Clock) *rpcTransport {
	return &rpcTransport{clock: clock, base: http.DefaultTransport, counts: map[string]int{}}
}

// RoundTrip runs on rpcclient's goroutine while the participant that made the call waits for it,
// so its sleeps stand for the participant's (vclock counts the sleeper, not who sleeps).
func (t *rpcTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	var call struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &call) != nil || call.Method == "" {
		call.Method = "(not a JSON-RPC call)"
	}
	t.mu.Lock()
	t.counts[call.Method]++
	t.mu.Unlock()

	if p := phaseOf(req.Context()); p != nil {
		p.flush(req.Context(), t.clock)
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	_ = t.clock.Sleep(req.Context(), stellarRTT/2)
	resp, err := t.base.RoundTrip(out)
	_ = t.clock.Sleep(req.Context(), stellarRTT-stellarRTT/2)
	return resp, err
}

func (t *rpcTransport) count(method string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.counts[method]
}

func (t *rpcTransport) total() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, c := range t.counts {
		n += c
	}
	return n
}

func (t *rpcTransport) reset() {
	t.mu.Lock()
	t.counts = map[string]int{}
	t.mu.Unlock()
}

// slowDynamo is a dynamo.Client that takes dynamoRTT of virtual time per request.
type slowDynamo struct {
	clock *vclock.Clock
	inner dynamo.Client
}

// sleep takes dynamoRTT of virtual time for a request on the item key, or, within a batch's
// per-key phase (batch_test.go: perKeyPhase), defers it to the phase's end.
func (s slowDynamo) sleep(ctx context.Context, key string) {
	if p := phaseOf(ctx); p != nil {
		if inPerKeyPhase() {
			p.deferRTT(key, dynamoRTT)
			return
		}
		p.flush(ctx, s.clock)
	}
	_ = s.clock.Sleep(ctx, dynamoRTT)
}

func (s slowDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.sleep(ctx, itemKey(in.Item))
	return s.inner.PutItem(ctx, in, o...)
}

func (s slowDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.sleep(ctx, itemKey(in.Key))
	return s.inner.GetItem(ctx, in, o...)
}

func (s slowDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	s.sleep(ctx, itemKey(in.Key))
	return s.inner.DeleteItem(ctx, in, o...)
}

func (s slowDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.sleep(ctx, itemKey(in.Key))
	return s.inner.(dynamo.TicketClient).UpdateItem(ctx, in, o...)
}

func (s slowDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	s.sleep(ctx, "")
	return s.inner.Query(ctx, in, o...)
}

// BatchGetItem is one request, one round trip however many keys it reads (up to 100: a
// submitter's event's items, dynamo.Store.GetMany).
func (s slowDynamo) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	s.sleep(ctx, "")
	return s.inner.(dynamo.BatchGetClient).BatchGetItem(ctx, in, o...)
}

// TransactWriteItems is one request (a batch's envelope attached to its keys, a charged claim).
func (s slowDynamo) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	s.sleep(ctx, "")
	return s.inner.(dynamo.TransactClient).TransactWriteItems(ctx, in, o...)
}

// direct is the reference: a submitter with its own funded account that uses the official Go
// client (rpcclient, txnbuild) the plain way, with no store and no idempotency.
type direct struct {
	clock      *vclock.Clock
	rpc        *rpcclient.Client
	transport  *rpcTransport
	key        *keypair.Full
	passphrase string
	asset      txnbuild.CreditAsset
}

func newDirect(tb testing.TB, r *rig) *direct {
	tb.Helper()
	key := keypair.MustRandom()
	must(tb, r.net.CreateAccount(key.Address(), 1e11))
	must(tb, r.net.AddTrustline(key.Address(), r.usdc, 0))
	must(tb, r.net.Mint(key.Address(), r.usdc, 1e17))
	t := newRPCTransport(r.clock)
	c := rpcclient.NewClient(r.net.RPCURL(), &http.Client{Transport: t, Timeout: 30 * time.Second})
	tb.Cleanup(func() { _ = c.Close() })
	return &direct{clock: r.clock, rpc: c, transport: t, key: key, passphrase: r.net.Passphrase(),
		asset: txnbuild.CreditAsset{Code: r.usdc.Code, Issuer: r.usdc.Issuer}}
}

// pay sends 1 USDC to wallet: it reads its sequence number, builds and signs a payment, sends it,
// then asks getTransaction every directPoll until the answer is SUCCESS or FAILED. It returns the
// virtual time from the start of building to that answer.
func (d *direct) pay(ctx context.Context, wallet string) (time.Duration, error) {
	start := d.clock.Now()
	account, err := d.rpc.LoadAccount(ctx, d.key.Address())
	if err != nil {
		return 0, err
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        account,
		IncrementSequenceNum: true,
		BaseFee:              txnbuild.MinBaseFee,
		// Timebounds from the virtual clock: txnbuild.NewTimeout would read the real one.
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, start.Add(directValidity).Unix())},
		Operations:    []txnbuild.Operation{&txnbuild.Payment{Destination: wallet, Amount: "1", Asset: d.asset}},
	})
	if err != nil {
		return 0, err
	}
	if tx, err = tx.Sign(d.passphrase, d.key); err != nil {
		return 0, err
	}
	envelope, err := tx.Base64()
	if err != nil {
		return 0, err
	}
	hash, err := tx.HashHex(d.passphrase)
	if err != nil {
		return 0, err
	}
	sent, err := d.rpc.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: envelope})
	if err != nil {
		return 0, err
	}
	if sent.Status != "PENDING" {
		return 0, fmt.Errorf("sendTransaction answered %s (%s)", sent.Status, sent.ErrorResultXDR)
	}
	for d.clock.Now().Sub(start) < directGiveUp {
		if err := d.clock.Sleep(ctx, directPoll); err != nil {
			return 0, err
		}
		got, err := d.rpc.GetTransaction(ctx, protocol.GetTransactionRequest{Hash: hash})
		if err != nil {
			return 0, err
		}
		switch got.Status {
		case protocol.TransactionStatusSuccess:
			return d.clock.Now().Sub(start), nil
		case protocol.TransactionStatusFailed:
			return 0, fmt.Errorf("transaction %s failed: %s", hash, got.ResultXDR)
		}
	}
	return 0, fmt.Errorf("transaction %s not found within %v", hash, directGiveUp)
}

// sideBySide is one configuration's figures: latencies (virtual, sorted) and requests per
// transfer of each side.
type sideBySide struct {
	interval        time.Duration
	clock           stellarsim.LedgerClock
	channels        int
	service, direct []time.Duration
	serviceLookups  float64 // getTransaction requests per transfer
	directLookups   float64
	serviceRequests float64 // every Stellar RPC request per transfer
	directRequests  float64
	dynamoRequests  float64 // the service's DynamoDB requests per transfer
	failures        int
	firstFailure    error
	virtual, wall   time.Duration
}

// measureLatency runs n service transfers and n direct payments on one local network with a
// ledger every interval, alternating one at a time in pairs. Each pair draws a phase uniformly
// from one ledger interval (seeded, so a run repeats exactly); the service's transfer starts at
// the next moment of that phase after a whole ledger of quiet, and the direct payment at the same
// phase of a later ledger: both sides start at the same phases (common random numbers), so their
// percentiles differ by what each does, not by where in a ledger each happened to start. The service runs on Stellar RPC with channels channel
// accounts (0: the vault is the source).
//
// clock varies the gaps between ledgers around interval (stellarsim.LedgerClock; the zero value
// closes on a fixed beat). The phases are still drawn from one interval: against an irregular
// clock they are as random, and both sides still start at the same ones.
func measureLatency(tb testing.TB, interval time.Duration, clock stellarsim.LedgerClock, channels, n int, seed uint64) sideBySide {
	tb.Helper()
	r := startRig(tb, rigConfig{backend: "rpc", channels: channels, interval: interval, ledgerClock: clock, roundTrips: true})
	d := newDirect(tb, r)
	rng := rand.New(rand.NewPCG(seed, uint64(interval)+uint64(channels)))
	res := sideBySide{interval: interval, clock: clock, channels: channels}
	fail := func(who string, err error) {
		res.failures++
		if res.firstFailure == nil {
			res.firstFailure = fmt.Errorf("%s: %w", who, err)
		}
	}
	start, wall := r.clock.Now(), time.Now()
	var wg sync.WaitGroup
	// Held until the caller is a participant too: alone, the ledger-closing participant would
	// sleep and the clock run ahead to its wake-ups.
	release := r.clock.Hold()
	stopClosing := r.closeOnTime()
	r.clock.Go(&wg, func() {
		ctx := context.Background()
		var phase time.Duration
		pause := func() {
			// Sleep a whole interval (the previous transfer's ledger settles), then to the phase.
			now := r.clock.Now().Add(interval)
			at := now.Truncate(interval).Add(phase)
			if at.Before(now) {
				at = at.Add(interval)
			}
			_ = r.clock.Sleep(ctx, at.Sub(r.clock.Now()))
		}
		for i := range n {
			phase = time.Duration(rng.Int64N(int64(interval)))
			wallet := r.wallets[i%len(r.wallets)]
			pause()
			t0 := r.clock.Now()
			_, err := r.svc.Orchestrator.Transfer(ctx, transfer.Input{ClientKey: fmt.Sprintf("latency-%06d", i), Request: transfer.Request{
				OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000,
			}})
			if err != nil {
				fail("service", err)
			} else {
				res.service = append(res.service, r.clock.Now().Sub(t0))
			}
			pause()
			if took, err := d.pay(ctx, wallet); err != nil {
				fail("direct", err)
			} else {
				res.direct = append(res.direct, took)
			}
		}
	})
	release()
	wg.Wait()
	stopClosing()
	slices.Sort(res.service)
	slices.Sort(res.direct)
	res.virtual, res.wall = r.clock.Now().Sub(start), time.Since(wall)
	res.serviceLookups = float64(r.rpc.count("getTransaction")) / float64(n)
	res.directLookups = float64(d.transport.count("getTransaction")) / float64(n)
	res.serviceRequests = float64(r.rpc.total()) / float64(n)
	res.directRequests = float64(d.transport.total()) / float64(n)
	res.dynamoRequests = float64(r.db.Total()) / float64(n)
	return res
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// table renders the results as the README's Markdown table.
func table(results []sideBySide) string {
	var b strings.Builder
	b.WriteString("| ledger interval | ledger clock | channels | service p50 | p90 | p99 | direct p50 | p90 | p99 | ratio p50 | p90 | p99 | look-ups per transfer: service | direct | RPC requests per transfer: service | direct |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %g s | %s | %d |", r.interval.Seconds(), r.clock, r.channels)
		for _, lat := range [][]time.Duration{r.service, r.direct} {
			for _, p := range []float64{0.5, 0.9, 0.99} {
				fmt.Fprintf(&b, " %s |", seconds(percentile(lat, p)))
			}
		}
		for _, p := range []float64{0.5, 0.9, 0.99} {
			fmt.Fprintf(&b, " %.2f |", percentile(r.service, p).Seconds()/percentile(r.direct, p).Seconds())
		}
		fmt.Fprintf(&b, " %.1f | %.1f | %.1f | %.1f |\n", r.serviceLookups, r.directLookups, r.serviceRequests, r.directRequests)
	}
	return b.String()
}

// checkSane fails tb unless every transfer of both sides succeeded and every figure is positive.
// It asserts nothing about speed: that is what the table is for.
func checkSane(tb testing.TB, r sideBySide, n int) {
	tb.Helper()
	if r.failures != 0 || len(r.service) != n || len(r.direct) != n {
		tb.Fatalf("%v %s, %d channels: %d failures (first: %v), %d service and %d direct latencies, want %d each",
			r.interval, r.clock, r.channels, r.failures, r.firstFailure, len(r.service), len(r.direct), n)
	}
	if r.service[0] <= 0 || r.direct[0] <= 0 || r.serviceLookups <= 0 || r.directLookups <= 0 || r.dynamoRequests <= 0 {
		tb.Fatalf("%v, %d channels: a figure is not positive: %+v", r.interval, r.channels, r)
	}
}

// latencyClocks are the ledger clocks the latency benchmark runs under: a fixed beat, each gap
// within +-20%, and gaps drawn from pubnet's recorded close times (stellarsim.LedgerClock).
var latencyClocks = []stellarsim.LedgerClock{
	{},
	{Kind: stellarsim.LedgerClockUniform, Seed: 20261201},
	{Kind: stellarsim.LedgerClockPubnet, Seed: 20261201},
}

// TestLatencySideBySide is the latency benchmark at a small size, run by every `go test`: both
// sides at both intervals, with and without channel accounts, under each ledger clock (the
// irregular ones with channel accounts), every transfer succeeds and every figure is positive.
func TestLatencySideBySide(t *testing.T) {
	const n = 4
	for _, interval := range []time.Duration{time.Second, 5 * time.Second} {
		for _, clock := range latencyClocks {
			for _, channels := range []int{0, 4} {
				if clock.Kind != "" && channels == 0 {
					continue
				}
				t.Run(fmt.Sprintf("%v/%s/channels=%d", interval, clock, channels), func(t *testing.T) {
					r := measureLatency(t, interval, clock, channels, n, 1)
					checkSane(t, r, n)
					t.Logf("service p50 %v, direct p50 %v, getTransaction per transfer %.1f / %.1f", percentile(r.service, 0.5),
						percentile(r.direct, 0.5), r.serviceLookups, r.directLookups)
				})
			}
		}
	}
}

// TestBenchLatency is the latency benchmark beside a direct submitter (`make bench-latency`, BENCH_LATENCY=1): the
// service (wiring.Build on Stellar RPC, as the Lambda runs it) and a direct submitter interleaved
// on one realistic local network (internal/stellarsim's defaults: each ledger shown by RPC 1 to
// 3 s after it closes), BENCH_LATENCY_N transfers each (default 400) at 5 s and 1 s ledgers, with
// 0 and 4 channel accounts, under each ledger clock of latencyClocks (BENCH_LATENCY_CLOCKS, a
// comma-separated list of "fixed", "uniform", "pubnet", runs some of them). It prints the percentiles of both, their ratios (service / direct) and
// the getTransaction requests per transfer of each, as a Markdown table.
func TestBenchLatency(t *testing.T) {
	if os.Getenv("BENCH_LATENCY") == "" {
		t.Skip("set BENCH_LATENCY=1 (make bench-latency)")
	}
	n := 400
	if s := os.Getenv("BENCH_LATENCY_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 1 {
			t.Fatalf("BENCH_LATENCY_N=%q: want a positive integer", s)
		}
	}
	clocks := latencyClocks
	if s := os.Getenv("BENCH_LATENCY_CLOCKS"); s != "" {
		clocks = nil
		for _, name := range strings.Split(s, ",") {
			i := slices.IndexFunc(latencyClocks, func(c stellarsim.LedgerClock) bool { return c.String() == name || c.Kind == name })
			if i < 0 {
				t.Fatalf("BENCH_LATENCY_CLOCKS=%q: %q is not one of fixed, uniform, pubnet", s, name)
			}
			clocks = append(clocks, latencyClocks[i])
		}
	}
	var results []sideBySide
	for _, clock := range clocks {
		for _, interval := range []time.Duration{5 * time.Second, time.Second} {
			for _, channels := range []int{0, 4} {
				r := measureLatency(t, interval, clock, channels, n, 20261201)
				checkSane(t, r, n)
				t.Logf("%v ledgers (%s), %d channels: %d transfers each in %v virtual, %v wall; per transfer: Stellar RPC requests %.1f service / %.1f direct, DynamoDB requests %.1f (service)",
					interval, clock, channels, n, r.virtual.Round(time.Second), r.wall.Round(time.Millisecond), r.serviceRequests, r.directRequests, r.dynamoRequests)
				results = append(results, r)
			}
		}
	}
	fmt.Printf("\nLatency, %d transfers each side per row (RPC round trip %v, DynamoDB %v, direct polls every %v):\n\n%s\n",
		n, stellarRTT, dynamoRTT, directPoll, table(results))
}
