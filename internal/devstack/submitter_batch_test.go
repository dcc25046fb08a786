package devstack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The stand-in's event source is the template's for every ChannelCount, batched or not: the
// Submitter mapping's BatchSize and MaxConcurrency, or, batched, the BatchMessages mapping's
// BatchSize x TransfersPerTransaction messages and the same MaxConcurrency; and its batching
// window.
func TestTheStandInEventSourceIsTheTemplates(t *testing.T) {
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	num := func(v any) int {
		s, _ := cfntemplate.String(v)
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("%v is not an integer", v)
		}
		return n
	}
	window, _ := cfntemplate.Lookup(tpl.Resources["SubmitterFunction"].Properties, "Events", "Transfers", "Properties", "MaximumBatchingWindowInSeconds")
	if w := time.Duration(num(window)) * time.Second; w != templateBatchingWindow {
		t.Fatalf("the template's batching window is %s, the stand-in's %s", w, templateBatchingWindow)
	}
	for _, c := range tpl.Parameters["ChannelCount"]["AllowedValues"].([]any) {
		count, _ := cfntemplate.String(c)
		n, _ := strconv.Atoi(count)
		row := tpl.Mappings["Submitter"][count]
		want := eventSource{batch: num(row["BatchSize"]), concurrency: num(row["MaxConcurrency"]), window: templateBatchingWindow}
		if got := templateEventSource(n, 1); got != want {
			t.Errorf("ChannelCount %d: %+v, want the template's %+v", n, got, want)
		}
		k := num(row["BatchSize"])
		want = eventSource{batch: num(tpl.Mappings["BatchMessages"]["50"][strconv.Itoa(k)]), concurrency: num(row["MaxConcurrency"]), window: templateBatchingWindow}
		if got := templateEventSource(n, 50); got != want {
			t.Errorf("ChannelCount %d, TransfersPerTransaction 50: %+v, want the template's %+v", n, got, want)
		}
	}
}

// recordingBatches is a queue.BatchRunner that records each event's messages and answers
// DeliveryRetry (CHANNELS_BUSY, 2 s) for the keys in retry.
type recordingBatches struct {
	mu     sync.Mutex
	events [][]transfer.QueueMessage
	retry  map[string]bool
}

func (r *recordingBatches) RunQueued(context.Context, transfer.QueueMessage) (transfer.Delivery, error) {
	return transfer.DeliveryDone, nil
}

func (r *recordingBatches) RunQueuedBatch(_ context.Context, msgs []transfer.QueueMessage) []transfer.Answer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, msgs)
	out := make([]transfer.Answer, len(msgs))
	for i, m := range msgs {
		out[i] = transfer.Answer{Delivery: transfer.DeliveryDone}
		if r.retry[m.StoreKey] {
			out[i] = transfer.Answer{Delivery: transfer.DeliveryRetry, Err: &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 2 * time.Second}}
		}
	}
	return out
}

// The stand-in delivers SQS-shaped batches: the messages waiting, up to the event's batch size,
// in one event to the batch handler (queue.BatchSubmitter); a message it reports failed alone is
// delivered again after its backoff, the others are forgotten.
func TestTheStandInDeliversSQSBatches(t *testing.T) {
	q := queue.NewMemory()
	r := &recordingBatches{retry: map[string]bool{"transfer:0123456789abcdef:k1": true}}
	s := newSubmitter(q, r, true, nil, eventSource{batch: 2, concurrency: 1}, func(parent context.Context) (context.Context, context.CancelFunc) {
		return context.WithCancel(parent)
	})
	var waits []time.Duration
	var redeliver []func()
	s.after = func(d time.Duration, f func()) { waits, redeliver = append(waits, d), append(redeliver, f) }
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var sent []transfer.QueueMessage
	for i := range 3 {
		m := transfer.QueueMessage{StoreKey: fmt.Sprintf("transfer:0123456789abcdef:k%d", i), ClaimID: "c"}
		sent = append(sent, m)
		if err := q.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.receive(ctx)
	if err != nil || len(first) != 2 || first[0] != sent[0] || first[1] != sent[1] {
		t.Fatalf("first event %v, %v; want the first two messages (batch size 2)", first, err)
	}
	s.run(ctx, first...)
	second, err := s.receive(ctx)
	if err != nil || len(second) != 1 || second[0] != sent[2] {
		t.Fatalf("second event %v, %v; want the third message alone (the window is over)", second, err)
	}
	s.run(ctx, second...)
	if len(r.events) != 2 || len(r.events[0]) != 2 || len(r.events[1]) != 1 {
		t.Fatalf("the batch handler ran %v, want events of 2 and 1", r.events)
	}
	if len(waits) != 1 || waits[0] != 2*time.Second {
		t.Fatalf("redeliveries after %v, want one after 2 s (the failed message's backoff)", waits)
	}
	redeliver[0]()
	again, err := s.receive(ctx)
	if err != nil || len(again) != 1 || again[0] != sent[1] || s.receives[sent[1]] != 1 || len(s.receives) != 1 {
		t.Fatalf("redelivered %v, %v (receives %v); want the failed message, its second receive pending", again, err, s.receives)
	}
}

// On the local stack with BATCH_SIZE 10, async transfers posted together reach SubmitterFunction
// as SQS batches, within the template's batching window, and settle through fewer transactions
// than transfers, each wallet paid once, counted from the local network.
func TestTheLocalStackFormsBatches(t *testing.T) {
	const n = 6
	// Two channels: two invocations at once, so six messages cannot all run alone.
	env := map[string]string{"BATCH_SIZE": "10", "CHANNEL_COUNT": "2"}
	s := startWith(t, Options{LedgerInterval: time.Second, DemoWallets: n, Getenv: envOf(env)})
	if src := s.ops.submit.src; src.batch != 10 || src.concurrency != 2 || src.window != templateBatchingWindow {
		t.Fatalf("the stand-in delivers %+v, want events of up to 10, two at once, gathered for 2 s", src)
	}
	before := len(s.Network.Applied())
	for i, w := range s.Info.Wallets[:n] {
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(w.Account, strconv.Itoa(i+1))))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", fmt.Sprintf("devstack-formed-%04d", i))
		req.Header.Set("Prefer", "respond-async")
		if r := do(t, req); r.status != http.StatusAccepted {
			t.Fatalf("POST %d = %d %v", i, r.status, r.body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var paid map[string]int
	var txs int
	for runs := 1; ; runs++ {
		paid, txs = map[string]int{}, 0
		for _, tx := range s.Network.Applied()[before:] {
			pays := 0
			for _, op := range tx.Ops {
				if op.Type == "payment" && tx.Status == "SUCCESS" {
					paid[op.Destination]++
					pays++
				}
			}
			if pays > 0 {
				txs++
			}
		}
		// Each run of the stand-in settles its event's transfers before it ends: wait for the next.
		if len(paid) == n || s.ops.submit.waitRuns(ctx, runs) != nil {
			break
		}
	}
	for _, w := range s.Info.Wallets[:n] {
		if paid[w.Account] != 1 {
			t.Errorf("wallet %s paid %d times, want once", w.Account, paid[w.Account])
		}
	}
	if txs >= n {
		t.Errorf("%d transfers went through %d transactions, want fewer: no batch formed", n, txs)
	}
	t.Logf("%d transfers, %d transactions", n, txs)
}
