package chaos

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Async transfers that end, or start again, outside a delivery: the ledger's refusal, an
// operator's discard, a synchronous retry or take-over, an unknown claim and the sweep. An
// accepted transfer ends in a true answer, and a requeued one always has a message to run it.

// TestAsyncRequestTheLedgerRefusesEndsInItsError: an async transfer that the ledger's Prepare
// refuses as the client's mistake (a 422 no retry can change) ends in that error, as a synchronous
// call does, or is refused when it is enqueued: no envelope is sent, the sweep does not send its
// message again, its GET says error OPERATION_NOT_SUPPORTED rather than pending, and a repeat of
// the request is answered the stored 422. The body passes the API's checks (Rules.Canonicalize
// accepts deposits and any configured-looking asset) but Prepare refuses it: a deposit on a
// deployment without a vault contract (OPERATION_NOT_SUPPORTED), or an asset that left ASSETS after
// the 202. Were every run to requeue it (nothing was sent), the GET would say pending for ever, the
// message would go to the DLQ, the sweep would send it again every grace, and no operator could end
// it; one refused for an asset removed from the config would even pay once the asset is configured
// again.
func TestAsyncRequestTheLedgerRefusesEndsInItsError(t *testing.T) {
	r, q, sweep := asyncRig(t)
	ctx := context.Background()
	in := r.input(0)
	in.Request.OperationType = transfer.Deposit // payment mode: Prepare refuses it (422)

	// The synchronous call of the same body: a 422, and the key stays free.
	sync := in
	sync.ClientKey = "sync-deposit"
	if _, err := r.orch.Transfer(ctx, sync); !errors.As(err, new(*transfer.ValidationError)) {
		t.Fatalf("synchronous deposit = %v, want its 422", err)
	}
	if _, err := r.store.Get(ctx, transfer.StoreKey(r.wallet, sync.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the synchronous 422 left an item: %v", err)
	}

	res, err := r.orch.Enqueue(ctx, in)
	if err != nil {
		t.Logf("enqueue refused the request up front (fine): %v", err)
		return
	}
	t.Logf("enqueue = %+v", res)
	m := one(t, q.take())
	// SQS delivers it maxReceiveCount (5) times, then the sweep sends it again after its grace.
	var deliveries []transfer.Delivery
	for range 5 {
		d, err := r.orch.RunQueued(ctx, m)
		t.Logf("delivery: %s (%v)", d, err)
		deliveries = append(deliveries, d)
		if d != transfer.DeliveryRetry {
			break
		}
		r.clock.Advance(6 * time.Minute) // the visibility timeout
	}
	r.clock.Advance(asyncGrace + time.Second)
	if ans, err := sweep.Sweep(ctx); err == nil && ans.Queued.Sent > 0 {
		t.Errorf("the sweep sent the unrunnable transfer's message again (%d): it will do so every grace, for ever", ans.Queued.Sent)
	}
	if len(r.net.Envelopes()) != 0 {
		t.Fatalf("%d envelopes sent for a refused request", len(r.net.Envelopes()))
	}
	v, err := r.orch.View(ctx, transfer.Wallet{Address: r.wallet}, in.ClientKey)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if v.Status == "pending" {
		t.Errorf("after %d deliveries (%v) and a sweep the item is %s and its GET still says pending: the 422 the ledger gave every run is never told, the key is stuck", len(deliveries), deliveries, describe(r.item(t, 0)))
	}
	if v.Status == "error" && (v.Problem == nil || v.Problem.Code != transfer.CodeOperationNotSupp) {
		t.Errorf("GET = %+v, want the error OPERATION_NOT_SUPPORTED", v)
	}
	// A repeat of the request is answered the same 422, as a synchronous call would be.
	var rej *transfer.RejectedError
	if _, err := r.orch.Enqueue(ctx, in); !errors.As(err, &rej) || rej.Code != transfer.CodeOperationNotSupp {
		t.Errorf("repeat = %v, want the stored OPERATION_NOT_SUPPORTED", err)
	}
}

// TestAsyncOperatorDiscardOfAProvenDeadItemRequeuesAndSends: an operator's discard that requeues an
// async item (its envelope proven dead by the ledger) answers without an error and sends the item's
// message at once; the dead envelope never lands. An async transfer ends in doubt; later the ledger
// proves its envelope dead and an operator asks to discard it (resolve, discard, not forced), as
// for any in-doubt item. Settle requeues the async item; answering NOT_PROVEN_DEAD ("a forced
// discard lets the next retry pay again") would be false and invite a forced discard, and a requeue
// without a message would wait for the sweep's grace.
func TestAsyncOperatorDiscardOfAProvenDeadItemRequeuesAndSends(t *testing.T) {
	r, q, ops := asyncRig(t)
	ctx := context.Background()
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall})
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s, want done (in doubt)", d)
	}
	r.net.ClearFaults()
	r.clock.Advance(ledgerInterval)
	r.shown(t)
	rec := r.item(t, 0)
	if rec.Status != transfer.StatusInDoubt || rec.Envelope == nil {
		t.Fatalf("item = %s, want in_doubt", describe(rec))
	}
	ans, err := ops.Do(ctx, reconcile.Request{Action: reconcile.ActionResolve, StoreKey: rec.StoreKey, Discard: true,
		Operator: "adversary", Reason: "the ledger proves it dead"})
	after := r.item(t, 0)
	t.Logf("discard = %+v, %v; item %s", ans, err, describe(after))
	if after.Status == transfer.StatusQueued && err != nil {
		t.Errorf("the discard requeued the item (the ledger proved its envelope dead) but answered %v", err)
	}
	if after.Status == transfer.StatusQueued && len(q.take()) == 0 {
		t.Errorf("the requeued item's message was not sent: it waits for the sweep's grace (%v)", asyncGrace)
	}
	if len(r.net.Applied()) != 0 {
		t.Fatal("the dead envelope landed")
	}
}

// claimAnswerLost is a store whose first winning claim applies but answers an error (its answer
// lost, the SDK's retries exhausted), and whose next read fails too (the outage goes on).
type claimAnswerLost struct {
	transfer.Store
	mu   sync.Mutex
	down bool
	done bool
}

func (s *claimAnswerLost) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	held, won, err := s.Store.Claim(ctx, rec, now)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil && won && !s.done {
		s.down, s.done = true, true
		return transfer.Record{}, false, errors.New("dynamodb: PutItem: connection reset after the request was written")
	}
	return held, won, err
}

func (s *claimAnswerLost) Get(ctx context.Context, key string) (transfer.Record, error) {
	s.mu.Lock()
	down := s.down
	s.down = false
	s.mu.Unlock()
	if down {
		return transfer.Record{}, errors.New("dynamodb: GetItem: service unavailable")
	}
	return s.Store.Get(ctx, key)
}

// TestAsyncLostClaimAnswerIsNotToldNothingWasSubmitted: a respond-async POST whose queued claim
// may have applied is never answered "nothing was submitted" when its transfer may then run. The
// claim applies but its answer is lost, and the read back fails too: Enqueue answers 503
// STORE_UNAVAILABLE. The client does not retry (the payout was cancelled meanwhile). The queued
// item it left is found by the sweep after its grace and runs; so either the 503 does not say
// nothing was submitted (and the message is sent at once), or nothing lands. A client that
// trusted a false "nothing was submitted" and paid by other means would pay twice.
func TestAsyncLostClaimAnswerIsNotToldNothingWasSubmitted(t *testing.T) {
	r, q, sweep := asyncRig(t)
	ctx := context.Background()
	r.orch.Store = &claimAnswerLost{Store: r.store}
	_, err := r.orch.Enqueue(ctx, r.input(0))
	r.orch.Store = r.store
	var u *transfer.UnavailableError
	if !errors.As(err, &u) {
		t.Fatalf("enqueue = %v, want 503", err)
	}
	t.Logf("the client was told: %v", err)
	if !strings.Contains(u.Detail, "nothing was submitted") && len(q.take()) != 1 {
		t.Error("an unknown claim sends its message at once")
	}
	// No retry. The sweep runs as scheduled, and what it sends is delivered.
	r.clock.Advance(asyncGrace + time.Second)
	if _, err := sweep.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	for _, m := range q.take() {
		r.deliver(t, m)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n > 0 && strings.Contains(u.Detail, "nothing was submitted") {
		t.Errorf("%d transaction(s) applied for a key whose only answer was %q: the answer was false", n, u.Detail)
	}
}

// TestAsyncInlineRequeueSendsItsMessage: a synchronous retry that requeues an async item (its
// envelope proven dead) sends the item's message, so the accepted transfer runs without waiting
// for the sweep's grace. An async transfer ends in doubt and its message is acknowledged; once
// the ledger proves its envelope dead, a synchronous retry of the same request settles it inline
// and queues the item again; nothing is paid twice.
func TestAsyncInlineRequeueSendsItsMessage(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall})
	if d := r.deliver(t, m); d != transfer.DeliveryDone {
		t.Fatalf("delivery = %s, want done (in doubt)", d)
	}
	r.net.ClearFaults()
	r.clock.Advance(ledgerInterval)
	r.shown(t)
	_, err := r.call(0)
	t.Logf("synchronous retry: %v; item %s", err, describe(r.item(t, 0)))
	if rec := r.item(t, 0); rec.Status == transfer.StatusQueued && len(q.take()) == 0 {
		t.Errorf("the synchronous retry requeued the item and sent no message: nothing runs it until the sweep's grace")
	}
	if len(r.net.Applied()) > 1 {
		t.Fatal("paid twice")
	}
}

// TestAsyncTakeOverRequeueSendsItsMessage: a synchronous take-over that requeues an async item
// leaves a message to run it. A submitter dies after sending its envelope; a synchronous retry of
// the same request takes the expired claim over, and while it holds the lease the redelivered
// message finds the item held under a live lease (it comes back once the lease ends:
// leaseRetry). The retry proves the envelope dead and requeues the item, and a message is left
// on the queue, so the accepted transfer runs before the sweep's grace; the dead envelope never
// lands.
func TestAsyncTakeOverRequeueSendsItsMessage(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	r.dieAfterDroppedSend(t, m)
	r.clock.Advance(2 * time.Minute)
	r.shown(t)
	redelivered := false
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
		if step == transfer.StepClaimed && !redelivered {
			redelivered = true
			if err := leaseRetry(r.orch.RunQueued(ctx, m)); err != nil {
				t.Errorf("redelivery during the take-over: %v", err)
			}
		}
		return nil
	}
	_, err := r.call(0)
	r.orch.Hooks = nil
	rec := r.item(t, 0)
	t.Logf("synchronous retry: %v; item %s", err, describe(rec))
	if !redelivered {
		t.Fatal("the synchronous retry took nothing over")
	}
	if rec.Status == transfer.StatusQueued && len(q.take()) == 0 {
		t.Errorf("the take-over requeued the item and no message is left to run it before the sweep's grace")
	}
	if len(r.net.Applied()) != 0 {
		t.Fatal("the dead envelope landed")
	}
}

// TestAsyncQueuedItemIsSentDespiteAnInDoubtBacklog: the sweep sends a queued item's message even
// when judging the in-doubt backlog uses up every invocation: it runs the queued phase first
// (internal/reconcile, Sweep). An RPC outage during a payout burst leaves a backlog of in-doubt
// items the ledger cannot judge yet (a load-balanced RPC, or history that no longer reaches their
// submission: README.md, "Which RPC and Horizon deployments the proof supports"), enough that
// judging them takes a whole sweep invocation (Timeout 55 s: a few hundred items). Meanwhile an
// accepted async transfer's message was dead-lettered (or its send failed): only the sweep's
// queued phase can send it again. Were that phase skipped whenever an earlier one ended Partial,
// every sweep would be Partial and the 202 transfer would never run. A queued item costs the
// sweep a read, a write and a send, at most once per grace, so running its phase first cannot
// starve the others.
func TestAsyncQueuedItemIsSentDespiteAnInDoubtBacklog(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.inDoubt(t, 1) // one in-doubt item stands for the backlog
	q.take()
	q.lose = true // key 0's message is lost (dead-lettered, or its send failed)
	r.enqueue(t, 0)
	q.lose = false
	r.clock.Advance(asyncGrace + time.Second)

	// The invocation's deadline as the sweep sees it: moved to 2 s away (inside the sweep's 3 s
	// margin) once the backlog has been judged, as its lookups would have used up the time.
	ctx := &movableDeadline{Context: context.Background()}
	judged := 0
	backlog := settlerFunc(func(_ context.Context, rec transfer.Record) (transfer.Settlement, error) {
		judged++
		ctx.set(time.Now().Add(2 * time.Second))
		return transfer.Settlement{Resolution: transfer.Unresolved}, nil
	})
	sweep := reconcile.New(reconcile.Config{
		Store: r.store, Settler: backlog, Ledger: r.ledger, Gauge: nopGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL },
		Logger: slog.New(slog.DiscardHandler), Queue: q, Queued: r.store, QueuedGrace: asyncGrace,
	})
	sent := 0
	for range 5 {
		ctx.set(time.Now().Add(55 * time.Second))
		ans, err := sweep.Sweep(ctx)
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		t.Logf("sweep: queued %+v, inDoubt %+v, partial %v", ans.Queued, ans.InDoubt, ans.Partial)
		sent += len(q.take())
		r.clock.Advance(time.Minute)
	}
	if judged == 0 {
		t.Fatal("the sweep judged no in-doubt item: the test models nothing")
	}
	if sent == 0 {
		t.Errorf("5 sweeps, each used up by the in-doubt backlog, never sent the accepted transfer's message: item %s", describe(r.item(t, 0)))
	}
}

// movableDeadline is a context whose deadline the test moves (never cancelled: only the deadline
// the sweep reads changes).
type movableDeadline struct {
	context.Context
	mu sync.Mutex
	dl time.Time
}

func (c *movableDeadline) set(dl time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dl = dl
}

func (c *movableDeadline) Deadline() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dl, true
}
