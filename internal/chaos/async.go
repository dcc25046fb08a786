package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The campaign's async mode (Config.Async; README.md, "Asynchronous transfers"): callers post
// with Prefer: respond-async (Orchestrator.Enqueue) and their messages go to an SQS model
// (sqs.go) that loses, duplicates (the same message received again), reorders and delays them.
// Beside each wave, the event source mapping's pollers (submitterMapping) invoke SubmitterFunction's
// real handler (queue.Submitter) with batches, several invocations at once, each of which may
// crash as any caller does; the mapping deletes what an invocation acknowledged, and the handler
// backs failed messages off with ChangeMessageVisibility, which may fail. The sweep sends queued
// items again. After healing, the queue is drained and the late messages arrive: each must do
// nothing.

// asyncGraceInCampaign is the sweep's grace for queued items in the campaign: a couple of sweeps.
const asyncGraceInCampaign = 2 * time.Minute

// submitterMapping is SubmitterFunction's event source mapping in the campaign for its channel
// count: BatchSize about half the channels (template.yaml's Submitter mapping: 4 for 8 channels),
// at least 1 and at most 8, and MaxConcurrency 3, one more than the template's 2, so that two
// invocations hold copies of one key's message more often.
func (r *rig) submitterMapping() (batch, concurrency int) {
	return min(max(r.cfg.Channels/2, 1), 8), 3
}

// invocation is one SubmitterFunction invocation: the records of its batch run at once in the
// real handler (queue.Submitter), and when one of them crashes the whole invocation dies: its
// other runs crash at their next step, it changes no more visibility and answers nothing, so
// the event source mapping deletes none of its messages.
type invocation struct {
	r      *rig
	n      int
	faulty bool
	dead   atomic.Bool
	// left is how many of the batch's runs still hold a place on the virtual clock (invoke).
	mu   sync.Mutex
	left int
	// seen, when set, is told every run's outcome (the late messages' check).
	seen func(m transfer.QueueMessage, d transfer.Delivery, err error)
	// batched: the invocation is queue.BatchSubmitter's, every step on the invoking
	// participant's place on the clock (batches.go).
	batched bool
}

type invocationKey struct{}

func invocationOf(ctx context.Context) *invocation {
	inv, _ := ctx.Value(invocationKey{}).(*invocation)
	return inv
}

// release hands a finished run's place on the virtual clock back; the last one is the invoking
// participant's own, which it keeps.
func (inv *invocation) release() {
	if inv.batched {
		return // its steps ran on the invoking participant's place (batches.go)
	}
	inv.mu.Lock()
	inv.left--
	last := inv.left == 0
	inv.mu.Unlock()
	if !last {
		inv.r.clock.Done()
	}
}

// campaignRunner is the queue.Runner of the campaign's SubmitterFunction: the orchestrator's
// RunQueued, each record with its own caller (its fault and crash dice) of the invocation in ctx.
type campaignRunner struct{ r *rig }

func (cr campaignRunner) RunQueued(ctx context.Context, m transfer.QueueMessage) (d transfer.Delivery, err error) {
	inv := invocationOf(ctx)
	h := fnv.New64a()
	_, _ = h.Write([]byte(m.StoreKey + "\x00" + m.ClaimID))
	c := &caller{name: fmt.Sprintf("submitter %d (%s)", inv.n, m.StoreKey), faulty: inv.faulty, inv: inv,
		rng: rand.New(rand.NewPCG(cr.r.cfg.Seed, 1<<42+uint64(inv.n)<<20^h.Sum64()))}
	// The handler changes the visibility of a message exactly when its run answers DeliveryRetry
	// (queue.Submitter): the run's place on the clock is handed back then, else now.
	defer func() {
		if v := recover(); v != nil {
			inv.release()
			panic(v)
		}
		if d != transfer.DeliveryRetry {
			inv.release()
		}
	}()
	d, err = cr.r.orch.RunQueued(withCaller(ctx, c), m)
	cr.r.events.add("delivery_" + string(d))
	switch {
	case errors.Is(err, errCrash):
		cr.r.events.add("delivery_crashed")
		inv.dead.Store(true)
	case d == transfer.DeliveryRetry:
		cr.r.events.add("delivery_retry_" + retryCause(err))
	}
	if inv.seen != nil {
		inv.seen(m, d, err)
	}
	return d, err
}

// invoke runs SubmitterFunction's handler on ev as the event source mapping does, from a
// participant of the virtual clock, then deletes what it acknowledged (nothing if it died). The
// handler runs each record in a goroutine of its own; each of those is a participant in the
// caller's stead until its run is over (Clock.Add, invocation.release).
// When the wave batches (batches.go) the handler is queue.BatchSubmitter, whose runs stay on the
// invoking participant.
func (r *rig) invoke(ev events.SQSEvent, n int, faulty bool, seen func(transfer.QueueMessage, transfer.Delivery, error)) {
	inv := &invocation{r: r, n: n, faulty: faulty, left: len(ev.Records), seen: seen}
	handler := r.handler
	if _, ok := r.batched(); ok {
		inv.batched, handler = true, r.batches.handler
	} else {
		r.clock.Add(len(ev.Records) - 1)
	}
	resp, err := handler(context.WithValue(context.Background(), invocationKey{}, inv), ev)
	if err != nil {
		r.events.add("delivery_batch_error") // the handler never answers an error: the whole batch again
		inv.dead.Store(true)
	}
	died := inv.dead.Load()
	if died {
		r.events.add("invocation_died")
	}
	r.events.addN("delivery_batch_item_failures", len(resp.BatchItemFailures))
	r.queue.answer(ev, resp, died)
}

// retryCause names why a run answered DeliveryRetry: its problem's code, "requeued" without an
// error, "other" for an error without a problem.
func retryCause(err error) string {
	var p transfer.ProblemError
	switch {
	case err == nil:
		return "requeued"
	case errors.As(err, &p):
		return p.Problem().Code
	}
	return "other"
}

// submitter is one of the event source mapping's pollers beside a wave: while active says the
// wave's callers are at work it receives a batch and invokes SubmitterFunction with it (a new
// invocation each time, which may crash); with nothing visible it waits a fifth of a second.
func (r *rig) submitter(wave, poller int, active func() bool) {
	n := wave<<20 | poller<<16
	idle := withCaller(context.Background(), &caller{name: "submitter poller", rng: rand.New(rand.NewPCG(r.cfg.Seed, 1<<41+uint64(n)))})
	for active() {
		ev := r.receiveEvent(idle)
		if len(ev.Records) == 0 {
			_ = r.clock.Sleep(idle, 200*time.Millisecond)
			continue
		}
		n++
		r.invoke(ev, n, true, nil)
	}
}

// drainAsync runs after healing: every message is delivered as it becomes visible, and the sweep
// sends the queued items again, until no item is queued, in flight or in doubt (or 200 rounds).
// Then the late messages arrive; each must be stale, send nothing and be deleted. It returns the
// violations.
func (r *rig) drainAsync(ctx context.Context) []string {
	var bad []string
	n := 1 << 30
	deliver := func(seen func(transfer.QueueMessage, transfer.Delivery, error)) {
		for ev := r.receiveEvent(ctx); len(ev.Records) > 0; ev = r.receiveEvent(ctx) {
			n++
			r.invoke(ev, n, false, seen)
		}
	}
	open := func() int {
		k := 0
		for i := range r.cfg.Keys {
			rec, err := r.store.Get(ctx, r.storeKey(i))
			if err == nil && (rec.Status == transfer.StatusQueued || rec.Status == transfer.StatusInFlight || rec.Status == transfer.StatusInDoubt) {
				k++
			}
		}
		return k
	}
	for round := 0; ; round++ {
		deliver(nil)
		left := open()
		if left == 0 {
			break
		}
		if round == 200 {
			bad = append(bad, fmt.Sprintf("async: %d items still queued, in flight or in doubt after draining", left))
			break
		}
		_ = r.clock.Sleep(ctx, asyncGraceInCampaign+time.Second)
		if _, err := r.ops.Sweep(ctx); err != nil {
			bad = append(bad, "async: sweep while draining: "+err.Error())
			break
		}
	}
	// What is still in the queue (requeued copies of settled items, copies left by deletes) is
	// delivered as it becomes visible: each must be stale.
	sends := len(r.net.Envelopes())
	var mu sync.Mutex
	stale := func(m transfer.QueueMessage, d transfer.Delivery, err error) {
		if d != transfer.DeliveryStale {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("async: a message for %s after draining: %s (%v), want stale", m.StoreKey, d, err))
			mu.Unlock()
		}
	}
	for wait, ok := r.queue.visibleIn(); ok; wait, ok = r.queue.visibleIn() {
		_ = r.clock.Sleep(ctx, wait)
		deliver(stale)
	}
	r.events.addN("late_messages", r.queue.sendLate())
	deliver(stale)
	if left := r.queue.alive(); left > 0 {
		bad = append(bad, fmt.Sprintf("async: %d messages left in the queue after the late ones", left))
	}
	if len(r.net.Envelopes()) != sends {
		bad = append(bad, "async: a late message sent an envelope")
	}
	return bad
}
