package loadtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// Asynchronous transfers at a steady rate: how SubmitterFunction's event source batches them, and
// what that costs and adds to the client's wait.

const (
	// maxPayload is the most one invocation's event may weigh: an event source mapping passes its
	// batch "in a single call, up to the payload limit for synchronous invocation (6 MB)" (AWS
	// Lambda API reference, EventSourceMappingConfiguration, BatchSize), 6 MiB in Lambda's quotas.
	maxPayload = 6 << 20
	// recordOverhead is what an SQS record adds to its body in the event (messageId, a receipt
	// handle of a few hundred characters, attributes, MD5, ARN, region): a generous 1 KiB.
	recordOverhead = 1 << 10
)

// poller is one of the event source's pollers in the model, gathering batches for one
// SubmitterFunction invocation at a time (the model runs MaxConcurrency of them). It follows
// "Batching behavior" in the Lambda developer guide
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventsourcemapping.html): Lambda
// invokes the function once the batching window (MaximumBatchingWindowInSeconds) has passed, the
// batch size is met, or the payload reaches 6 MB; for SQS the default window is 0 ("sends batches
// to your function as quickly as possible") and "the next batching window begins as soon as the
// previous function invocation completes". The guide does not say what follows a window that
// gathered nothing; the model starts the next one then (a poller's windows run back to back while
// the queue is empty), so a message arriving at an idle poller waits out the rest of the current
// window. SQS long polling answers as soon as a message arrives; the model looks every pollGap.
type poller struct {
	es    eventSource
	q     *sqsQueue
	clock interface {
		Now() time.Time
		Sleep(ctx context.Context, d time.Duration) error
	}
	// carry is a message received but left out of the last batch because it would have taken the
	// payload past es.payload: the next batch starts with it.
	carry []transfer.QueueMessage
}

// recordSize is what m weighs in an invocation's event (its encoded body and recordOverhead).
func recordSize(m transfer.QueueMessage) int {
	body, _ := queue.Encode(m)
	return len(body) + recordOverhead
}

// gather returns the poller's next batch: at least one message, at most es.batchSize, weighing at
// most es.payload (one message alone always goes), once the batch is full, the payload limit is
// reached or the window begun at the call (the previous invocation's end) has passed with
// something gathered. It returns nil once stop answers true while nothing is gathered.
func (p *poller) gather(stop func() bool) []transfer.QueueMessage {
	windowEnds := p.clock.Now().Add(p.es.window)
	var batch []transfer.QueueMessage
	size := 0
	for {
		for len(batch) < p.es.batchSize {
			var m transfer.QueueMessage
			if len(p.carry) > 0 {
				m, p.carry = p.carry[0], p.carry[1:]
			} else if got := p.q.take(1); len(got) == 1 {
				m = got[0]
			} else {
				break
			}
			if s := recordSize(m); len(batch) > 0 && size+s > p.es.payload {
				p.carry = append(p.carry, m)
				return batch
			} else {
				size += s
			}
			batch = append(batch, m)
		}
		now := p.clock.Now()
		if len(batch) == p.es.batchSize || (len(batch) > 0 && !now.Before(windowEnds)) {
			return batch
		}
		if len(batch) == 0 && stop() {
			return nil
		}
		if !now.Before(windowEnds) {
			windowEnds = now.Add(p.es.window) // an empty window: the next begins
		}
		wait := pollGap
		if left := windowEnds.Sub(now); left > 0 && left < wait {
			wait = left
		}
		_ = p.clock.Sleep(context.Background(), wait)
	}
}

// rateCase is one row of the steady-rate benchmark: both sides at rate transfers a second on
// channels, the async side's event source with window as its batching window.
type rateCase struct {
	backend     string
	channels    int
	rate        float64 // transfers a second
	es          eventSource
	sync, async burst
	syncRun     bool // whether the sync side was measured (once per rate and channels)
}

// poissonArrivals is n arrival times at rate a second on average, the first at 0: independent
// clients, so the gaps are exponential (a Poisson process), seeded by the rate so that every row
// of a rate, async or sync and whatever its window, sees the same arrivals. Evenly spaced arrivals
// would lock to the ledger clock (at 0.1 a second every transfer would start at the same phase of
// its ledger) and hide the spread of the wait for a ledger.
func poissonArrivals(n int, rate float64) []time.Duration {
	rng := rand.New(rand.NewPCG(uint64(rate*1000), 26))
	out := make([]time.Duration, n)
	for i := 1; i < n; i++ {
		out[i] = out[i-1] + time.Duration(rng.ExpFloat64()/rate*float64(time.Second))
	}
	return out
}

// measureRate runs n async transfers arriving at rate a second (poissonArrivals) through es, and
// when withSync the same without Prefer, each side on a fresh rig, and checks each as checkBurst
// does.
func measureRate(tb testing.TB, backend string, channels int, rate float64, n int, es eventSource, withSync bool) rateCase {
	tb.Helper()
	c := rateCase{backend: backend, channels: channels, rate: rate, es: es, syncRun: withSync}
	arrivals := poissonArrivals(n, rate)
	c.async, _ = burstAsyncWith(tb, backend, channels, n, arrivals, es, trickle{})
	checkRate(tb, "async", c.async)
	if withSync {
		c.sync = steadySync(tb, backend, channels, n, arrivals)
		checkRate(tb, "sync", c.sync)
	}
	return c
}

// checkRate fails tb unless nothing was paid twice or failed, nothing is left in the queue, and the
// transfers the run did not finish (dead-lettered, or still waiting out a backoff at its end) are
// exactly the unpaid ones and the async ones whose GET does not answer success: unlike a burst's,
// a steady-rate row reports its unfinished transfers rather than failing on them.
func checkRate(tb testing.TB, side string, res burst) {
	tb.Helper()
	if res.failures != 0 || res.paidTwice != 0 || res.leftQueued != 0 || res.unpaid != res.unfinished ||
		(side == "async" && res.notSuccess != res.unfinished) || len(res.endToEndTimes)+res.unfinished != res.transfers {
		tb.Errorf("%s: %d failures (first: %s), %d paid twice, %d unpaid, %d unfinished, %d finished of %d, %d left queued, %d dead-lettered, %d GETs not success",
			side, res.failures, res.firstFailure, res.paidTwice, res.unpaid, res.unfinished, len(res.endToEndTimes), res.transfers, res.leftQueued, res.deadLettered, res.notSuccess)
	}
	if res.billedMs <= 0 {
		tb.Errorf("%s: no billed ms: %+v", side, res)
	}
}

// pctString renders the p-quantile of b's end-to-end times, or "unfinished" when it falls on a
// transfer that did not finish.
func pctString(b burst, p float64) string {
	d, ok := b.endToEndAt(p)
	if !ok {
		return "unfinished"
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// rateTable renders the cases as the README's Markdown table: the async side's rows, each with the
// sync side's figures at the same rate and channels where measured.
func rateTable(cases []rateCase) string {
	var b strings.Builder
	b.WriteString("| backend | channels | transfers/s | transfers | batching window | BatchSize x MaxConcurrency | invocations | batch size: mean | largest | billed ms per invocation | billed ms per transfer: async | sync | async / sync | end to end async: p50 | p90 | p99 | sync: p50 | p90 | p99 | unfinished: async | sync | CHANNELS_BUSY per transfer: async runs requeued | sync 503s | dead-lettered |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	syncOf := map[string]burst{}
	for _, c := range cases {
		if c.syncRun {
			syncOf[fmt.Sprintf("%s/%d/%g", c.backend, c.channels, c.rate)] = c.sync
		}
	}
	for _, c := range cases {
		a := c.async
		s, ok := syncOf[fmt.Sprintf("%s/%d/%g", c.backend, c.channels, c.rate)]
		syncMs, ratio, sp50, sp90, sp99, sUnf, sBusy := "-", "-", "-", "-", "-", "-", "-"
		if ok {
			syncMs = fmt.Sprintf("%.0f", s.msPerTransfer())
			ratio = fmt.Sprintf("%.2f", a.msPerTransfer()/s.msPerTransfer())
			sp50, sp90, sp99 = pctString(s, 0.5), pctString(s, 0.9), pctString(s, 0.99)
			sUnf = strconv.Itoa(s.unfinished)
			sBusy = fmt.Sprintf("%.2f", float64(s.busy)/float64(max(s.transfers, 1)))
		}
		fmt.Fprintf(&b, "| %s | %d | %g | %d | %v | %d x %d | %d | %.2f | %d | %.0f | %.0f | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %.2f | %s | %d |\n",
			c.backend, c.channels, c.rate, a.transfers, c.es.window, c.es.batchSize, c.es.maxConcurrency,
			a.submitterInvocations, a.meanBatch(), a.largestBatch, a.msPerInvocation(), a.msPerTransfer(), syncMs, ratio,
			pctString(a, 0.5), pctString(a, 0.9), pctString(a, 0.99), sp50, sp90, sp99, a.unfinished, sUnf,
			float64(a.requeued)/float64(max(a.transfers, 1)), sBusy, a.deadLettered)
	}
	return b.String()
}

// TestEventSourceBatching pins the model of Lambda's SQS batching (poller.gather) on a virtual
// clock, with each invocation lasting 100 ms: with no window a lone message goes at once; with a
// window the batch goes when the window begun at the previous invocation's end passes, or earlier
// once full; a window that gathered nothing is followed by the next; and a batch stops before the
// payload limit, the message left out starting the next.
func TestEventSourceBatching(t *testing.T) {
	type arrival struct {
		at time.Duration
		n  int
	}
	type batch struct {
		size int
		at   time.Duration // from the start
	}
	const invoke = 100 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	one := recordSize(transfer.QueueMessage{StoreKey: "k0000", ClaimID: "c"})
	for _, tc := range []struct {
		name     string
		es       eventSource
		arrivals []arrival
		want     []batch
	}{
		{"no window: each at once", eventSource{batchSize: 8, payload: maxPayload},
			[]arrival{{ms(1010), 1}, {ms(1510), 1}}, []batch{{1, ms(1020)}, {1, ms(1520)}}},
		{"window: gathered until it passes", eventSource{batchSize: 8, window: 2 * time.Second, payload: maxPayload},
			[]arrival{{ms(510), 1}, {ms(1010), 1}, {ms(3010), 1}}, []batch{{2, ms(2000)}, {1, ms(4100)}}},
		{"window: a full batch goes at once", eventSource{batchSize: 3, window: 2 * time.Second, payload: maxPayload},
			[]arrival{{ms(510), 2}, {ms(710), 2}}, []batch{{3, ms(720)}, {1, ms(2820)}}},
		{"window: empty windows run back to back", eventSource{batchSize: 8, window: 2 * time.Second, payload: maxPayload},
			[]arrival{{ms(5010), 1}}, []batch{{1, ms(6000)}}},
		{"payload: the batch goes before the limit", eventSource{batchSize: 8, window: time.Second, payload: 2 * one},
			[]arrival{{ms(510), 3}}, []batch{{2, ms(520)}, {1, ms(1620)}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := vclock.New(time.Unix(1_900_000_000, 0))
			q := &sqsQueue{mem: queue.NewMemory(), clock: clock}
			p := &poller{es: tc.es, q: q, clock: clock}
			start := clock.Now()
			var (
				wg  sync.WaitGroup
				got []batch
			)
			release := clock.Hold()
			clock.Go(&wg, func() {
				k := 0
				for _, a := range tc.arrivals {
					_ = clock.Sleep(context.Background(), start.Add(a.at).Sub(clock.Now()))
					for range a.n {
						_ = q.mem.Send(context.Background(), transfer.QueueMessage{StoreKey: fmt.Sprintf("k%04d", k), ClaimID: "c"})
						k++
					}
				}
			})
			clock.Go(&wg, func() {
				for len(got) < len(tc.want) {
					b := p.gather(func() bool { return false })
					got = append(got, batch{len(b), clock.Now().Sub(start)})
					_ = clock.Sleep(context.Background(), invoke)
				}
			})
			release()
			wg.Wait()
			if !slices.Equal(got, tc.want) {
				t.Errorf("batches (size, when) = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestAsyncSteady is the steady-rate benchmark at a small size, run by every `go test`: 4
// channels, 12 transfers at 0.5 a second (below the bound of 0.8) on Stellar RPC, both sides, through the event source as
// template.yaml configures it. Every transfer is paid exactly once and finishes, nothing fails or
// is left in the queue, and the figures the table shows are consistent: every async transfer was
// delivered at least once, in batches no larger than BatchSize, and has its end-to-end time.
func TestAsyncSteady(t *testing.T) {
	es := eventSourceFor(t, 4)
	c := measureRate(t, "rpc", 4, 0.5, 12, es, true)
	for _, side := range []struct {
		name string
		b    burst
	}{{"async", c.async}, {"sync", c.sync}} {
		if len(side.b.endToEndTimes) != 12 || side.b.unfinished != 0 {
			t.Errorf("%s: %d end-to-end times and %d unfinished, want 12 and 0", side.name, len(side.b.endToEndTimes), side.b.unfinished)
		}
		if p50, ok := side.b.endToEndAt(0.5); !ok || p50 <= 0 {
			t.Errorf("%s: p50 = %v, %v", side.name, p50, ok)
		}
	}
	a := c.async
	if a.delivered < 12 || a.largestBatch < 1 || a.largestBatch > es.batchSize || a.submitterInvocations < 1 || a.submitterBilledMs <= 0 {
		t.Errorf("async: %d delivered in %d invocations (largest %d, BatchSize %d), %d submitter billed ms",
			a.delivered, a.submitterInvocations, a.largestBatch, es.batchSize, a.submitterBilledMs)
	}
	t.Logf("\n%s", rateTable([]rateCase{c}))
}

// TestEndToEndCountsUnfinished: a quantile that falls on an unfinished transfer is reported as
// such, not taken from the finished ones alone.
func TestEndToEndCountsUnfinished(t *testing.T) {
	b := burst{endToEndTimes: []time.Duration{3 * time.Second, time.Second, 2 * time.Second}, unfinished: 1}
	if d, ok := b.endToEndAt(0.5); !ok || d != 2*time.Second {
		t.Errorf("p50 = %v, %v; want 2s", d, ok)
	}
	if d, ok := b.endToEndAt(0.75); !ok || d != 3*time.Second {
		t.Errorf("p75 = %v, %v; want 3s", d, ok)
	}
	if d, ok := b.endToEndAt(0.99); ok {
		t.Errorf("p99 = %v, want unfinished", d)
	}
	if got := pctString(b, 0.99); got != "unfinished" {
		t.Errorf("pctString(p99) = %q", got)
	}
}

// rateRows are the steady-rate benchmark's rates (transfers a second), the channel counts each
// is measured on (the bound is channels / 5 s: 3.2 transfers a second on 16, 12.8 on 64) and the
// transfers per row (60 s of arrivals at 10 a second, 200 s at 1, 1,000 s at 0.1).
var rateRows = []struct {
	rate      float64
	channels  []int
	transfers int
}{
	{0.1, []int{16, 64}, 100},
	{1, []int{16, 64}, 200},
	{10, []int{64}, 600},
}

// BenchmarkAsyncRate measures asynchronous transfers arriving at a steady rate
// (`make bench-async-rate`): on Stellar RPC with 5 s ledgers (virtual) and the round trips of
// BenchmarkAsync, transfers posted one every 1/rate s at 0.1, 1 and 10 a second (rateRows), with
// Prefer: respond-async through SubmitterFunction's event source as template.yaml configures it
// (BatchSize, MaxConcurrency) under each batching window of BENCH_ASYNC_WINDOWS (seconds,
// comma-separated; by default 0, 1, 2, 5 and 10, and the template's own), the batching modelled
// as Lambda's SQS poller does it (poller.gather); and once per rate and channel count the same
// transfers without Prefer, for comparison. Per row: SubmitterFunction invocations, the batch size
// they were given (mean, largest), billed ms per invocation and per transfer (API calls included)
// against sync's, and end-to-end p50/p90/p99 over every transfer (first POST to the run that
// settled it; sync: to its 200), a quantile that falls on an unfinished transfer shown as such.
// Nothing is paid twice, and the transfers a row leaves unfinished are exactly the unpaid ones
// (checkRate). BENCH_UNSCHEDULED=1 runs the submitters' channel pools unscheduled (no channel
// calendar), as BenchmarkAsync does. Printed as a Markdown table.
func BenchmarkAsyncRate(b *testing.B) {
	windows := []time.Duration{0, time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second}
	if s := os.Getenv("BENCH_ASYNC_WINDOWS"); s != "" {
		windows = nil
		for _, f := range strings.Split(s, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 || n > 300 {
				b.Fatalf("BENCH_ASYNC_WINDOWS=%q: want whole seconds from 0 to 300, comma-separated", s)
			}
			windows = append(windows, time.Duration(n)*time.Second)
		}
	}
	var cases []rateCase
	for _, row := range rateRows {
		for _, channels := range row.channels {
			es := eventSourceFor(b, channels)
			ws := windows
			if !slices.Contains(ws, es.window) {
				ws = append(slices.Clone(ws), es.window)
			}
			slices.Sort(ws)
			for i, w := range ws {
				b.Run(fmt.Sprintf("rate=%g/channels=%d/window=%v", row.rate, channels, w), func(b *testing.B) {
					e := es
					e.window = w
					var c rateCase
					for range b.N {
						c = measureRate(b, "rpc", channels, row.rate, row.transfers, e, i == 0)
					}
					b.Logf("async %d transfers at %g/s, window %v: %d invocations, batch mean %.2f (largest %d), %.0f billed ms per invocation, %.0f per transfer, p50 %s p90 %s p99 %s, %d unfinished, %d requeued (first: %s), pool %+v, wall %v",
						c.async.transfers, row.rate, w, c.async.submitterInvocations, c.async.meanBatch(), c.async.largestBatch, c.async.msPerInvocation(), c.async.msPerTransfer(),
						pctString(c.async, 0.5), pctString(c.async, 0.9), pctString(c.async, 0.99), c.async.unfinished, c.async.requeued, c.async.firstRequeue, c.async.pool, c.async.wall.Round(time.Millisecond))
					if c.syncRun {
						b.Logf("sync %d transfers at %g/s: %.0f billed ms per transfer, p50 %s p90 %s p99 %s, %d unfinished, %d 503s, wall %v",
							c.sync.transfers, row.rate, c.sync.msPerTransfer(), pctString(c.sync, 0.5), pctString(c.sync, 0.9), pctString(c.sync, 0.99), c.sync.unfinished, c.sync.busy, c.sync.wall.Round(time.Millisecond))
					}
					b.ReportMetric(c.async.msPerTransfer(), "async-billed-ms/transfer")
					b.ReportMetric(c.async.meanBatch(), "batch")
					b.ReportMetric(float64(c.async.paidTwice+c.async.unpaid+c.sync.paidTwice+c.sync.unpaid), "paid-twice+unpaid")
					cases = append(cases, c)
				})
			}
		}
	}
	fmt.Printf("\nA steady rate, 5 s ledgers (round trips: RPC %v, DynamoDB %v, SQS %v; Stellar RPC):\n\n%s\n",
		stellarRTT, dynamoRTT, sqsRTT, rateTable(cases))
}
