package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Asynchronous transfers (Prefer: respond-async) against the real store and the local network:
// whatever the queue does with the messages (delivers them twice, late, out of order, or never)
// and wherever an invocation dies, a key pays at most once, and an accepted transfer is never
// dropped: the sweep finds a queued item without its message.

// lossyQueue is a transfer.Queue that records what was sent and can lose it.
type lossyQueue struct {
	mu   sync.Mutex
	sent []transfer.QueueMessage
	lose bool
}

func (q *lossyQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	if _, err := queue.Encode(m); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.lose {
		q.sent = append(q.sent, m)
	}
	return nil
}

// take returns and forgets every message sent so far.
func (q *lossyQueue) take() []transfer.QueueMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.sent
	q.sent = nil
	return out
}

const asyncGrace = time.Minute

// asyncRig is quietRig with a queue, and a sweep that sends queued items older than asyncGrace.
func asyncRig(t *testing.T) (*rig, *lossyQueue, *reconcile.Service) {
	t.Helper()
	r := quietRig(t)
	q := &lossyQueue{}
	r.orch.Queue = q
	sweep := reconcile.New(reconcile.Config{
		Store: r.store, Settler: r.orch, Ledger: r.ledger, Gauge: nopGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL },
		Logger: slog.New(slog.DiscardHandler), Queue: q, Queued: r.store, QueuedGrace: asyncGrace,
	})
	return r, q, sweep
}

func (r *rig) enqueue(t *testing.T, k int) transfer.Enqueued {
	t.Helper()
	res, err := r.orch.Enqueue(context.Background(), r.input(k))
	if err != nil {
		t.Fatalf("enqueue key %d: %v", k, err)
	}
	return res
}

func (r *rig) deliver(t *testing.T, m transfer.QueueMessage) transfer.Delivery {
	t.Helper()
	d, err := r.orch.RunQueued(context.Background(), m)
	t.Logf("delivery of %s: %s (%v)", m.ClaimID[:8], d, err)
	return d
}

// dieAfterDroppedSend delivers m to a submitter whose envelope the network drops and whose
// invocation dies right after the send: the item is left in_flight under its lease, with an
// envelope that never lands, and m is not acknowledged.
func (r *rig) dieAfterDroppedSend(t *testing.T, m transfer.QueueMessage) {
	t.Helper()
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash
		}
		return nil
	}
	defer func() { r.orch.Hooks = nil }()
	if _, err := r.orch.RunQueued(context.Background(), m); !errors.Is(err, errCrash) {
		t.Fatalf("delivery: %v, want the crash", err)
	}
}

// one returns the only message of msgs.
func one(t *testing.T, msgs []transfer.QueueMessage) transfer.QueueMessage {
	t.Helper()
	if len(msgs) != 1 {
		t.Fatalf("%d messages sent, want 1: %+v", len(msgs), msgs)
	}
	return msgs[0]
}

func TestAsyncAcceptedThenSettled(t *testing.T) {
	r, q, _ := asyncRig(t)
	res := r.enqueue(t, 0)
	if !res.Accepted || res.View.Status != "pending" {
		t.Fatalf("enqueue = %+v, want accepted, pending", res)
	}
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusQueued || !rec.Async || rec.Envelope != nil || rec.LeaseOwner != "" || rec.Version != 1 {
		t.Fatalf("item = %s, want queued v1 with no lease and no envelope", describe(rec))
	}
	m := one(t, q.take())
	if m.StoreKey != r.storeKey(0) || m.ClaimID != rec.ClaimID {
		t.Fatalf("message %+v, want the item's key and claim %s", m, rec.ClaimID)
	}
	if v, err := r.orch.View(context.Background(), transfer.Wallet{Address: r.wallet}, r.input(0).ClientKey); err != nil || v.Status != "pending" {
		t.Fatalf("GET before the run: %+v, %v", v, err)
	}
	// A repeat of the accepted key is accepted again and sends nothing.
	if again := r.enqueue(t, 0); !again.Accepted || len(q.take()) != 0 {
		t.Fatalf("repeat = %+v: want accepted again, no second message", again)
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s, want done", d)
	}
	r.assertPaidOnce(t, 0)
	v, err := r.orch.View(context.Background(), transfer.Wallet{Address: r.wallet}, r.input(0).ClientKey)
	if err != nil || v.Status != "success" || v.TransactionHash != r.item(t, 0).Result.TransactionHash {
		t.Fatalf("GET after the run: %+v, %v", v, err)
	}
	// A repeat of the settled key replays it (200), like a synchronous call.
	if again := r.enqueue(t, 0); again.Accepted || !again.Outcome.Replayed || again.Outcome.TransactionHash != v.TransactionHash {
		t.Fatalf("repeat after settling = %+v, want the replay", again)
	}
	// Another request under the key is a conflict, stored nothing.
	other := r.input(1)
	other.ClientKey = r.input(0).ClientKey
	if _, err := r.orch.Enqueue(context.Background(), other); !errors.As(err, new(*transfer.ConflictError)) {
		t.Fatalf("another body under the key: %v, want IDEMPOTENCY_KEY_CONFLICT", err)
	}
	if len(q.take()) != 0 {
		t.Fatal("a replay or a conflict sent a message")
	}
}

// The same message delivered again while it runs (its copy reads the item in_flight under a live
// lease and is delivered again once the lease ends, never acknowledged: leaseRetry), concurrently,
// and after it settled: one transaction.
func TestAsyncDuplicateMessages(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	var during []error
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepClaimed || step == transfer.StepSent {
			d, err := r.orch.RunQueued(ctx, m)
			during = append(during, leaseRetry(d, err))
		}
		return nil
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s, want done", d)
	}
	r.orch.Hooks = nil
	for i, err := range during {
		if err != nil {
			t.Fatalf("copy %d delivered while the first ran: %v", i, err)
		}
	}
	if len(during) < 2 {
		t.Fatalf("%d copies delivered during the run, want at least 2", len(during))
	}
	if d := r.deliver(t, m); d != transfer.DeliveryStale {
		t.Fatalf("copy after settling: %s, want stale", d)
	}
	r.assertPaidOnce(t, 0)
	sends := len(r.net.Envelopes())

	// Concurrent copies of another key's message: one takes the item, the others find it taken
	// (retry, until the lease ends) or settled (stale).
	r.enqueue(t, 1)
	m = one(t, q.take())
	var wg sync.WaitGroup
	got := make([]transfer.Delivery, 4)
	for i := range got {
		wg.Go(func() { got[i], _ = r.orch.RunQueued(context.Background(), m) })
	}
	wg.Wait()
	done := 0
	for _, d := range got {
		switch d {
		case transfer.DeliveryDone:
			done++
		case transfer.DeliveryStale, transfer.DeliveryRetry: // found it settled, or held (leaseRetry)
		default:
			t.Fatalf("concurrent copies: %v", got)
		}
	}
	if done != 1 {
		t.Fatalf("concurrent copies: %v, want exactly one done", got)
	}
	r.assertPaidOnce(t, 1)
	if len(r.net.Envelopes()) <= sends {
		t.Fatal("the second key sent nothing")
	}
}

// A message delivered long after its transfer settled, even after the key's replay window ended
// and the key was used again: stale, nothing sent.
func TestAsyncLateMessage(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s", d)
	}
	r.assertPaidOnce(t, 0)
	sends := len(r.net.Envelopes())
	r.clock.Advance(transfer.DefaultSettings().KeyTTL + time.Hour) // the replay window ends
	if d := r.deliver(t, m); d != transfer.DeliveryStale {
		t.Fatalf("late message on an expired item: %s, want stale", d)
	}
	// The key is free and used again (a new transfer, as documented): the old message still
	// names the old incarnation.
	r.enqueue(t, 0)
	fresh := one(t, q.take())
	if fresh.ClaimID == m.ClaimID {
		t.Fatal("the new claim reused the claim ID")
	}
	if d := r.deliver(t, m); d != transfer.DeliveryStale {
		t.Fatalf("late message of the old incarnation on the new one: %s, want stale", d)
	}
	if len(r.net.Envelopes()) != sends {
		t.Fatal("a stale message sent an envelope")
	}
	if rec := r.item(t, 0); rec.Status != transfer.StatusQueued || rec.ClaimID != fresh.ClaimID || rec.Version != 1 {
		t.Fatalf("the new item was touched by the stale message: %s", describe(rec))
	}
}

// Messages out of order: the sweep sends a lost-looking message again, the copy runs first, the
// original arrives afterwards; and a message naming another incarnation arrives before the item
// it names exists.
func TestAsyncOutOfOrder(t *testing.T) {
	r, q, sweep := asyncRig(t)
	r.enqueue(t, 0)
	original := one(t, q.take())
	r.clock.Advance(asyncGrace + time.Second)
	ans, err := sweep.Sweep(context.Background())
	if err != nil || ans.Queued.Sent != 1 {
		t.Fatalf("sweep = %+v, %v: want the queued item sent again", ans, err)
	}
	copy := one(t, q.take())
	if copy != original {
		t.Fatalf("the sweep sent %+v, want the same key and claim %+v", copy, original)
	}
	if d := r.deliver(t, copy); d != transfer.DeliveryDone {
		t.Fatalf("copy: %s", d)
	}
	if d := r.deliver(t, original); d != transfer.DeliveryStale {
		t.Fatalf("original after the copy: %s, want stale", d)
	}
	r.assertPaidOnce(t, 0)

	future := transfer.QueueMessage{StoreKey: r.storeKey(1), ClaimID: "00000000000000000000000000000000"}
	if d := r.deliver(t, future); d != transfer.DeliveryStale {
		t.Fatalf("a message before its item: %s, want stale", d)
	}
	r.enqueue(t, 1)
	if d := r.deliver(t, future); d != transfer.DeliveryStale {
		t.Fatalf("a message of another claim: %s, want stale", d)
	}
	if rec := r.item(t, 1); rec.Status != transfer.StatusQueued || rec.Version != 1 {
		t.Fatalf("a stale message touched the item: %s", describe(rec))
	}
}

// A message lost by the queue: nothing runs until the item is older than the grace; then the
// sweep sends it again, once per grace, and it runs.
func TestAsyncLostMessage(t *testing.T) {
	r, q, sweep := asyncRig(t)
	q.lose = true
	if res := r.enqueue(t, 0); !res.Accepted {
		t.Fatalf("enqueue = %+v", res)
	}
	q.lose = false
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.Queued.Sent != 0 {
		t.Fatalf("sweep within the grace = %+v, %v: want nothing sent", ans, err)
	}
	r.clock.Advance(asyncGrace + time.Second)
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.Queued.Sent != 1 {
		t.Fatalf("sweep after the grace = %+v, %v", ans, err)
	}
	m := one(t, q.take())
	// The sweep restarted the item's queued time: the next sweep within the grace sends nothing.
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.Queued.Sent != 0 {
		t.Fatalf("second sweep = %+v, %v: want nothing sent again within the grace", ans, err)
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s", d)
	}
	r.assertPaidOnce(t, 0)
}

// The API dies between its claim and the send of the message: the client's retry is accepted
// again (and sends nothing), and the sweep sends the message once the item is older than the grace.
func TestAsyncCrashBetweenClaimAndSend(t *testing.T) {
	r, q, sweep := asyncRig(t)
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepQueued {
			return errCrash
		}
		return nil
	}
	if _, err := r.orch.Enqueue(context.Background(), r.input(0)); !errors.Is(err, errCrash) {
		t.Fatalf("enqueue = %v, want the crash", err)
	}
	r.orch.Hooks = nil
	if len(q.take()) != 0 {
		t.Fatal("a message was sent before the crash")
	}
	if res := r.enqueue(t, 0); !res.Accepted || len(q.take()) != 0 {
		t.Fatalf("retry = %+v: want accepted, nothing sent", res)
	}
	r.clock.Advance(asyncGrace + time.Second)
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.Queued.Sent != 1 {
		t.Fatalf("sweep = %+v, %v", ans, err)
	}
	if d := r.deliver(t, one(t, q.take())); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s", d)
	}
	r.assertPaidOnce(t, 0)
}

// The network refuses the first send (nothing moved): the item is queued again, not released, and
// the message is to be delivered again; its redelivery pays once.
func TestAsyncRequeuedWhenNothingMoved(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater, Count: 1})
	if d := r.deliver(t, m); d != transfer.DeliveryRetry {
		t.Fatalf("delivery after a refusal = %s, want retry", d)
	}
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusQueued || rec.ClaimID != m.ClaimID || rec.Envelope != nil || rec.Version != 4 {
		t.Fatalf("item after the refusal = %s, want queued again v4 (queued, taken, attached, requeued), same claim", describe(rec))
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("redelivery = %s", d)
	}
	r.assertPaidOnce(t, 0)
}

// The submitter dies after sending its envelope: the redelivered message takes the expired claim
// over and judges the same envelope (never rebuilt); if instead the envelope is proven dead, the
// sweep requeues the item (never releases it) and sends its message, and it pays once.
func TestAsyncSubmitterDies(t *testing.T) {
	t.Run("redelivery takes over", func(t *testing.T) {
		r, q, _ := asyncRig(t)
		r.enqueue(t, 0)
		m := one(t, q.take())
		r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
			if step == transfer.StepSent {
				return errCrash
			}
			return nil
		}
		if d, err := r.orch.RunQueued(context.Background(), m); !errors.Is(err, errCrash) {
			t.Fatalf("delivery = %s, %v: want the crash", d, err)
		}
		r.orch.Hooks = nil
		r.clock.Advance(ledgerInterval) // the sent envelope lands
		r.shown(t)
		// Delivered again before the lease ends: the dead holder still looks alive, so the
		// message waits for the lease.
		d, err := r.orch.RunQueued(context.Background(), m)
		if err := leaseRetry(d, err); err != nil {
			t.Fatalf("redelivery within the lease: %v", err)
		}
		r.clock.Advance(2 * time.Minute)
		if d := r.deliver(t, m); d != transfer.DeliveryDone {
			t.Fatalf("redelivery after the lease = %s, want done", d)
		}
		r.assertPaidOnce(t, 0)
		if n := r.events.snapshot()["rebuilds"]; n != 0 {
			t.Fatalf("%d rebuilds: the taken-over envelope must be re-sent, never rebuilt", n)
		}
	})
	t.Run("sweep requeues a dead envelope", func(t *testing.T) {
		r, q, sweep := asyncRig(t)
		r.enqueue(t, 0)
		m := one(t, q.take())
		r.dieAfterDroppedSend(t, m)
		r.clock.Advance(2 * time.Minute) // the lease expires; a ledger closes after the envelope's maxTime
		r.shown(t)
		ans, err := sweep.Sweep(context.Background())
		if err != nil || ans.ExpiredClaims.Requeued != 1 {
			t.Fatalf("sweep = %+v, %v: want the dead claim requeued", ans, err)
		}
		rec := r.item(t, 0)
		if rec.Status != transfer.StatusQueued || rec.ClaimID != m.ClaimID || rec.Envelope != nil {
			t.Fatalf("item after the sweep = %s, want queued again under the same claim", describe(rec))
		}
		again := one(t, q.take())
		if d := r.deliver(t, again); d != transfer.DeliveryDone {
			t.Fatalf("delivery after the requeue = %s", d)
		}
		if d := r.deliver(t, m); d != transfer.DeliveryStale {
			t.Fatalf("the first message again = %s, want stale", d)
		}
		r.assertPaidOnce(t, 0)
	})
}

// A synchronous call of the same request meets the queued item: it waits (TRANSFER_IN_PROGRESS
// when its budget ends) and never runs, takes or deletes it.
func TestAsyncSyncCallWaitsForQueued(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	before := r.item(t, 0)
	_, err := r.call(0)
	if !errors.As(err, new(*transfer.InProgressError)) {
		t.Fatalf("synchronous call = %v, want TRANSFER_IN_PROGRESS", err)
	}
	r.assertUntouched(t, 0, before, "the synchronous call")
	if len(r.net.Envelopes()) != 0 {
		t.Fatal("the synchronous call sent an envelope")
	}
	if d := r.deliver(t, one(t, q.take())); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s", d)
	}
	out, err := r.call(0)
	if err != nil || !out.Replayed {
		t.Fatalf("synchronous call after the run = %+v, %v, want the replay", out, err)
	}
	r.assertPaidOnce(t, 0, told{who: "sync", out: out})
}

// An async request meeting a synchronous request's item is not accepted: only an async item is
// requeued when nothing moves, so only its 202 is kept.
func TestAsyncMeetsSynchronousItem(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepAttached {
			_, err := r.orch.Enqueue(context.Background(), r.input(0))
			if !errors.As(err, new(*transfer.InProgressError)) {
				t.Errorf("async request during a synchronous one: %v, want TRANSFER_IN_PROGRESS", err)
			}
		}
		return nil
	}
	out, err := r.call(0)
	r.orch.Hooks = nil
	if err != nil {
		t.Fatal(err)
	}
	if len(q.take()) != 0 {
		t.Fatal("a message was sent for a synchronous item")
	}
	if res := r.enqueue(t, 0); res.Accepted || res.Outcome.TransactionHash != out.TransactionHash {
		t.Fatalf("async request after the synchronous one settled = %+v, want its replay", res)
	}
	r.assertPaidOnce(t, 0, told{who: "sync", out: out})
}

// The submitter's envelope lands but every answer is lost and the lookups' history no longer covers
// the submission: the run ends in doubt (never requeued: nothing proves the envelope dead), the
// message's redelivery and the sweep build nothing new, and once the history is whole again the
// sweep settles it from the ledger: one transaction.
func TestAsyncInDoubtIsNeverRequeued(t *testing.T) {
	r, q, sweep := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
	once := false
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent && !once {
			once = true
			for range 3 {
				r.net.CloseLedger() // it lands, then falls out of the one-ledger history
			}
		}
		return nil
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s, want done (in doubt is an outcome)", d)
	}
	r.orch.Hooks = nil
	if len(r.net.Applied()) != 1 {
		t.Fatal("the envelope should have landed")
	}
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusInDoubt || rec.ClaimID != m.ClaimID || rec.Envelope == nil {
		t.Fatalf("item = %s, want in_doubt with its envelope", describe(rec))
	}
	if d := r.deliver(t, m); d != transfer.DeliveryStale {
		t.Fatalf("redelivery of an in-doubt item = %s, want stale", d)
	}
	r.clock.Advance(asyncGrace + time.Minute)
	r.shown(t)
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.InDoubt.Requeued != 0 || ans.Queued.Sent != 0 {
		t.Fatalf("sweep with a short history = %+v, %v: want nothing requeued or sent", ans, err)
	}
	if len(q.take()) != 0 || r.item(t, 0).Status != transfer.StatusInDoubt {
		t.Fatalf("the in-doubt item moved: %s", describe(r.item(t, 0)))
	}
	r.net.ClearFaults() // the whole history again
	if ans, err := sweep.Sweep(context.Background()); err != nil || ans.InDoubt.Landed != 1 {
		t.Fatalf("sweep with the whole history = %+v, %v: want it settled as landed", ans, err)
	}
	r.assertPaidOnce(t, 0)
	if n := r.events.snapshot()["rebuilds"]; n != 0 {
		t.Fatalf("%d rebuilds", n)
	}
}

// A synchronous retry takes over a dead submitter's claim and proves its envelope dead: the async
// item is queued again (never released, never run by the synchronous call), and the message runs
// it: one transaction.
func TestAsyncSyncTakeOverRequeues(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.dieAfterDroppedSend(t, m)
	r.clock.Advance(2 * time.Minute)
	r.shown(t)
	_, err := r.call(0)
	if !errors.As(err, new(*transfer.InProgressError)) {
		t.Fatalf("synchronous retry = %v, want TRANSFER_IN_PROGRESS (it waits on the requeued item)", err)
	}
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusQueued || rec.ClaimID != m.ClaimID || rec.Envelope != nil || len(r.net.Applied()) != 0 {
		t.Fatalf("after the take-over: %s, %d applied; want queued again under the same claim, nothing applied", describe(rec), len(r.net.Applied()))
	}
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s", d)
	}
	r.assertPaidOnce(t, 0)
}

// leaseRetry says what is wrong with (d, err), RunQueued's answer to a message whose item another
// invocation holds under a live lease: it must be DeliveryRetry with an *InProgressError whose
// RetryAfter is the lease's remaining time (positive, and within the two minutes after which these
// tests find every lease expired), so the message comes back
// once the holder is done rather than being acknowledged (transfer.RunQueued).
func leaseRetry(d transfer.Delivery, err error) error {
	var busy *transfer.InProgressError
	switch {
	case d != transfer.DeliveryRetry:
		return fmt.Errorf("delivery %s (%v), want retry", d, err)
	case !errors.As(err, &busy):
		return fmt.Errorf("delivery retry with %v, want TRANSFER_IN_PROGRESS", err)
	case busy.RetryAfter <= 0 || busy.RetryAfter > 2*time.Minute:
		return fmt.Errorf("retry after %s, want within the lease", busy.RetryAfter)
	}
	return nil
}
