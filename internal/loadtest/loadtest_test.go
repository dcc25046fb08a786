package loadtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// rig is the service on minidyn and the local network, on one virtual clock that closes a ledger
// every interval.
type rig struct {
	clock    *vclock.Clock
	net      *stellarsim.Network
	svc      *wiring.Service
	db       *dynamotest.CountingClient
	rpc      *rpcTransport // the service's Stellar requests, when round trips are modelled
	wallets  []string
	usdc     stellarsim.Asset
	interval time.Duration
}

func newRig(tb testing.TB, backend string, channels int, interval time.Duration) *rig {
	return startRig(tb, rigConfig{backend: backend, channels: channels, interval: interval})
}

// rigConfig says what startRig assembles. With roundTrips, every Stellar request of the service
// takes stellarRTT of virtual time and every DynamoDB request dynamoRTT (latency_test.go);
// without, requests take no virtual time (the throughput benchmark, where queueing dominates).
type rigConfig struct {
	backend    string
	channels   int
	interval   time.Duration
	roundTrips bool
}

func startRig(tb testing.TB, c rigConfig) *rig {
	tb.Helper()
	backend, channels, interval := c.backend, c.channels, c.interval
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	n, err := stellarsim.Start(stellarsim.Options{Clock: clock, ExpectedCloseInterval: interval})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	var mu sync.Mutex
	lastClose := clock.Now()
	clock.OnAdvance(func(now time.Time) {
		mu.Lock()
		defer mu.Unlock()
		for !lastClose.Add(interval).After(now) {
			lastClose = lastClose.Add(interval)
			n.CloseLedger()
		}
	})
	keys, err := stellar.GenerateKeys(0)
	if err != nil {
		tb.Fatal(err)
	}
	keys.ChannelMaster = stellar.NewMasterSeed([]byte("loadtest-master-seed-0123456789ab"))
	issuer, _ := n.CreateKeypair(1e11)
	usdc := n.IssueAsset("USDC", issuer)
	must(tb, n.CreateAccount(keys.Vault.Address(), 1e11))
	must(tb, n.AddTrustline(keys.Vault.Address(), usdc, 0))
	must(tb, n.Mint(keys.Vault.Address(), usdc, 1e17))
	must(tb, n.CreateAccount(keys.Fee.Address(), 1e13))
	r := &rig{clock: clock, net: n, interval: interval, usdc: usdc}
	for range 8 {
		w := keypair.MustRandom()
		must(tb, n.CreateAccount(w.Address(), 1e11))
		must(tb, n.AddTrustline(w.Address(), usdc, 0))
		r.wallets = append(r.wallets, w.Address())
	}
	client, _ := dynamotest.Minidyn(tb)
	r.db = dynamotest.NewCountingClient(client)
	store := dynamotest.NewStore(tb, r.db)
	deps := wiring.Deps{Getenv: func(string) string { return "" }, Dynamo: r.db, Keys: stellar.StaticKeys{K: keys}, Clock: clock}
	if c.roundTrips {
		r.rpc = newRPCTransport(clock)
		deps.HTTPClient = &http.Client{Transport: r.rpc, Timeout: stellar.DefaultHTTPTimeout}
		deps.Dynamo = slowDynamo{clock: clock, inner: r.db}
	}
	cfg, err := config.Load(func(k string) string {
		return map[string]string{
			"TABLE_NAME": store.Table(), "STELLAR_BACKEND": backend, "STELLAR_RPC_URL": n.RPCURL(), "HORIZON_URL": n.URL(),
			"NETWORK_PASSPHRASE": n.Passphrase(), "VAULT_ACCOUNT": keys.Vault.Address(), "ASSETS": "USDC:" + usdc.Issuer,
			"CHANNEL_COUNT": strconv.Itoa(channels),
		}[k]
	})
	if err != nil {
		tb.Fatal(err)
	}
	deps.Config = cfg
	r.svc, err = wiring.Build(deps)
	if err != nil {
		tb.Fatal(err)
	}
	if channels > 0 {
		if _, err := r.svc.Ledger.EnsureChannels(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
	r.db.Reset()
	if r.rpc != nil {
		r.rpc.reset()
	}
	return r
}

// closeOnTime runs a participant that wakes at every due ledger close, so that ledgers close on
// schedule: the rig closes ledgers when the virtual clock moves (OnAdvance), and the clock moves
// only to a participant's wake-up, so without it a ledger would close at the first wake-up after
// it is due, late by however long every caller happened to sleep. stop ends it and waits.
func (r *rig) closeOnTime() (stop func()) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		stopped bool
	)
	r.clock.Go(&wg, func() {
		for {
			mu.Lock()
			done := stopped
			mu.Unlock()
			if done {
				return
			}
			now := r.clock.Now()
			_ = r.clock.Sleep(context.Background(), now.Truncate(r.interval).Add(r.interval).Sub(now))
		}
	})
	return func() {
		mu.Lock()
		stopped = true
		mu.Unlock()
		wg.Wait()
	}
}

func must(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// result is one run's figures.
type result struct {
	transfers, failures int
	elapsed             time.Duration // virtual
	wall                time.Duration
	latencies           []time.Duration // virtual, sorted
	ddbRequests         int64
	completed           int // every transfer that succeeded, counted or not
	firstSendRefusals   int // envelopes answered anything but PENDING/DUPLICATE
	stats               stellar.PoolStats
}

func (r result) perSecond() float64 { return float64(r.transfers) / r.elapsed.Seconds() }

func (r result) percentile(p float64) time.Duration { return percentile(r.latencies, p) }

// percentile is the p-quantile (0 < p < 1) of sorted, 0 when it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// run starts callers concurrent callers that each send transfers back to back (a fresh key each)
// until window of virtual time has passed, and measures the transfers that finished within it
// after the first two ledgers (the queue filling up).
func (r *rig) run(tb testing.TB, callers int, window time.Duration, run int) result {
	tb.Helper()
	before := len(r.net.Envelopes())
	r.db.Reset()
	start := r.clock.Now()
	end := start.Add(window)
	// The first two ledgers fill the queue; throughput is counted from then on.
	measureFrom := start.Add(2 * r.interval)
	wallStart := time.Now()
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  atomic.Int64
		completed atomic.Int64
		wg        sync.WaitGroup
	)
	defer r.closeOnTime()()
	release := r.clock.Hold() // every caller starts at the same instant
	for c := range callers {
		r.clock.Go(&wg, func() {
			for i := 0; ; i++ {
				t0 := r.clock.Now()
				if !t0.Before(end) {
					return
				}
				in := transfer.Input{ClientKey: fmt.Sprintf("load-%d-%04d-%06d", run, c, i), Request: transfer.Request{
					OperationType: transfer.Withdraw, WalletAddress: r.wallets[c%len(r.wallets)], Amount: "1", Asset: "USDC", Stroops: 10_000_000,
				}}
				_, err := r.svc.Orchestrator.Transfer(context.Background(), in)
				t1 := r.clock.Now()
				if err == nil {
					completed.Add(1)
				}
				if err != nil {
					if failures.Add(1) == 1 {
						tb.Logf("first failure: %v", err)
					}
					continue
				}
				if t1.After(end) || t1.Before(measureFrom) {
					continue // warming up, or finished after the window: not counted
				}
				mu.Lock()
				latencies = append(latencies, t1.Sub(t0))
				mu.Unlock()
			}
		})
	}
	release()
	wg.Wait()
	res := result{transfers: len(latencies), failures: int(failures.Load()), elapsed: end.Sub(measureFrom), wall: time.Since(wallStart),
		latencies: latencies, ddbRequests: r.db.Total(), completed: int(completed.Load())}
	slices.Sort(res.latencies)
	for _, e := range r.net.Envelopes()[before:] {
		if e.Status != stellarsim.StatusPending && e.Status != stellarsim.StatusDuplicate {
			res.firstSendRefusals++
		}
	}
	if r.svc.Channels != nil {
		res.stats = r.svc.Channels.Stats()
	}
	return res
}

// BenchmarkChannels: throughput through the whole service for 1, 4, 16 and 64 channels, four
// callers per channel, ledgers every 5 s of virtual time, over a window of 12 ledgers. The limit
// is channels per ledger interval (the network queues one transaction per source account).
func BenchmarkChannels(b *testing.B) {
	const interval = 5 * time.Second
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/channels=%d", backend, channels), func(b *testing.B) {
				r := newRig(b, backend, channels, interval)
				var res result
				for i := range b.N {
					res = r.run(b, 4*channels, 12*interval, i)
				}
				limit := float64(channels) / interval.Seconds()
				b.ReportMetric(res.perSecond(), "transfers/s")
				b.ReportMetric(100*res.perSecond()/limit, "%limit")
				b.ReportMetric(res.percentile(0.5).Seconds(), "p50-s")
				b.ReportMetric(res.percentile(0.99).Seconds(), "p99-s")
				b.ReportMetric(float64(res.ddbRequests)/float64(max(res.completed, 1)), "ddb-req/transfer")
				b.ReportMetric(float64(res.failures), "failures")
				b.ReportMetric(float64(res.firstSendRefusals), "refused-sends")
				b.ReportMetric(float64(res.stats.Collisions)/float64(max(res.stats.Leases, 1)), "collisions/lease")
				b.ReportMetric(res.wall.Seconds(), "wall-s")
			})
		}
	}
}

// TestSixteenChannelsSixtyFourCallers is issue 5's "done when": 16 channels, 64 concurrent
// callers, both backends. Every send is accepted on its first try (a channel leased twice at once
// would put two transactions with one sequence number on it: the second would be refused), no
// transaction lands twice, every lease is released, and throughput is reported (speed is measured
// by BenchmarkChannels, not asserted).
func TestSixteenChannelsSixtyFourCallers(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newRig(t, backend, 16, 5*time.Second)
			res := r.run(t, 64, 8*5*time.Second, 0)
			if res.transfers == 0 || res.failures != 0 || res.firstSendRefusals != 0 {
				t.Fatalf("%d transfers, %d failures, %d refused sends", res.transfers, res.failures, res.firstSendRefusals)
			}
			perChannel := map[string][]int64{}
			for _, a := range r.net.Applied() {
				if a.FeeBumpHash == "" {
					continue // the channels' creation
				}
				perChannel[a.Source] = append(perChannel[a.Source], a.Sequence)
			}
			if len(perChannel) != 16 {
				t.Errorf("%d channels used, want 16", len(perChannel))
			}
			for ch, seqs := range perChannel {
				for i := 1; i < len(seqs); i++ {
					if seqs[i] != seqs[i-1]+1 {
						t.Errorf("channel %s sequence numbers %v", ch, seqs)
						break
					}
				}
			}
			if res.stats.Releases != res.stats.Leases {
				t.Errorf("pool %+v: every lease should be released", res.stats)
			}
			t.Logf("%s: %d transfers in %v virtual (%.2f/s, limit 3.2/s), p50 %v p99 %v, %.1f DynamoDB requests each, pool %+v, wall %v",
				backend, res.transfers, res.elapsed, res.perSecond(), res.percentile(0.5), res.percentile(0.99),
				float64(res.ddbRequests)/float64(res.completed), res.stats, res.wall)
		})
	}
}
