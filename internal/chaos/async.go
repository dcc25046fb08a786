package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The campaign's async mode (Config.Async; README.md, "Asynchronous transfers"): callers post
// with Prefer: respond-async (Orchestrator.Enqueue), the queue loses, duplicates, reorders and
// delays their messages, a submitter actor delivers them beside each wave (crashing as any caller
// does), and the sweep sends queued items again. After healing, the queue is drained and the late
// messages arrive: each must do nothing.

// asyncGraceInCampaign is the sweep's grace for queued items in the campaign: a couple of sweeps.
const asyncGraceInCampaign = 2 * time.Minute

// campaignQueue is the campaign's SQS: what is sent is lost, duplicated or held back until after
// healing (late) by its own dice, and delivered in random order. Each message counts its receives
// (ApproximateReceiveCount) and goes to the dead-letter queue (dropped: the sweep sends its item
// again) when a receive would count more than maxReceivesInCampaign, as SQS moves it: after the
// last failed receive's visibility timeout has passed.
type campaignQueue struct {
	mu      sync.Mutex
	dice    *rand.Rand
	faulty  bool
	pending []sqsMessage
	late    []transfer.QueueMessage
	faults  *counter
	// hidden are messages delivered but not deleted, invisible until their time (the visibility
	// timeout, or what the submitter changed it to); clock tells the time.
	hidden []hiddenMessage
	clock  interface{ Now() time.Time }
}

// sqsMessage is one message in the campaign's queue and how often it was received.
type sqsMessage struct {
	m        transfer.QueueMessage
	receives int
}

type hiddenMessage struct {
	sqsMessage
	at time.Time
}

// visibilityInCampaign is the campaign queue's visibility timeout: how long a message whose
// invocation died (no answer, no ChangeMessageVisibility) stays hidden.
const visibilityInCampaign = 30 * time.Second

// maxReceivesInCampaign is the template's TransferQueue maxReceiveCount.
const maxReceivesInCampaign = 10

func (q *campaignQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch x := q.dice.Float64(); {
	case q.faulty && x < 0.1:
		q.faults.add("queue_lost")
	case q.faulty && x < 0.25:
		q.faults.add("queue_duplicated")
		q.pending = append(q.pending, sqsMessage{m: m}, sqsMessage{m: m})
	case q.faulty && x < 0.35:
		q.faults.add("queue_late")
		q.late = append(q.late, m)
	default:
		q.pending = append(q.pending, sqsMessage{m: m})
	}
	return nil
}

// next receives a pending message at random (SQS standard queues do not keep order), counting
// the receive.
func (q *campaignQueue) next() (sqsMessage, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	kept := q.hidden[:0]
	for _, h := range q.hidden {
		switch {
		case now.Before(h.at):
			kept = append(kept, h)
		case h.receives >= maxReceivesInCampaign:
			q.faults.add("queue_dead_lettered") // its next receive would exceed maxReceiveCount
		default:
			q.pending = append(q.pending, h.sqsMessage)
		}
	}
	q.hidden = kept
	if len(q.pending) == 0 {
		return sqsMessage{}, false
	}
	i := q.dice.IntN(len(q.pending))
	m := q.pending[i]
	q.pending = append(q.pending[:i], q.pending[i+1:]...)
	m.receives++
	return m, true
}

// again puts m back, visible after wait (the visibility timeout, or what the submitter changed it
// to), as SQS does without a delete; once visible after maxReceivesInCampaign receives it is
// dead-lettered (next).
func (q *campaignQueue) again(m sqsMessage, wait time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.hidden = append(q.hidden, hiddenMessage{sqsMessage: m, at: q.clock.Now().Add(wait)})
}

func (q *campaignQueue) heal() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.faulty = false
}

func (q *campaignQueue) takeLate() []transfer.QueueMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.late
	q.late = nil
	return out
}

// deliverer returns a new invocation of SubmitterFunction for one message: its own dice, faulty
// or not.
func (r *rig) deliverer(n *int, faulty bool) *caller {
	*n++
	return &caller{name: fmt.Sprintf("submitter %d", *n), rng: rand.New(rand.NewPCG(r.cfg.Seed, 1<<42+uint64(*n))), faulty: faulty}
}

// deliverOnce runs one message as SubmitterFunction does and puts it back when it is to be
// delivered again: a requeued transfer or a store failure after queue.Backoff, as the submitter's
// ChangeMessageVisibility sets it; a crash (the invocation died: no answer, no change) after the
// queue's visibility timeout.
func (r *rig) deliverOnce(ctx context.Context, m sqsMessage) {
	d, err := r.orch.RunQueued(ctx, m.m)
	r.events.add("delivery_" + string(d))
	switch {
	case errors.Is(err, errCrash):
		r.events.add("delivery_crashed")
		r.queue.again(m, visibilityInCampaign)
	case d == transfer.DeliveryRetry:
		r.events.add("delivery_retry_" + retryCause(err))
		r.queue.again(m, queue.Backoff(transfer.RetryAfter(err), m.receives))
	}
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

// submitter delivers messages while active says the wave's callers are at work, a message at a
// time, each as a new invocation that may crash; with none pending it waits a fifth of a second.
func (r *rig) submitter(wave int, active func() bool) {
	n := wave << 20
	idle := withCaller(context.Background(), r.deliverer(&n, false))
	for active() {
		m, ok := r.queue.next()
		if !ok {
			_ = r.clock.Sleep(idle, 200*time.Millisecond)
			continue
		}
		r.deliverOnce(withCaller(context.Background(), r.deliverer(&n, true)), m)
	}
}

// drainAsync runs after healing: every pending message is delivered, and the sweep sends the
// queued items again, until no item is queued, in flight or in doubt (or 200 rounds). Then the
// late messages arrive; each must be stale and send nothing. It returns the violations.
func (r *rig) drainAsync(ctx context.Context) []string {
	var bad []string
	n := 1 << 30
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
		for m, ok := r.queue.next(); ok; m, ok = r.queue.next() {
			r.deliverOnce(withCaller(ctx, r.deliverer(&n, false)), m)
		}
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
	sends := len(r.net.Envelopes())
	for _, m := range r.queue.takeLate() {
		if d, err := r.orch.RunQueued(withCaller(ctx, r.deliverer(&n, false)), m); d != transfer.DeliveryStale {
			bad = append(bad, fmt.Sprintf("async: a late message for %s after healing: %s (%v), want stale", m.StoreKey, d, err))
		}
		r.events.add("late_messages")
	}
	if len(r.net.Envelopes()) != sends {
		bad = append(bad, "async: a late message sent an envelope")
	}
	return bad
}
