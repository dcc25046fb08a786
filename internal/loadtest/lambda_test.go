package loadtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// The Lambda model of the throughput benchmarks: Lambda runs each concurrent invocation in an
// execution environment of its own (a process: its own wiring.Build, channel pool, ledger
// cadence and caches, sharing only the table and the network), and reuses an environment for the
// next invocation once it is idle. Here each caller has one environment for the whole run, built
// before the first call (its cold start, counted) and reused by every call of that caller, so no
// two concurrent calls ever share process memory. Every DynamoDB and Stellar request pays a round
// trip on the virtual clock: a base latency with seeded uniform jitter.

// envRTT is the round trip the Lambda-model benchmarks charge per request, in virtual time.
type envRTT struct {
	dynamo, stellar time.Duration
	// jitter is the share of the base latency drawn uniformly either side of it (0.5: 3 to 9 ms
	// for a 6 ms base).
	jitter float64
	seed   uint64
}

// defaultEnvRTT is latency_test.go's round trips (dynamoRTT, stellarRTT) with +-50% jitter.
// BENCH_DYNAMO_RTT and BENCH_STELLAR_RTT (Go durations) change the bases.
func defaultEnvRTT() envRTT {
	rtt := envRTT{dynamo: dynamoRTT, stellar: stellarRTT, jitter: 0.5, seed: 26}
	if d, err := time.ParseDuration(os.Getenv("BENCH_DYNAMO_RTT")); err == nil && d >= 0 {
		rtt.dynamo = d
	}
	if d, err := time.ParseDuration(os.Getenv("BENCH_STELLAR_RTT")); err == nil && d >= 0 {
		rtt.stellar = d
	}
	return rtt
}

// jitterSource draws round trips: base +- jitter*base, uniformly, from a seeded generator (the
// draws' order follows the goroutines', so a run's figures repeat within noise, not digit for
// digit).
type jitterSource struct {
	clock  *vclock.Clock
	jitter float64
	mu     sync.Mutex
	rnd    *rand.Rand
}

func newJitterSource(clock *vclock.Clock, rtt envRTT) *jitterSource {
	return &jitterSource{clock: clock, jitter: rtt.jitter, rnd: rand.New(rand.NewPCG(rtt.seed, rtt.seed^0x9e3779b97f4a7c15))}
}

func (j *jitterSource) draw(base time.Duration) time.Duration {
	if base <= 0 {
		return 0
	}
	j.mu.Lock()
	f := 1 + j.jitter*(2*j.rnd.Float64()-1)
	j.mu.Unlock()
	return time.Duration(float64(base) * f)
}

// jitterDynamo is a dynamo.Client whose every request takes a drawn round trip of virtual time.
type jitterDynamo struct {
	j     *jitterSource
	base  time.Duration
	inner interface {
		dynamo.Client
		dynamo.TicketClient
	}
}

func (s jitterDynamo) wait(ctx context.Context) { _ = s.j.clock.Sleep(ctx, s.j.draw(s.base)) }

func (s jitterDynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	s.wait(ctx)
	return s.inner.PutItem(ctx, in, o...)
}

func (s jitterDynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.wait(ctx)
	return s.inner.GetItem(ctx, in, o...)
}

func (s jitterDynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	s.wait(ctx)
	return s.inner.DeleteItem(ctx, in, o...)
}

func (s jitterDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.wait(ctx)
	return s.inner.UpdateItem(ctx, in, o...)
}

func (s jitterDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	s.wait(ctx)
	return s.inner.Query(ctx, in, o...)
}

// jitterRPC is an http.RoundTripper to the local network whose every request takes a drawn round
// trip of virtual time (half before, half after), as rpcTransport does with a fixed one.
type jitterRPC struct {
	j    *jitterSource
	base time.Duration
	next http.RoundTripper
}

func (t jitterRPC) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	d := t.j.draw(t.base)
	_ = t.j.clock.Sleep(req.Context(), d/2)
	resp, err := t.next.RoundTrip(out)
	_ = t.j.clock.Sleep(req.Context(), d-d/2)
	return resp, err
}

// noTickets hides a client's UpdateItem.
type noTickets struct{ dynamo.Client }

// environments builds n execution environments of the rig's deployment: each its own
// wiring.Build (channel pool, cadence, clients) on the rig's table and network, its DynamoDB
// and Stellar requests charged rtt.
func (r *rig) environments(tb testing.TB, n int, rtt envRTT) []*wiring.Service {
	tb.Helper()
	j := newJitterSource(r.clock, rtt)
	deps := r.deps
	deps.Dynamo = jitterDynamo{j: j, base: rtt.dynamo, inner: tallyDynamo{inner: r.db}}
	if os.Getenv("BENCH_UNSCHEDULED") != "" {
		// The pool as it was before the channel calendar: a client without UpdateItem leaves
		// wiring's pool unscheduled (channels tried in random order).
		deps.Dynamo = noTickets{deps.Dynamo}
	}
	deps.HTTPClient = &http.Client{Transport: jitterRPC{j: j, base: rtt.stellar, next: http.DefaultTransport}, Timeout: stellar.DefaultHTTPTimeout}
	envs := make([]*wiring.Service, n)
	for i := range envs {
		svc, err := wiring.Build(deps)
		if err != nil {
			tb.Fatal(err)
		}
		if os.Getenv("BENCH_CLAIM_FIRST") != "" {
			// Every call claims its key before it asks for a channel, as before the admission:
			// a busy answer then costs the claim and its release.
			svc.Orchestrator.Admission = nil
		}
		envs[i] = svc
	}
	return envs
}

// envResult is one Lambda-model run's figures: result's, plus the channel pools of every
// environment summed and the cold starts.
type envResult struct {
	result
	envs       int   // environments, one per caller: each one's first call is a cold start
	coldStarts int64 // environments that served at least one call
	// firstRequests are the DynamoDB requests of the run's first ledger (every cold environment
	// meeting an empty pool), per call made in it.
	leaseWrites int64 // conditional lease writes: won + failed
	// breakdown classes the run's DynamoDB requests by the answer of the call that made them.
	breakdown *breakdown
}

// failedPerLease is failed lease writes (conditional lease writes another holder won) per lease.
func (r envResult) failedPerLease() float64 {
	return float64(r.stats.Collisions) / float64(max(r.stats.Leases, 1))
}

// postTo sends one POST /transfers through h (in process, as API Gateway hands it to the Lambda).
// ctx carries the call's tally of DynamoDB requests (breakdown_test.go).
func postTo(ctx context.Context, h http.Handler, key, wallet string, stroops int64) answer {
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"%d.%07d","asset":"USDC"}`, wallet, stroops/1e7, stroops%1e7)
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/transfers", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
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

// runEnvs is rig.run with one environment per caller (envs[c] serves every call of caller c, as
// a warm Lambda environment serves one invocation after another): callers send transfers back to
// back until window has passed, a 503 CHANNELS_BUSY caller sleeps its Retry-After and retries the
// same key. Throughput and latency count the transfers that finished within the window after
// its first two ledgers; DynamoDB requests and lease writes count every request of the run
// (its first ledgers and the retries past the window included) over every transfer paid.
func (r *rig) runEnvs(tb testing.TB, envs []*wiring.Service, window time.Duration, run int) envResult {
	tb.Helper()
	before := len(r.net.Envelopes())
	appliedBefore := len(r.net.Applied())
	var stats0 sources.PoolStats
	for _, e := range envs {
		stats0 = addStats(stats0, e.Channels.Stats())
	}
	r.db.Reset()
	start := r.clock.Now()
	end := start.Add(window)
	measureFrom := start.Add(2 * r.interval)
	wallStart := time.Now()
	var (
		mu       sync.Mutex
		res      envResult
		amounts  []int64
		reported atomic.Bool
		wg       sync.WaitGroup
		used     = make([]bool, len(envs))
	)
	res.envs = len(envs)
	res.breakdown = &breakdown{}
	fail := func(format string, args ...any) {
		if reported.CompareAndSwap(false, true) {
			tb.Logf("first failure: "+format, args...)
		}
	}
	release := r.clock.Hold()
	defer r.closeOnTime()()
	for c := range envs {
		r.clock.Go(&wg, func() {
			h := envs[c].Handler
			for i := 0; ; i++ {
				t0 := r.clock.Now()
				if !t0.Before(end) {
					return
				}
				key := fmt.Sprintf("env-%d-%04d-%06d", run, c, i)
				stroops := r.amounts.Add(1)
				mu.Lock()
				amounts = append(amounts, stroops)
				used[c] = true
				mu.Unlock()
				for try := 0; ; try++ {
					c0 := r.clock.Now()
					t := &callTally{}
					a := postTo(context.WithValue(context.Background(), tallyKey{}, t), h, key, r.wallets[c%len(r.wallets)], stroops)
					c1 := r.clock.Now()
					switch {
					case a.status == http.StatusOK:
						res.breakdown.addCall("200", t)
					case a.status == http.StatusServiceUnavailable && a.code == transfer.CodeChannelsBusy:
						res.breakdown.addCall("503 busy", t)
					default:
						res.breakdown.addCall(fmt.Sprintf("%d %s", a.status, a.code), t)
					}
					mu.Lock()
					res.calls++
					res.longestCall = max(res.longestCall, c1.Sub(c0))
					busy := a.status == http.StatusServiceUnavailable && a.code == transfer.CodeChannelsBusy
					if busy {
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
					if a.retryAfter <= 0 || try == 50 || !busy {
						mu.Lock()
						res.failures++
						mu.Unlock()
						fail("%s: %d %s after %d tries", key, a.status, a.code, try+1)
						if a.retryAfter <= 0 || try == 50 {
							break
						}
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
	var st sources.PoolStats
	for i, e := range envs {
		st = addStats(st, e.Channels.Stats())
		if used[i] {
			res.coldStarts++
		}
	}
	res.stats = subStats(st, stats0)
	res.leaseWrites = res.stats.Leases + res.stats.Collisions
	return res
}

func addStats(a, b sources.PoolStats) sources.PoolStats {
	a.Leases += b.Leases
	a.Collisions += b.Collisions
	a.Waits += b.Waits
	a.Releases += b.Releases
	a.Busy += b.Busy
	a.Tickets += b.Tickets
	a.Reused += b.Reused
	return a
}

func subStats(a, b sources.PoolStats) sources.PoolStats {
	a.Leases -= b.Leases
	a.Collisions -= b.Collisions
	a.Waits -= b.Waits
	a.Releases -= b.Releases
	a.Busy -= b.Busy
	a.Tickets -= b.Tickets
	a.Reused -= b.Reused
	return a
}

// reportEnvs reports res against limit (transfers per second the channels allow).
func reportEnvs(b *testing.B, res envResult, limit float64) {
	b.ReportMetric(res.perSecond()/limit, "bound-share")
	b.ReportMetric(float64(res.ddbRequests)/float64(max(res.completed, 1)), "ddb-req/transfer")
	b.ReportMetric(res.failedPerLease(), "failed-lease-writes/lease")
	b.ReportMetric(100*res.busyShare(), "%503")
	b.ReportMetric(res.percentile(0.5).Seconds(), "p50-s")
	b.ReportMetric(res.percentile(0.99).Seconds(), "p99-s")
	b.ReportMetric(res.longestCall.Seconds(), "longest-call-s")
	b.ReportMetric(float64(res.coldStarts), "cold-starts")
	b.ReportMetric(float64(res.failures), "failures")
	b.ReportMetric(float64(res.busyWithoutRetryAfter), "503-no-retry-after")
	b.ReportMetric(float64(res.paidTwice), "paid-twice")
	b.ReportMetric(float64(res.unpaid), "unpaid")
	b.ReportMetric(float64(res.firstSendRefusals), "refused-sends")
	b.ReportMetric(res.wall.Seconds(), "wall-s")
	b.ReportMetric(res.percentile(0.9).Seconds(), "p90-s")
	if os.Getenv("BENCH_BREAKDOWN") != "" {
		b.Logf("DynamoDB requests by the answer of the call that made them:%s", res.breakdown)
	}
}

// BenchmarkChannelsLambda is BenchmarkChannels as Lambda runs the service: one execution
// environment per concurrent caller (its own wiring.Build and channel pool, reused by every call
// of that caller), every DynamoDB and Stellar request charged a round trip (defaultEnvRTT), on
// Stellar RPC at 4, 16 and 64 channels, four callers per channel, ledgers every 5 s of virtual
// time, a window of 12 ledgers. Goals (README "Lambda-shaped throughput"): bound-share at
// least 0.95, ddb-req/transfer at most 8, failed-lease-writes/lease at most 0.05, paid-twice 0.
// BENCH_BREAKDOWN=1 logs the requests by operation, item, condition and outcome, for the calls
// answered 200 and 503 (breakdown_test.go).
// BENCH_LAMBDA_CHANNELS (comma-separated) picks the channel counts; BENCH_UNSCHEDULED=1 runs the
// pool without the channel calendar (channels tried in random order, as before it);
// BENCH_CLAIM_FIRST=1 without the admission (every call claims its key first, so a busy answer
// costs the claim and its release instead of a read).
func BenchmarkChannelsLambda(b *testing.B) {
	benchLambda(b, 4)
}

// BenchmarkOverloadLambda is BenchmarkChannelsLambda at 8 callers per channel.
func BenchmarkOverloadLambda(b *testing.B) {
	benchLambda(b, 8)
}

func benchLambda(b *testing.B, perChannel int) {
	const interval = 5 * time.Second
	counts := []int{4, 16, 64}
	if s := os.Getenv("BENCH_LAMBDA_CHANNELS"); s != "" {
		counts = nil
		for f := range strings.SplitSeq(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n <= 0 {
				b.Fatalf("BENCH_LAMBDA_CHANNELS: %q is not a channel count", f)
			}
			counts = append(counts, n)
		}
	}
	for _, channels := range counts {
		b.Run(fmt.Sprintf("rpc/channels=%d", channels), func(b *testing.B) {
			r := newRig(b, "rpc", channels, interval)
			envs := r.environments(b, perChannel*channels, defaultEnvRTT())
			var res envResult
			for i := range b.N {
				res = r.runEnvs(b, envs, 12*interval, i)
			}
			reportEnvs(b, res, float64(channels)/interval.Seconds())
		})
	}
}

// TestChannelsLambdaSmall is BenchmarkChannelsLambda at 4 channels and 16 environments over 8
// ledgers: every call ends within its budget, every 503 has a Retry-After, every transfer is paid
// exactly once, at most 0.05 failed lease writes per lease, at least 0.95 of the channel bound and
// at most 7.5 DynamoDB requests per transfer (7.1 measured; the benchmark's goal is 8), and at most
// one call in ten answered CHANNELS_BUSY wrote a claim: the others were answered before their claim
// (transfer.Admission), with a booking and a read of the key. Without the channel calendar
// (BENCH_UNSCHEDULED=1) it fails: about 30 failed writes per lease and 66 requests per transfer.
func TestChannelsLambdaSmall(t *testing.T) {
	r := newRig(t, "rpc", 4, 5*time.Second)
	envs := r.environments(t, 16, defaultEnvRTT())
	res := r.runEnvs(t, envs, 8*5*time.Second, 0)
	checkOverload(t, res.result)
	share, perTransfer := res.perSecond()/(4.0/5), float64(res.ddbRequests)/float64(max(res.completed, 1))
	if res.failedPerLease() > 0.05 || share < 0.95 || perTransfer > 7.5 {
		t.Errorf("%.3f failed lease writes per lease (want <= 0.05), %.2f of the bound (>= 0.95), %.2f DynamoDB requests per transfer (<= 7.5)",
			res.failedPerLease(), share, perTransfer)
	}
	busy, claims := res.breakdown.count("503 busy")
	if busy == 0 || claims*10 > busy {
		t.Errorf("%d of %d calls answered CHANNELS_BUSY wrote a claim, want at most one in ten", claims, busy)
	}
	t.Logf("%d transfers, bound share %.2f, %.2f DynamoDB requests per transfer, %.3f failed lease writes per lease, %d of %d calls 503, pool %+v, wall %v",
		res.transfers, share, perTransfer, res.failedPerLease(), res.busy, res.calls, res.stats, res.wall)
	t.Logf("DynamoDB requests by operation: %v", r.db.Counts())
	t.Logf("DynamoDB requests by the answer of the call that made them:%s", res.breakdown)
}
