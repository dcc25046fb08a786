package loadtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
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

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// A burst of transfers, many more than channels, posted at one instant, once
// synchronously (callers honour Retry-After) and once asynchronously (Prefer: respond-async, then
// the SQS event source invokes SubmitterFunction), each on a fresh rig with round trips in virtual
// time (latency_test.go), so every invocation's duration is what Lambda would bill.

const (
	// sqsRTT is one SQS SendMessage from a Lambda in the queue's region (the API's send after the
	// claim): an HTTPS request answered once the message is stored, tens of milliseconds at most.
	sqsRTT = 10 * time.Millisecond
	// pollGap is the event source's idle poll in the model: a poller that found the queue empty
	// looks again this much later (SQS long polling answers as soon as a message arrives; the
	// gap only bounds how late an idle poller sees one).
	pollGap = 20 * time.Millisecond
	// asyncInterval is the ledger interval of the burst benchmark (virtual).
	asyncInterval = 5 * time.Second
)

// eventSource is SubmitterFunction's SQS event source as the template configures it for a channel
// count: the Submitter mapping's BatchSize and MaxConcurrency, the mapping's
// MaximumBatchingWindowInSeconds, TransferQueue's VisibilityTimeout and its redrive policy's
// maxReceiveCount; payload is Lambda's limit on one invocation's event (maxPayload).
type eventSource struct {
	batchSize, maxConcurrency int
	window                    time.Duration
	payload                   int
	visibility                time.Duration
	maxReceives               int
}

// eventSourceFor reads channels' row of template.yaml's Submitter mapping and TransferQueue's
// properties; it fails tb when the template has no row for channels.
func eventSourceFor(tb testing.TB, channels int) eventSource {
	tb.Helper()
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		tb.Fatal(err)
	}
	num := func(v any, what string) int {
		s, _ := cfntemplate.String(v)
		n, err := strconv.Atoi(s)
		if err != nil {
			tb.Fatalf("template.yaml: %s = %v, want an integer", what, v)
		}
		return n
	}
	row, ok := tpl.Mappings["Submitter"][strconv.Itoa(channels)]
	if !ok {
		tb.Fatalf("template.yaml: the Submitter mapping has no row for ChannelCount %d", channels)
	}
	q := tpl.Resources["TransferQueue"].Properties
	redrive, _ := cfntemplate.Lookup(q, "RedrivePolicy", "maxReceiveCount")
	window, _ := cfntemplate.Lookup(tpl.Resources["SubmitterFunction"].Properties, "Events", "Transfers", "Properties", "MaximumBatchingWindowInSeconds")
	return eventSource{
		batchSize:      num(row["BatchSize"], "BatchSize"),
		maxConcurrency: num(row["MaxConcurrency"], "MaxConcurrency"),
		window:         time.Duration(num(window, "MaximumBatchingWindowInSeconds")) * time.Second,
		payload:        maxPayload,
		visibility:     time.Duration(num(q["VisibilityTimeout"], "VisibilityTimeout")) * time.Second,
		maxReceives:    num(redrive, "maxReceiveCount"),
	}
}

// billedMs is what Lambda bills for an invocation that ran d: its duration rounded up to the
// next millisecond (AWS Lambda pricing: "Duration is calculated from the time your code begins
// executing until it returns or otherwise terminates, rounded up to the nearest 1 ms").
func billedMs(d time.Duration) int64 {
	return int64(math.Ceil(float64(d) / float64(time.Millisecond)))
}

// sqsQueue is the API's transfer.Queue in the model: SendMessage takes sqsRTT of virtual time,
// then the message waits in an in-process queue (queue.Memory) for the event source.
type sqsQueue struct {
	clock interface {
		Sleep(ctx context.Context, d time.Duration) error
	}
	mem   *queue.Memory
	sends atomic.Int64
}

func (q *sqsQueue) Send(ctx context.Context, m transfer.QueueMessage) error {
	_ = q.clock.Sleep(ctx, sqsRTT)
	q.sends.Add(1)
	return q.mem.Send(ctx, m)
}

// take receives up to n messages without waiting (a ReceiveMessage of MaxNumberOfMessages n).
func (q *sqsQueue) take(n int) []transfer.QueueMessage {
	done, cancel := context.WithCancel(context.Background())
	cancel() // Memory.Receive answers a waiting message before it looks at the context
	var out []transfer.QueueMessage
	for len(out) < n {
		m, err := q.mem.Receive(done)
		if err != nil {
			break
		}
		out = append(out, m)
	}
	return out
}

// burst is one side's figures for a burst of transfers posted at one instant.
type burst struct {
	transfers int
	// settled is the virtual time from the burst to the last transfer settled (the last 200 of
	// the sync side; the last run that settled its transfer on the async side).
	settled time.Duration
	// ledgers is how many ledgers, from the first that paid one of the transfers to the last,
	// the payments spanned.
	ledgers int
	// billedMs sums every invocation's billed duration: each API call (202s, 200s, 503s and
	// retries) and each SubmitterFunction invocation.
	billedMs, apiCalls, submitterInvocations int64
	apiBilledMs                              int64 // the API calls' share of billedMs
	busy                                     int   // 503 CHANNELS_BUSY answers (sync)
	requeued                                 int   // runs answered DeliveryRetry (async)
	deadLettered                             int   // messages past maxReceiveCount (async)
	ddbRequests, sqsRequests                 int64 // SQS: SendMessage, ReceiveMessage with messages, DeleteMessageBatch, ChangeMessageVisibility
	failures                                 int   // answers neither expected nor retryable
	firstRequeue                             string
	firstFailure                             string
	paidTwice, unpaid                        int
	leftQueued                               int               // messages still in the queue at the end (async)
	notSuccess                               int               // async transfers whose GET does not answer success
	pool                                     sources.PoolStats // the submitter containers' channel pools, summed (async)
	wall                                     time.Duration
	// endToEndTimes is, per transfer finished within the run, its first POST to its settlement (async:
	// the run that settled it; sync: its 200); unfinished counts the others, so percentiles are
	// over every transfer (endToEndAt).
	endToEndTimes []time.Duration
	unfinished    int
	// submitterBilledMs is the SubmitterFunction invocations' share of billedMs; delivered counts
	// the messages they were given (a message delivered again counts again), largestBatch the most
	// one invocation was given (async).
	submitterBilledMs, delivered int64
	largestBatch                 int
	// perKeyRequests counts, over every batched invocation, the DynamoDB requests of its per-key
	// phases, and perKeySaved what their round trips would have added had they been slept one after
	// the other (batch_test.go: perKeyPhase); 0 without batches.
	perKeyRequests int64
	perKeySaved    time.Duration
}

// sustained is the transfers per second over the ledgers that paid them, against channels per
// ledger interval: 1 when every channel carried a transfer in every one of those ledgers.
func (b burst) sustained(channels int) float64 {
	return float64(b.transfers) / float64(max(b.ledgers, 1)*channels)
}

// endToEnd is the transfers per second from the burst to the last settlement, against channels
// per ledger interval: below sustained by the first ledger's wait and the last one's proof.
func (b burst) endToEnd(channels int) float64 {
	return float64(b.transfers) / b.settled.Seconds() / (float64(channels) / asyncInterval.Seconds())
}

func (b burst) msPerTransfer() float64 { return float64(b.billedMs) / float64(max(b.transfers, 1)) }

// msPerInvocation is the billed ms of one SubmitterFunction invocation, on average.
func (b burst) msPerInvocation() float64 {
	return float64(b.submitterBilledMs) / float64(max(b.submitterInvocations, 1))
}

// meanBatch is the messages per SubmitterFunction invocation, on average.
func (b burst) meanBatch() float64 {
	return float64(b.delivered) / float64(max(b.submitterInvocations, 1))
}

// endToEndAt is the p-quantile (0 < p <= 1) of the end-to-end times over every transfer, an
// unfinished one counting as longer than any: ok is false when the quantile falls on one.
func (b burst) endToEndAt(p float64) (d time.Duration, ok bool) {
	e := slices.Clone(b.endToEndTimes)
	slices.Sort(e)
	i := int(math.Ceil(p*float64(len(e)+b.unfinished))) - 1
	if i < 0 || i >= len(e) {
		return 0, false
	}
	return e[i], true
}

// tally counts, from the network's payments since appliedBefore, the amounts paid twice and never,
// and the span of ledgers that paid them.
func (r *rig) tally(res *burst, amounts []int64, appliedBefore int) {
	var first, last uint32
	res.paidTwice, res.unpaid, first, last = r.payments(amounts, appliedBefore)
	if first != 0 {
		res.ledgers = int(last-first) + 1
	}
}

// postBurst is one POST /transfers of the burst, through the service's HTTP handler, with
// Prefer: respond-async when async.
func postBurst(h http.Handler, key, wallet string, stroops int64, async bool) answer {
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"%d.%07d","asset":"USDC"}`, wallet, stroops/1e7, stroops%1e7)
	req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if async {
		req.Header.Set("Prefer", "respond-async")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{status: rec.Code}
	if a.status >= 400 {
		var p struct{ Code string }
		_ = json.Unmarshal(rec.Body.Bytes(), &p)
		a.code = p.Code
	}
	if s, err := strconv.Atoi(rec.Header().Get("Retry-After")); err == nil {
		a.retryAfter = time.Duration(s) * time.Second
	}
	return a
}

// burstSync posts n transfers at one instant without Prefer, one caller each; a caller answered
// 503 CHANNELS_BUSY sleeps its Retry-After and retries the same key, as rig.run's callers do.
func burstSync(tb testing.TB, backend string, channels, n int) burst {
	tb.Helper()
	return steadySync(tb, backend, channels, n, nil)
}

// steadySync is burstSync with transfer i's first POST at arrivals[i] from the start instead (all
// at once when arrivals is nil).
func steadySync(tb testing.TB, backend string, channels, n int, arrivals []time.Duration) burst {
	tb.Helper()
	r := startRig(tb, rigConfig{backend: backend, channels: channels, interval: asyncInterval, roundTrips: true})
	var (
		mu      sync.Mutex
		res     = burst{transfers: n}
		amounts = make([]int64, n)
		wg      sync.WaitGroup
		lastOK  time.Time
	)
	appliedBefore := len(r.net.Applied())
	start, wall := r.clock.Now(), time.Now()
	release := r.clock.Hold()
	stopClosing := r.closeOnTime()
	for i := range n {
		amounts[i] = r.amounts.Add(1)
		r.clock.Go(&wg, func() {
			_ = r.clock.Sleep(context.Background(), arrivalAt(arrivals, i))
			key := fmt.Sprintf("sync-%06d", i)
			first := r.clock.Now()
			for try := 0; ; try++ {
				c0 := r.clock.Now()
				a := postBurst(r.svc.Handler, key, r.wallets[i%len(r.wallets)], amounts[i], false)
				c1 := r.clock.Now()
				mu.Lock()
				res.apiCalls++
				res.billedMs += billedMs(c1.Sub(c0))
				res.apiBilledMs += billedMs(c1.Sub(c0))
				busy := a.status == http.StatusServiceUnavailable && a.code == transfer.CodeChannelsBusy && a.retryAfter > 0
				if !busy || try == 1000 {
					if a.status == http.StatusOK {
						res.endToEndTimes = append(res.endToEndTimes, c1.Sub(first))
					} else {
						res.unfinished++
					}
				}
				switch {
				case a.status == http.StatusOK:
					lastOK = later(lastOK, c1)
				case busy:
					res.busy++
				default:
					res.failures++
					if res.firstFailure == "" {
						res.firstFailure = fmt.Sprintf("%s: %d %s", key, a.status, a.code)
					}
				}
				mu.Unlock()
				if !busy || try == 1000 {
					return
				}
				_ = r.clock.Sleep(context.Background(), a.retryAfter)
			}
		})
	}
	release()
	wg.Wait()
	stopClosing()
	res.settled, res.wall = lastOK.Sub(start), time.Since(wall)
	res.ddbRequests = r.db.Total()
	r.tally(&res, amounts, appliedBefore)
	return res
}

// arrivalAt is transfer i's arrival, from the start, in arrivals (0 when there is none).
func arrivalAt(arrivals []time.Duration, i int) time.Duration {
	if i < 0 || i >= len(arrivals) {
		return 0
	}
	return arrivals[i]
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// burstAsync posts n transfers at one instant with Prefer: respond-async (each POST one ApiFunction
// invocation, answered 202 after the claim and the SQS send), while the event source of es plays
// SQS's pollers for SubmitterFunction: up to es.maxConcurrency invocations at once, each of up to
// es.batchSize messages, batched as Lambda batches them (poller.gather: the batching window
// es.window, the payload limit), through the function's real handler (queue.Submitter), each invocation in
// its own container (a wiring.Build of its own, with its own channel pool, on the same table and
// network, as Lambda runs each concurrent invocation in its own execution environment). A message
// the handler reports failed is delivered again after the visibility timeout the handler gave it
// (ChangeMessageVisibility: queue.Backoff), else the queue's, or dead-lettered after
// maxReceiveCount receives. It stops once every transfer settled (or a virtual
// hour passed) and nothing is waiting to be delivered again.
func burstAsync(tb testing.TB, backend string, channels, n int, es eventSource) burst {
	tb.Helper()
	res, _ := burstAsyncWith(tb, backend, channels, n, nil, es, trickle{})
	return res
}

// trickle is a steady stream of synchronous callers during an async burst: one new caller every
// every, count of them, the first at the burst's instant. Each posts without Prefer and, answered
// 503 CHANNELS_BUSY, sleeps its Retry-After and retries the same key, as burstSync's callers do,
// until a 200 or patience (virtual, from its first POST) has passed.
type trickle struct {
	count    int
	every    time.Duration
	patience time.Duration
}

// trickleFigures is what the trickle's callers saw.
type trickleFigures struct {
	calls        int             // sync transfers
	endToEnd     []time.Duration // per served transfer: first POST to its 200
	busy         int             // 503 CHANNELS_BUSY answers
	longest      time.Duration   // the longest single sync POST
	longest202   time.Duration   // the longest single async POST (the burst's)
	servedAt     []time.Duration // per served transfer: its 200, from the burst's instant
	mostBusy     int             // the most 503s one transfer met
	gaveUp       int             // transfers never answered 200 within patience
	failures     int             // answers neither 200 nor 503 CHANNELS_BUSY
	firstFailure string
}

// burstAsyncWith is burstAsync with async transfer i posted at arrivals[i] from the start (nil: a
// burst at one instant) and the synchronous callers of tr alongside
// (none when tr.count is 0); every transfer of both, async and sync, is tallied in the burst's
// paid-twice and unpaid counts, and the sync calls in its apiCalls and billed ms; its ledgers,
// settled time and end-to-end times are the async transfers' only. The run gives up an hour
// (virtual) after the last POST; a transfer not settled by then is counted unfinished.
func burstAsyncWith(tb testing.TB, backend string, channels, n int, arrivals []time.Duration, es eventSource, tr trickle) (burst, trickleFigures) {
	tb.Helper()
	q := &sqsQueue{mem: queue.NewMemory()}
	r := startRig(tb, rigConfig{backend: backend, channels: channels, interval: asyncInterval, roundTrips: true, queue: q})
	q.clock = r.clock
	return runAsync(tb, r, q, n, arrivals, es, tr, batchMode{}, time.Hour)
}

// batchMode is how runAsync builds SubmitterFunction: on, as BATCH_SIZE above 1 builds it; serial,
// with its orchestrators Serial and the per-key round trips deferred (batch_test.go: perKeyPhase)
// rather than its goroutines participants of the virtual clock.
type batchMode struct{ on, serial bool }

// runAsync is burstAsyncWith on r, started with q as its queue and round trips, giving up patience
// (virtual) after the last POST instead of an hour. With bm.on, each
// SubmitterFunction container is built as BATCH_SIZE above 1 builds it (r's settings must say
// so; it fails tb when they do not) and invoked through queue.BatchSubmitter, as
// wiring.SubmitterHandler picks it, with its goroutines participants of the virtual clock, or, with
// bm.serial, its orchestrator Serial and the round trips of its per-key writes deferred as if
// concurrent (batch_test.go: perKeyPhase).
func runAsync(tb testing.TB, r *rig, q *sqsQueue, n int, arrivals []time.Duration, es eventSource, tr trickle, bm batchMode, patience time.Duration) (burst, trickleFigures) {
	tb.Helper()
	var tf trickleFigures
	var (
		mu         sync.Mutex
		res        = burst{transfers: n}
		amounts    = make([]int64, n)
		wg         sync.WaitGroup
		settled    = map[string]bool{}      // store keys whose run settled them
		posted     = map[string]time.Time{} // store key: its POST's start
		doneAt     = map[string]time.Time{} // store key: the run that settled it ended
		lastDone   time.Time
		pending    int // messages waiting out their visibility timeout
		receives   = map[transfer.QueueMessage]int{}
		containers []*wiring.Service
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		res.failures++
		if res.firstFailure == "" {
			res.firstFailure = fmt.Sprintf(format, args...)
		}
	}
	appliedBefore := len(r.net.Applied())
	start, wall := r.clock.Now(), time.Now()
	giveUp := start.Add(arrivalAt(arrivals, n-1) + patience)
	finished := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return (len(settled)+res.deadLettered >= n && pending == 0) || !r.clock.Now().Before(giveUp)
	}
	release := r.clock.Hold()
	stopClosing := r.closeOnTime()
	for i := range n {
		amounts[i] = r.amounts.Add(1)
		r.clock.Go(&wg, func() {
			_ = r.clock.Sleep(context.Background(), arrivalAt(arrivals, i))
			key := fmt.Sprintf("async-%06d", i)
			c0 := r.clock.Now()
			mu.Lock()
			posted[transfer.StoreKey(r.wallets[i%len(r.wallets)], key)] = c0
			mu.Unlock()
			a := postBurst(r.svc.Handler, key, r.wallets[i%len(r.wallets)], amounts[i], true)
			c1 := r.clock.Now()
			mu.Lock()
			res.apiCalls++
			res.billedMs += billedMs(c1.Sub(c0))
			res.apiBilledMs += billedMs(c1.Sub(c0))
			tf.longest202 = max(tf.longest202, c1.Sub(c0))
			mu.Unlock()
			if a.status != http.StatusAccepted {
				fail("%s: %d %s, want 202", key, a.status, a.code)
			}
		})
	}
	syncAmounts := make([]int64, tr.count)
	for i := range tr.count {
		syncAmounts[i] = r.amounts.Add(1)
		r.clock.Go(&wg, func() {
			_ = r.clock.Sleep(context.Background(), time.Duration(i)*tr.every)
			key := fmt.Sprintf("sync-%06d", i)
			first := r.clock.Now()
			for try := 0; ; try++ {
				c0 := r.clock.Now()
				a := postBurst(r.svc.Handler, key, r.wallets[i%len(r.wallets)], syncAmounts[i], false)
				c1 := r.clock.Now()
				busy := a.status == http.StatusServiceUnavailable && a.code == transfer.CodeChannelsBusy && a.retryAfter > 0
				mu.Lock()
				res.apiCalls++
				res.billedMs += billedMs(c1.Sub(c0))
				res.apiBilledMs += billedMs(c1.Sub(c0))
				tf.longest = max(tf.longest, c1.Sub(c0))
				switch {
				case a.status == http.StatusOK:
					tf.endToEnd = append(tf.endToEnd, c1.Sub(first))
					tf.servedAt = append(tf.servedAt, c1.Sub(start))
					tf.mostBusy = max(tf.mostBusy, try)
				case busy:
					tf.busy++
				default:
					tf.failures++
					if tf.firstFailure == "" {
						tf.firstFailure = fmt.Sprintf("%s: %d %s", key, a.status, a.code)
					}
				}
				giveUp := busy && c1.Add(a.retryAfter).Sub(first) > tr.patience
				if giveUp {
					tf.gaveUp++
				}
				mu.Unlock()
				if !busy || giveUp {
					return
				}
				_ = r.clock.Sleep(context.Background(), a.retryAfter)
			}
		})
	}
	tf.calls = tr.count
	for w := range es.maxConcurrency {
		deps := r.deps
		// As Init.TransferService builds SubmitterFunction.
		deps.ChannelWaitLedgers = wiring.SubmitterChannelWaitLedgers
		if bm.serial {
			deps.Clock = phaseClock{deps.Clock}
		}
		if os.Getenv("BENCH_UNSCHEDULED") != "" {
			// The submitters' pools as they were before the channel calendar (as in
			// environments): a client without UpdateItem leaves wiring's pool unscheduled.
			deps.Dynamo = noTickets{deps.Dynamo}
		}
		container, err := wiring.Build(deps) // SubmitterFunction sends nothing: no queue
		if err != nil {
			tb.Fatal(err)
		}
		if bm.on {
			if container.Orchestrator.Batches == nil {
				tb.Fatal("the submitter's settings build no batches (BATCH_SIZE above 1 on a classic vault)")
			}
			if bm.serial {
				container.Orchestrator.Serial = true
			} else {
				// The batch path's goroutines as participants of the virtual clock (batch_test.go).
				container.Orchestrator.Parallel = r.clock.Parallel
			}
		}
		containers = append(containers, container)
		p := &poller{es: es, q: q, clock: r.clock}
		r.clock.Go(&wg, func() {
			for id := 0; !finished(); id++ {
				batch := p.gather(finished)
				if len(batch) == 0 {
					continue
				}
				ev := events.SQSEvent{}
				byID := map[string]transfer.QueueMessage{}
				mu.Lock()
				for j, m := range batch {
					body, err := queue.Encode(m)
					if err != nil {
						tb.Error(err)
					}
					receives[m]++
					msgID := fmt.Sprintf("w%d-%d-%d", w, id, j)
					byID[msgID] = m
					ev.Records = append(ev.Records, events.SQSMessage{MessageId: msgID, ReceiptHandle: msgID, Body: body, EventSource: "aws:sqs",
						Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives[m])}})
				}
				res.sqsRequests++ // the poller's ReceiveMessage
				res.submitterInvocations++
				res.delivered += int64(len(batch))
				res.largestBatch = max(res.largestBatch, len(batch))
				mu.Unlock()
				done := func(m transfer.QueueMessage, d transfer.Delivery, err error, at time.Time) {
					mu.Lock()
					defer mu.Unlock()
					switch d {
					case transfer.DeliveryDone:
						if !settled[m.StoreKey] {
							settled[m.StoreKey] = true
							doneAt[m.StoreKey] = at
							lastDone = later(lastDone, at)
						}
					case transfer.DeliveryRetry:
						res.requeued++
						if res.firstRequeue == "" {
							res.firstRequeue = fmt.Sprintf("%s at %v: %v", m.StoreKey, at.Sub(start), err)
						}
					}
				}
				c0 := r.clock.Now()
				vis := &visibilityLog{timeouts: map[string]time.Duration{}}
				redelivery := queue.Visibility{Changer: vis, URL: "https://sqs.example/transfers"}
				var (
					resp events.SQSEventResponse
					err  error
				)
				if bm.on {
					phase := &perKeyPhase{}
					ctx := context.Background()
					if bm.serial {
						ctx = context.WithValue(ctx, perKeyPhaseKey{}, phase)
					}
					resp, err = queue.BatchSubmitter(batchInvocation{orch: container.Orchestrator, clock: r.clock, done: done}, redelivery, nil)(ctx, ev)
					phase.flush(ctx, r.clock)
					deferred, saved := phase.figures()
					mu.Lock()
					res.perKeyRequests += int64(deferred)
					res.perKeySaved += saved
					mu.Unlock()
				} else {
					inv := newInvocation(r, container.Orchestrator, len(batch), done)
					resp, err = queue.Submitter(inv, redelivery, nil)(context.Background(), ev)
					inv.close()
				}
				c1 := r.clock.Now()
				if err != nil {
					fail("SubmitterFunction: %v", err)
				}
				mu.Lock()
				res.billedMs += billedMs(c1.Sub(c0))
				res.submitterBilledMs += billedMs(c1.Sub(c0))
				if len(resp.BatchItemFailures) < len(batch) {
					res.sqsRequests++ // DeleteMessageBatch of the acknowledged messages
				}
				mu.Unlock()
				for _, f := range resp.BatchItemFailures {
					m := byID[f.ItemIdentifier]
					wait, changed := vis.timeout(f.ItemIdentifier)
					if !changed {
						wait = es.visibility
					}
					mu.Lock()
					res.sqsRequests += vis.calls(f.ItemIdentifier) // ChangeMessageVisibility
					if receives[m] >= es.maxReceives {
						res.deadLettered++
						mu.Unlock()
						continue
					}
					pending++
					mu.Unlock()
					r.clock.Go(&wg, func() {
						_ = r.clock.Sleep(context.Background(), wait)
						_ = q.mem.Send(context.Background(), m)
						mu.Lock()
						pending--
						mu.Unlock()
					})
				}
			}
		})
	}
	release()
	wg.Wait()
	stopClosing()
	res.settled, res.wall = lastDone.Sub(start), time.Since(wall)
	for k, at := range posted {
		if d, ok := doneAt[k]; ok {
			res.endToEndTimes = append(res.endToEndTimes, d.Sub(at))
		} else {
			res.unfinished++
		}
	}
	res.ddbRequests = r.db.Total()
	res.sqsRequests += q.sends.Load()
	res.leftQueued = len(q.mem.Drain())
	for _, c := range containers {
		st := c.Channels.Stats()
		res.pool.Leases += st.Leases
		res.pool.Collisions += st.Collisions
		res.pool.Waits += st.Waits
		res.pool.Busy += st.Busy
		res.pool.Releases += st.Releases
	}
	r.tally(&res, amounts, appliedBefore) // the burst's ledgers: the async transfers' only
	res.paidTwice, res.unpaid, _, _ = r.payments(append(amounts[:n:n], syncAmounts...), appliedBefore)
	for i := range n {
		req := httptest.NewRequest(http.MethodGet, "/wallets/"+r.wallets[i%len(r.wallets)]+"/transfers/"+fmt.Sprintf("async-%06d", i), nil)
		rec := httptest.NewRecorder()
		r.svc.Handler.ServeHTTP(rec, req)
		var view struct{ Status string }
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &view) != nil || view.Status != "success" {
			res.notSuccess++
		}
	}
	return res, tf
}

// asyncCase is one row of the burst benchmark: both sides for channels and a burst of
// perChannel transfers per channel.
type asyncCase struct {
	backend              string // STELLAR_BACKEND
	channels, perChannel int
	es                   eventSource
	sync, async          burst
}

// checkBurst fails tb unless every transfer of res was paid exactly once and nothing failed or was
// left in the queue.
func checkBurst(tb testing.TB, side string, res burst) {
	tb.Helper()
	if res.failures != 0 || res.paidTwice != 0 || res.unpaid != 0 || res.leftQueued != 0 || res.deadLettered != 0 || res.notSuccess != 0 {
		tb.Errorf("%s: %d failures (first: %s), %d paid twice, %d unpaid, %d left queued, %d dead-lettered, %d GETs not success",
			side, res.failures, res.firstFailure, res.paidTwice, res.unpaid, res.leftQueued, res.deadLettered, res.notSuccess)
	}
	if res.ledgers == 0 || res.settled <= 0 || res.billedMs <= 0 {
		tb.Errorf("%s: a figure is not positive: %+v", side, res)
	}
}

func measureBurst(tb testing.TB, backend string, channels, perChannel int) asyncCase {
	tb.Helper()
	c := asyncCase{backend: backend, channels: channels, perChannel: perChannel, es: eventSourceFor(tb, channels)}
	n := channels * perChannel
	c.async = burstAsync(tb, backend, channels, n, c.es)
	checkBurst(tb, "async", c.async)
	c.sync = burstSync(tb, backend, channels, n)
	checkBurst(tb, "sync", c.sync)
	return c
}

// asyncTable renders the cases as the README's Markdown table.
func asyncTable(cases []asyncCase) string {
	var b strings.Builder
	b.WriteString("| backend | channels | BatchSize x MaxConcurrency | transfers | throughput / bound: sync | async | end to end: sync | async | last settled: sync | async | billed ms per transfer: sync | async | async / sync | 503s per transfer (sync) | DynamoDB requests per transfer: sync | async | SQS requests per transfer |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, c := range cases {
		s, a := c.sync, c.async
		fmt.Fprintf(&b, "| %s | %d | %d x %d | %d | %.2f | %.2f | %.2f | %.2f | %.0f s | %.0f s | %.0f | %.0f | %.2f | %.1f | %.1f | %.1f | %.1f |\n",
			c.backend, c.channels, c.es.batchSize, c.es.maxConcurrency, s.transfers,
			s.sustained(c.channels), a.sustained(c.channels), s.endToEnd(c.channels), a.endToEnd(c.channels),
			s.settled.Seconds(), a.settled.Seconds(), s.msPerTransfer(), a.msPerTransfer(), a.msPerTransfer()/s.msPerTransfer(),
			float64(s.busy)/float64(s.transfers), float64(s.ddbRequests)/float64(s.transfers), float64(a.ddbRequests)/float64(a.transfers),
			float64(a.sqsRequests)/float64(a.transfers))
	}
	return b.String()
}

func logCase(tb testing.TB, c asyncCase) {
	tb.Helper()
	for _, side := range []struct {
		name string
		res  burst
	}{{"sync", c.sync}, {"async", c.async}} {
		r := side.res
		tb.Logf("%s, %d channels, %d transfers, %s: throughput %.2f of the bound over %d ledgers (end to end %.2f), last settled at %v, %.0f billed ms per transfer (%.0f of them in %d API calls, %d 503s, %d submitter invocations, %d requeued, first: %s), pool %+v, wall %v",
			c.backend, c.channels, r.transfers, side.name, r.sustained(c.channels), r.ledgers, r.endToEnd(c.channels), r.settled, r.msPerTransfer(),
			float64(r.apiBilledMs)/float64(max(r.transfers, 1)), r.apiCalls, r.busy, r.submitterInvocations, r.requeued, r.firstRequeue, r.pool, r.wall.Round(time.Millisecond))
	}
}

// TestAsyncBurst is the burst benchmark at a small size, run by every `go test`: 4 channels and a
// burst of 10 transfers per channel, both sides, on both backends. Every transfer is paid exactly once (counted from
// the network's payments), nothing fails or is left in the queue, and every async transfer's GET
// answers success. Speed and cost are measured by BenchmarkAsync, not asserted.
func TestAsyncBurst(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			logCase(t, measureBurst(t, backend, 4, 10))
		})
	}
}

// BenchmarkAsync measures the cost and scale of asynchronous transfers (`make bench-async`): for
// Stellar RPC and Horizon, 4, 16 and 64 channels, a burst of 10 and 100 transfers per channel posted
// at one instant, with ledgers every 5 s of virtual time and round trips in virtual time (stellarRTT,
// dynamoRTT, sqsRTT), once synchronously and once with Prefer: respond-async through
// SubmitterFunction's event source as template.yaml configures it (eventSourceFor). It reports,
// side by side: throughput against the channel bound (channels per ledger) over the ledgers that
// paid the burst and from the burst to the last settlement, the time to the last settlement, and
// Lambda's billed milliseconds per transfer (every invocation's duration rounded up to the next
// ms); and prints them as a Markdown table. Goals: throughput at least 0.95 of the
// bound, async billed ms at most a fifth of sync. BENCH_ASYNC_MAX=<n> skips the cases of more
// than n transfers; by default 1,600 (7.5 minutes on 2 cores shared with other work): the 6,400 of 64
// channels at 100x take about 4.5 minutes per backend, most of it the synchronous side's 85,000
// calls (BENCH_ASYNC_MAX=6400). BENCH_UNSCHEDULED=1 builds the submitters' containers on a client
// without UpdateItem, so their channel pools are unscheduled (no channel calendar), as
// BenchmarkChannelsLambda's environments are with it.
func BenchmarkAsync(b *testing.B) {
	limit := 1600
	if s := os.Getenv("BENCH_ASYNC_MAX"); s != "" {
		var err error
		if limit, err = strconv.Atoi(s); err != nil || limit < 1 {
			b.Fatalf("BENCH_ASYNC_MAX=%q: want a positive integer", s)
		}
	}
	var cases []asyncCase
	for _, backend := range []string{"rpc", "horizon"} {
		for _, channels := range []int{4, 16, 64} {
			for _, perChannel := range []int{10, 100} {
				if channels*perChannel > limit {
					continue
				}
				b.Run(fmt.Sprintf("%s/channels=%d/burst=%dx", backend, channels, perChannel), func(b *testing.B) {
					var c asyncCase
					for range b.N {
						c = measureBurst(b, backend, channels, perChannel)
					}
					logCase(b, c)
					b.ReportMetric(c.sync.sustained(channels), "sync-of-bound")
					b.ReportMetric(c.async.sustained(channels), "async-of-bound")
					b.ReportMetric(c.sync.settled.Seconds(), "sync-last-s")
					b.ReportMetric(c.async.settled.Seconds(), "async-last-s")
					b.ReportMetric(c.sync.msPerTransfer(), "sync-billed-ms/transfer")
					b.ReportMetric(c.async.msPerTransfer(), "async-billed-ms/transfer")
					b.ReportMetric(float64(c.sync.paidTwice+c.async.paidTwice), "paid-twice")
					b.ReportMetric(float64(c.sync.unpaid+c.async.unpaid), "unpaid")
					cases = append(cases, c)
				})
			}
		}
	}
	fmt.Printf("\nA burst at one instant, 5 s ledgers (round trips: RPC %v, DynamoDB %v, SQS %v):\n\n%s\n",
		stellarRTT, dynamoRTT, sqsRTT, asyncTable(cases))
}

// BenchmarkMixed is what a client of the synchronous API sees while a payout backlog drains
// (README.md, "Benchmarks"): on Stellar RPC with 16 channels, an async burst of 100 transfers per
// channel (1,600) posted at one instant, as BenchmarkAsync's, and alongside it a trickle of
// synchronous transfers, one new caller every 2.5 s of virtual time for the first 400 s (160
// callers), each honouring Retry-After on 503 CHANNELS_BUSY and retrying the same key, giving up
// after an hour (virtual) without a 200. The same burst without the trickle runs first, for the
// async side's comparison. It reports the sync transfers' end-to-end time (first POST to 200)
// p50/p90/max, 503s per sync transfer, the longest single API call, how many gave up, and the
// async side's last settlement and throughput with and without the trickle. Every transfer, async
// and sync, is paid exactly once (rig.payments). Not run by `make test`: about 20 s on 2 cores.
//
//	go test -count=1 -run '^$' -bench '^BenchmarkMixed$' -benchtime 1x -timeout 30m ./internal/loadtest
func BenchmarkMixed(b *testing.B) {
	const backend, channels, perChannel = "rpc", 16, 100
	tr := trickle{count: 160, every: 2500 * time.Millisecond, patience: time.Hour}
	es := eventSourceFor(b, channels)
	n := channels * perChannel
	var alone, mixed burst
	var tf trickleFigures
	for range b.N {
		alone = burstAsync(b, backend, channels, n, es)
		checkBurst(b, "async alone", alone)
		mixed, tf = burstAsyncWith(b, backend, channels, n, nil, es, tr)
		checkBurst(b, "async with the trickle", mixed)
	}
	if tf.failures != 0 {
		b.Errorf("sync: %d answers neither 200 nor 503 CHANNELS_BUSY (first: %s)", tf.failures, tf.firstFailure)
	}
	if len(tf.endToEnd)+tf.gaveUp != tf.calls {
		b.Errorf("sync: %d served and %d gave up of %d callers", len(tf.endToEnd), tf.gaveUp, tf.calls)
	}
	e2e := slices.Clone(tf.endToEnd)
	slices.Sort(e2e)
	pct := func(p float64) time.Duration {
		if len(e2e) == 0 {
			return 0
		}
		return e2e[min(len(e2e)-1, int(math.Ceil(p*float64(len(e2e))))-1)]
	}
	during := 0
	for _, at := range tf.servedAt {
		if at <= mixed.settled {
			during++
		}
	}
	b.Logf("sync trickle (%d callers, one every %v): %d served (%d of them before the backlog's last settlement), %d gave up; first POST to 200: p50 %v, p90 %v, max %v; %.2f 503s per sync transfer (at most %d for one); longest single sync POST %v, longest async POST %v",
		tf.calls, tr.every, len(e2e), during, tf.gaveUp, pct(0.5), pct(0.9), pct(1), float64(tf.busy)/float64(tf.calls), tf.mostBusy, tf.longest, tf.longest202)
	for _, side := range []struct {
		name string
		res  burst
	}{{"async alone", alone}, {"async with the trickle", mixed}} {
		r := side.res
		b.Logf("%s: %d transfers, last settled at %v, throughput %.2f of the bound over %d ledgers, end to end %.2f, %d requeued, pool %+v",
			side.name, r.transfers, r.settled, r.sustained(channels), r.ledgers, r.endToEnd(channels), r.requeued, r.pool)
	}
	b.ReportMetric(pct(0.5).Seconds(), "sync-p50-s")
	b.ReportMetric(pct(0.9).Seconds(), "sync-p90-s")
	b.ReportMetric(pct(1).Seconds(), "sync-max-s")
	b.ReportMetric(float64(tf.busy)/float64(tf.calls), "503s/sync-transfer")
	b.ReportMetric(float64(tf.gaveUp), "sync-gave-up")
	b.ReportMetric(alone.settled.Seconds(), "async-alone-last-s")
	b.ReportMetric(mixed.settled.Seconds(), "async-mixed-last-s")
	b.ReportMetric(float64(alone.paidTwice+mixed.paidTwice), "paid-twice")
	b.ReportMetric(float64(alone.unpaid+mixed.unpaid), "unpaid")
}
