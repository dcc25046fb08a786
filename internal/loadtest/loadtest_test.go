package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// rig is the service on minidyn and the local network, on one virtual clock that closes a ledger
// every interval, or at the gaps of its LedgerClock around it.
type rig struct {
	clock    *vclock.Clock
	net      *stellarsim.Network
	svc      *wiring.Service
	db       *dynamotest.CountingClient
	rpc      *rpcTransport // the service's Stellar requests, when round trips are modelled
	wallets  []string
	vault    string
	usdc     stellarsim.Asset
	interval time.Duration
	// sched is when the next ledger is due (the rig's LedgerClock around interval); mu guards it.
	// nil for a rig that closes ledgers on its own fixed beat of interval.
	mu      sync.Mutex
	sched   *stellarsim.LedgerSchedule
	amounts atomic.Int64 // the last transfer's amount, in stroops: each transfer pays a new one
	// deps are what svc was built from (without the queue), so that another process of the same
	// deployment (a SubmitterFunction container: async_test.go) can be built on the same table
	// and network with its own channel pool.
	deps wiring.Deps
	// wcu counts DynamoDB write units when the rig was started with writeUnits, else nil.
	wcu *writeUnits
}

func newRig(tb testing.TB, backend string, channels int, interval time.Duration) *rig {
	return startRig(tb, rigConfig{backend: backend, channels: channels, interval: interval})
}

// rigConfig says what startRig assembles. With roundTrips, every Stellar request of the service
// takes stellarRTT of virtual time and every DynamoDB request dynamoRTT (latency_test.go);
// without, requests take no virtual time (the throughput benchmark, where queueing dominates).
type rigConfig struct {
	backend  string
	channels int
	interval time.Duration
	// ledgerClock varies the gaps between ledger closes around interval (zero: a fixed beat).
	ledgerClock stellarsim.LedgerClock
	roundTrips  bool
	// queue, when set, carries async transfers: the API answers Prefer: respond-async with 202.
	queue transfer.Queue
	// env adds settings to the stack's (BATCH_SIZE, MAX_FEE_STROOPS); wallets is how many funded
	// wallets with a USDC trustline the stack creates (0: 8); lanes are the network's per-ledger
	// limits (zero fields: pubnet's, stellarsim.PubnetLaneLimits).
	env     map[string]string
	wallets int
	lanes   stellarsim.LaneLimits
	// writeUnits sizes every DynamoDB write to count its write units (rig.wcu, writeunits_test.go).
	writeUnits bool
}

// startRig starts the stack (internal/devstack: the API function alone, on the rig's virtual
// clock) with the rig's own ledger schedule, keys whose channel accounts are the same in every
// run, a vault of 10^17 stroops of USDC, a fee account of 10^13 stroops of XLM and c.wallets
// wallets (8 by default).
func startRig(tb testing.TB, c rigConfig) *rig {
	tb.Helper()
	backend, channels, interval := c.backend, c.channels, c.interval
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	r := &rig{clock: clock, interval: interval}
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		tb.Fatal(err)
	}
	keys.ChannelMaster = signing.NewMasterSeed([]byte("loadtest-master-seed-0123456789ab"))
	env := map[string]string{"STELLAR_BACKEND": backend, "CHANNEL_COUNT": strconv.Itoa(channels)}
	maps.Copy(env, c.env)
	wallets := c.wallets
	if wallets <= 0 {
		wallets = 8
	}
	opts := devstack.Options{Clock: clock, LedgerInterval: interval, APIOnly: true, Queue: c.queue, Keys: &keys,
		VaultUSDC: 1e17, FeeXLM: 1e13, DemoWallets: wallets, Getenv: func(k string) string { return env[k] },
		Network: func(o *stellarsim.Options) { o.ExpectedCloseInterval, o.Lanes = interval, c.lanes },
		CloseLedgers: func(n *stellarsim.Network) {
			r.sched = stellarsim.NewLedgerSchedule(c.ledgerClock, interval, clock.Now(), 2)
			clock.OnAdvance(func(now time.Time) {
				r.mu.Lock()
				defer r.mu.Unlock()
				for !r.sched.Due().After(now) {
					r.sched.Advance()
					n.CloseLedger()
				}
			})
		},
		WrapDynamo: func(db *dynamodb.Client) dynamo.Client {
			r.db = dynamotest.NewCountingClient(db)
			var inner dynamo.Client = r.db
			if c.writeUnits {
				r.wcu = &writeUnits{inner: r.db, raw: db}
				inner = r.wcu
			}
			if c.roundTrips {
				return slowDynamo{clock: clock, inner: inner}
			}
			return inner
		},
	}
	if c.roundTrips {
		r.rpc = newRPCTransport(clock)
		opts.WrapStellar = func(base http.RoundTripper) http.RoundTripper {
			r.rpc.base = base
			return r.rpc
		}
	}
	st, err := devstack.Start(context.Background(), opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	r.net, r.svc, r.vault = st.Network, st.Service, st.Info.Vault.Account
	r.usdc = stellarsim.Asset{Code: st.Info.Assets[0].Code, Issuer: st.Info.Assets[0].Issuer}
	for _, w := range st.Info.Wallets {
		r.wallets = append(r.wallets, w.Account)
	}
	r.deps = st.Deps
	r.deps.Queue = nil
	// A channel's release is bounded in real time (sources.ChannelPoolConfig.ReleaseTimeout);
	// under the virtual clock its round trip, among hundreds of participants, can take longer than
	// the 2 s default in real time, and a release never written leaves the channel leased.
	r.deps.ChannelReleaseTimeout = time.Minute
	if os.Getenv("BENCH_CLAIM_FIRST") != "" {
		// Every call claims its key before it asks for a channel (lambda_test.go's environments).
		r.svc.Orchestrator.Admission = nil
	}
	r.db.Reset()
	if r.wcu != nil {
		r.wcu.reset()
	}
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
			due := now.Truncate(r.interval).Add(r.interval) // a rig that closes on its own fixed beat
			if r.sched != nil {
				r.mu.Lock()
				due = r.sched.Due()
				r.mu.Unlock()
			}
			_ = r.clock.Sleep(context.Background(), due.Sub(now))
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
	transfers   int             // transfers that went through within the measured window
	failures    int             // calls answered neither 200 nor a 503 with Retry-After
	elapsed     time.Duration   // virtual: the measured window
	wall        time.Duration   // real time the run took
	latencies   []time.Duration // virtual, sorted: calls answered 200 within the window
	endToEnd    []time.Duration // virtual, sorted: first call to 200, transfers within the window
	ddbRequests int64
	completed   int // every transfer that went through, counted or not
	// calls, busy (503 CHANNELS_BUSY) and busyWithoutRetryAfter count every call of the run.
	calls, busy, busyWithoutRetryAfter int
	longestCall                        time.Duration // virtual
	firstSendRefusals                  int           // envelopes answered anything but PENDING/DUPLICATE
	// paidTwice are transfers paid more than once; unpaid those never paid (every key is driven
	// until it is answered 200, so there must be none).
	paidTwice, unpaid int
	stats             sources.PoolStats
}

func (r result) perSecond() float64 { return float64(r.transfers) / r.elapsed.Seconds() }

func (r result) busyShare() float64 { return float64(r.busy) / float64(max(r.calls, 1)) }

func (r result) percentile(p float64) time.Duration { return percentile(r.latencies, p) }

// percentile is the p-quantile (0 < p < 1) of sorted, 0 when it is empty.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}

// answer is one call's HTTP answer as a client sees it.
type answer struct {
	status     int
	retryAfter time.Duration // the Retry-After header; 0 when absent
	code       string        // the problem's code
}

// post sends one POST /transfers through the service's HTTP handler (in process, as API Gateway
// hands it to the Lambda) for stroops to wallet under key.
func (r *rig) post(key, wallet string, stroops int64) answer {
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"%d.%07d","asset":"USDC"}`, wallet, stroops/1e7, stroops%1e7)
	req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	r.svc.Handler.ServeHTTP(rec, req)
	a := answer{status: rec.Code}
	if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err == nil {
		a.retryAfter = time.Duration(s) * time.Second
	}
	if a.status != http.StatusOK {
		var p struct{ Code string }
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		a.code = p.Code
	}
	return a
}

// run starts callers concurrent callers that each send transfers back to back (a fresh key each,
// and a unique amount: the rig's transfer count in stroops, so the network's record tells which
// transfer a payment paid) until window of virtual time has passed. A caller answered 503 with a
// Retry-After sleeps it (on the virtual clock) and retries the same key until the transfer goes
// through, also past the window. It measures the transfers that finished within the window after
// the first two ledgers (the queue filling up), every call's answer, and how often the network
// applied each transfer's payment.
func (r *rig) run(tb testing.TB, callers int, window time.Duration, run int) result {
	tb.Helper()
	before := len(r.net.Envelopes())
	appliedBefore := len(r.net.Applied())
	r.db.Reset()
	start := r.clock.Now()
	end := start.Add(window)
	// The first two ledgers fill the queue; throughput is counted from then on.
	measureFrom := start.Add(2 * r.interval)
	wallStart := time.Now()
	var (
		mu       sync.Mutex
		res      result
		amounts  []int64 // every transfer's amount, in stroops
		reported atomic.Bool
		wg       sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		if reported.CompareAndSwap(false, true) {
			tb.Logf("first failure: "+format, args...)
		}
	}
	// Held before the ledger-closing participant starts: alone, it would sleep, and the clock run
	// ahead to its wake-ups (closing ledgers) before the callers exist.
	release := r.clock.Hold() // every caller starts at the same instant
	defer r.closeOnTime()()
	for c := range callers {
		r.clock.Go(&wg, func() {
			for i := 0; ; i++ {
				t0 := r.clock.Now()
				if !t0.Before(end) {
					return
				}
				key := fmt.Sprintf("load-%d-%04d-%06d", run, c, i)
				stroops := r.amounts.Add(1)
				mu.Lock()
				amounts = append(amounts, stroops)
				mu.Unlock()
				for try := 0; ; try++ {
					c0 := r.clock.Now()
					a := r.post(key, r.wallets[c%len(r.wallets)], stroops)
					c1 := r.clock.Now()
					mu.Lock()
					res.calls++
					res.longestCall = max(res.longestCall, c1.Sub(c0))
					if a.status == http.StatusServiceUnavailable && a.code == transfer.CodeChannelsBusy {
						res.busy++
						if a.retryAfter <= 0 {
							res.busyWithoutRetryAfter++
						}
					}
					if a.status == http.StatusOK {
						res.completed++
						if !c1.After(end) && !c1.Before(measureFrom) {
							res.latencies = append(res.latencies, c1.Sub(c0))
							res.endToEnd = append(res.endToEnd, c1.Sub(t0))
						}
					}
					mu.Unlock()
					if a.status == http.StatusOK {
						break
					}
					if a.retryAfter <= 0 || try == 50 {
						mu.Lock()
						res.failures++
						mu.Unlock()
						fail("%s: %d %s after %d tries", key, a.status, a.code, try+1)
						break
					}
					if a.status != http.StatusServiceUnavailable || a.code != transfer.CodeChannelsBusy {
						mu.Lock()
						res.failures++
						mu.Unlock()
						fail("%s: %d %s (retried)", key, a.status, a.code)
					}
					_ = r.clock.Sleep(context.Background(), a.retryAfter)
				}
			}
		})
	}
	release()
	wg.Wait()
	res.transfers, res.elapsed, res.wall, res.ddbRequests = len(res.latencies), end.Sub(measureFrom), time.Since(wallStart), r.db.Total()
	slices.Sort(res.latencies)
	slices.Sort(res.endToEnd)
	for _, e := range r.net.Envelopes()[before:] {
		if e.Status != stellarsim.StatusPending && e.Status != stellarsim.StatusDuplicate {
			res.firstSendRefusals++
		}
	}
	res.paidTwice, res.unpaid, _, _ = r.payments(amounts, appliedBefore)
	if r.svc.Channels != nil {
		res.stats = r.svc.Channels.Stats()
	}
	return res
}

// report reports res against limit (transfers per second the sources allow).
func report(b *testing.B, res result, limit float64) {
	b.ReportMetric(res.perSecond(), "transfers/s")
	b.ReportMetric(100*res.perSecond()/limit, "%limit")
	b.ReportMetric(100*res.busyShare(), "%503")
	b.ReportMetric(res.percentile(0.5).Seconds(), "p50-s")
	b.ReportMetric(res.percentile(0.99).Seconds(), "p99-s")
	b.ReportMetric(percentile(res.endToEnd, 0.5).Seconds(), "e2e-p50-s")
	b.ReportMetric(percentile(res.endToEnd, 0.99).Seconds(), "e2e-p99-s")
	b.ReportMetric(res.longestCall.Seconds(), "longest-call-s")
	b.ReportMetric(float64(res.ddbRequests)/float64(max(res.completed, 1)), "ddb-req/transfer")
	b.ReportMetric(float64(res.failures), "failures")
	b.ReportMetric(float64(res.busyWithoutRetryAfter), "503-no-retry-after")
	b.ReportMetric(float64(res.paidTwice), "paid-twice")
	b.ReportMetric(float64(res.unpaid), "unpaid")
	b.ReportMetric(float64(res.firstSendRefusals), "refused-sends")
	b.ReportMetric(float64(res.stats.Collisions)/float64(max(res.stats.Leases, 1)), "collisions/lease")
	b.ReportMetric(res.wall.Seconds(), "wall-s")
}

// BenchmarkChannels: throughput through the whole service for 1, 4, 16 and 64 channels, four
// callers per channel, every one in this process (BenchmarkChannelsLambda gives each its own
// environment), every Stellar and DynamoDB request charged its round trip in virtual time
// (rigConfig.roundTrips), ledgers every 5 s of virtual time, over a window of 12 ledgers. The limit
// is channels per ledger interval (the network queues one transaction per source account).
// A call waits about one ledger for a channel, then is answered 503 CHANNELS_BUSY; its caller
// honours the Retry-After and retries the same key (rig.run).
func BenchmarkChannels(b *testing.B) {
	const interval = 5 * time.Second
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{1, 4, 16, 64} {
			b.Run(fmt.Sprintf("%s/channels=%d", backend, channels), func(b *testing.B) {
				r := startRig(b, rigConfig{backend: backend, channels: channels, interval: interval, roundTrips: true})
				var res result
				for i := range b.N {
					res = r.run(b, 4*channels, 12*interval, i)
				}
				report(b, res, float64(channels)/interval.Seconds())
			})
		}
	}
}

// BenchmarkOverload is the overload case, where calls must fail fast: 8 and 16 callers per channel for 1, 4, 16 and
// 64 channels, both backends, every caller in this process and every request charged its round trip, ledgers every 5 s of virtual time, a window of 12 ledgers. Callers
// answered 503 honour its Retry-After and retry the same key until the transfer goes through.
// Goals: throughput at or above 95% of the channel limit (%limit), no call past 28 s
// (longest-call-s), every 503 with a Retry-After (503-no-retry-after 0), every transfer paid
// exactly once (paid-twice and unpaid 0, counted from the network's applied payments).
func BenchmarkOverload(b *testing.B) {
	const interval = 5 * time.Second
	for _, backend := range []string{"rpc", "horizon"} {
		for _, perChannel := range []int{8, 16} {
			for _, channels := range []int{1, 4, 16, 64} {
				b.Run(fmt.Sprintf("%s/callers-per-channel=%d/channels=%d", backend, perChannel, channels), func(b *testing.B) {
					r := startRig(b, rigConfig{backend: backend, channels: channels, interval: interval, roundTrips: true})
					var res result
					for i := range b.N {
						res = r.run(b, perChannel*channels, 12*interval, i)
					}
					report(b, res, float64(channels)/interval.Seconds())
				})
			}
		}
	}
}

// maxCall is the longest a call may run: API Gateway's integration timeout (30 s) with a margin.
const maxCall = 28 * time.Second

// checkOverload asserts the overload contract on res: every call within maxCall, every 503 with a
// Retry-After, no other failure, every transfer paid exactly once.
func checkOverload(t *testing.T, res result) {
	t.Helper()
	if res.completed == 0 || res.transfers == 0 {
		t.Fatalf("no transfer went through: %+v", res)
	}
	if res.longestCall > maxCall {
		t.Errorf("a call ran %v, past %v", res.longestCall, maxCall)
	}
	if res.busyWithoutRetryAfter != 0 {
		t.Errorf("%d of %d 503s without a Retry-After", res.busyWithoutRetryAfter, res.busy)
	}
	if res.failures != 0 {
		t.Errorf("%d calls failed otherwise than 503 CHANNELS_BUSY", res.failures)
	}
	if res.paidTwice != 0 || res.unpaid != 0 {
		t.Errorf("%d transfers paid twice, %d never paid", res.paidTwice, res.unpaid)
	}
}

// TestOverloadHonoursRetryAfter is the overload case at a small size (in `make test`): 16 callers
// on 2 channels (8 per channel) and 4 callers on the vault alone, both backends. Calls that find
// no source within a ledger are answered 503 CHANNELS_BUSY with a Retry-After and nothing
// submitted; their callers retry the same key after it; every call ends within its budget and
// every transfer is paid exactly once. Throughput is reported, measured by BenchmarkOverload.
func TestOverloadHonoursRetryAfter(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		for _, c := range []struct{ channels, callers int }{{2, 16}, {0, 4}} {
			t.Run(fmt.Sprintf("%s/channels=%d", backend, c.channels), func(t *testing.T) {
				r := newRig(t, backend, c.channels, 5*time.Second)
				res := r.run(t, c.callers, 8*5*time.Second, 0)
				checkOverload(t, res)
				if res.busy == 0 {
					t.Errorf("%d callers on %d sources: no 503 at all", c.callers, max(c.channels, 1))
				}
				if res.firstSendRefusals != 0 {
					t.Errorf("%d sends refused: this process builds on each source for one transfer at a time", res.firstSendRefusals)
				}
				t.Logf("%d transfers in %v virtual (%.2f/s, limit %.1f/s), %d of %d calls 503 (%.0f%%), served p50 %v p99 %v, longest call %v, wall %v",
					res.transfers, res.elapsed, res.perSecond(), float64(max(c.channels, 1))/5, res.busy, res.calls, 100*res.busyShare(),
					res.percentile(0.5), res.percentile(0.99), res.longestCall, res.wall)
			})
		}
	}
}

// TestSixteenChannelsSixtyFourCallers is channel accounts under concurrency: 16 channels, 64 concurrent
// callers, both backends. Every send is accepted on its first try (a channel leased twice at once
// would put two transactions with one sequence number on it: the second would be refused), no
// transaction lands twice, every lease is released, and throughput is reported (speed is measured
// by BenchmarkChannels, not asserted). A call waits about one ledger for a channel:
// at 4 callers per channel some are answered 503 CHANNELS_BUSY, and their callers retry the same
// key after its Retry-After (checkOverload: within budget, every key paid exactly once). With -short (make test-short), 4 channels and 16 callers.
func TestSixteenChannelsSixtyFourCallers(t *testing.T) {
	channels, callers, window := 16, 64, 8*5*time.Second
	if testing.Short() {
		// make test-short: the same checks at a quarter of the size (about 2 s instead of 12 to 15
		// with -race).
		channels, callers, window = 4, 16, 4*5*time.Second
	}
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newRig(t, backend, channels, 5*time.Second)
			res := r.run(t, callers, window, 0)
			checkOverload(t, res)
			if res.firstSendRefusals != 0 {
				t.Fatalf("%d refused sends", res.firstSendRefusals)
			}
			perChannel := map[string][]int64{}
			for _, a := range r.net.Applied() {
				if a.FeeBumpHash == "" {
					continue // the channels' creation
				}
				perChannel[a.Source] = append(perChannel[a.Source], a.Sequence)
			}
			if len(perChannel) != channels {
				t.Errorf("%d channels used, want %d", len(perChannel), channels)
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
			t.Logf("%s: %d transfers in %v virtual (%.2f/s, limit %.1f/s), %d of %d calls 503, served p50 %v p99 %v, longest call %v, %.1f DynamoDB requests each, pool %+v, wall %v",
				backend, res.transfers, res.elapsed, res.perSecond(), float64(channels)/5, res.busy, res.calls, res.percentile(0.5), res.percentile(0.99),
				res.longestCall, float64(res.ddbRequests)/float64(res.completed), res.stats, res.wall)
		})
	}
}

// payments reads the vault's successful payments applied since appliedBefore (each transfer pays
// a unique amount in stroops) and counts the amounts paid more than once and never, and the first
// and last ledger that paid any (0 when none).
func (r *rig) payments(amounts []int64, appliedBefore int) (paidTwice, unpaid int, first, last uint32) {
	paid := map[int64]int{}
	for _, a := range r.net.Applied()[appliedBefore:] {
		if a.Status != "SUCCESS" {
			continue
		}
		for _, op := range a.Ops {
			if op.Type == "payment" && op.Source == r.vault {
				paid[op.Amount]++
				if first == 0 || a.Ledger < first {
					first = a.Ledger
				}
				last = max(last, a.Ledger)
			}
		}
	}
	for _, amount := range amounts {
		switch paid[amount] {
		case 0:
			unpaid++
		case 1:
		default:
			paidTwice++
		}
	}
	return paidTwice, unpaid, first, last
}
