package chaos

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Async transfers under SQS's at-least-once delivery, through SubmitterFunction's real handler
// (queue.Submitter) and the campaign's SQS model (sqs.go): copies of one message, received
// again, in one batch or taking turns on a lease, pay once and never strand the transfer.

// sqsModel is the campaign's SQS model (sqs.go) without faults, on the test's clock, holding m.
func sqsModel(t *testing.T, r *rig, m ...transfer.QueueMessage) (*sqsQueue, []string) {
	t.Helper()
	model := newSQSQueue(r.clock, rand.New(rand.NewPCG(1, 2)), nil, nil)
	for _, m := range m {
		if err := model.Send(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	return model, model.ids()
}

// TestAsyncSQSDuplicateReceiveKeepsTheHoldersMessage: a duplicate receive of a message whose item
// another invocation holds is delivered again once the lease ends, never acknowledged, so it
// cannot delete the holder's message: a requeued transfer keeps a message naming it, and the log
// never says a deleted message waits the visibility timeout. SQS standard queues deliver at least
// once: on rare occasions the same message is received again while a first receive still holds it
// (a copy on a server that was unavailable; the SQS Developer Guide, "at-least-once delivery").
// Invocation 1 receives message M (receipt R1) and takes the queued item under its lease.
// Invocation 2 receives M again (R2, the most recent receipt) and finds the item held under a live
// lease; were it acknowledged, the event source mapping would delete M with R2 although invocation
// 1 holds it. Invocation 1's first send is then refused (TRY_AGAIN_LATER: nothing moved), the item
// is queued again and the handler backs M off with ChangeMessageVisibility(R1). RunQueued answers
// the live lease DeliveryRetry with the lease's remaining time (each such duplicate costs one more
// receive). The campaign's SQS model (sqs.go) receives the same message again to find this.
func TestAsyncSQSDuplicateReceiveKeepsTheHoldersMessage(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	model, ids := sqsModel(t, r, one(t, q.take()))
	id := ids[0]
	var logged strings.Builder
	var logMu sync.Mutex
	log := slog.New(slog.NewTextHandler(&lockedWriter{w: &logged, mu: &logMu}, nil))
	handler := queue.Submitter(r.orch, queue.Visibility{Changer: model, URL: "https://sqs.example/transfers"}, log)

	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater, Count: 1})
	duplicated := false
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepClaimed && !duplicated {
			duplicated = true
			ev := model.receiveID(id) // the at-least-once duplicate, in another invocation
			resp, _ := handler(context.Background(), ev)
			model.answer(ev, resp, false)
			if len(resp.BatchItemFailures) != 1 {
				t.Errorf("the duplicate was answered %+v, want delivered again once the lease ends", resp)
			}
		}
		return nil
	}
	ev := model.receiveID(id)
	resp, _ := handler(context.Background(), ev)
	model.answer(ev, resp, false)
	r.orch.Hooks = nil
	if !duplicated {
		t.Fatal("the run took nothing")
	}
	rec := r.item(t, 0)
	t.Logf("item %s; visibility changes %v; first receive answered %+v", describe(rec), model.changes, resp)
	if rec.Status != transfer.StatusQueued || len(r.net.Applied()) != r.setupTxs {
		t.Fatalf("item %s, %d applied: want queued again with nothing applied", describe(rec), len(r.net.Applied())-r.setupTxs)
	}
	if model.alive() == 0 && len(q.take()) == 0 {
		t.Errorf("the accepted transfer is queued and no message names it: nothing runs it before the sweep's grace")
	}
	logMu.Lock()
	defer logMu.Unlock()
	if model.alive() == 0 && strings.Contains(logged.String(), "it waits the queue's visibility timeout") {
		t.Errorf("the log says the message waits the queue's visibility timeout, but it was deleted")
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	w  *strings.Builder
	mu *sync.Mutex
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestAsyncTwoCopiesInOneBatchPayOnceAndKeepAMessage: two copies of one transfer's message in one
// batch pay once, and while the item is queued some message still names it. The API's message
// and the sweep's copy of it (two SQS messages, one body) arrive in one batch, so
// SubmitterFunction runs both at once; the first send is refused (TRY_AGAIN_LATER: nothing moved).
// Whichever copy takes the item requeues it and backs its own message off; the other finds the
// item taken (stale) or queued again (and takes it). Neither copy's acknowledgement can leave the
// requeued transfer without a message, since the two are distinct SQS messages.
func TestAsyncTwoCopiesInOneBatchPayOnceAndKeepAMessage(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	model, ids := sqsModel(t, r, m, m)
	a, b := ids[0], ids[1]
	handler := queue.Submitter(r.orch, queue.Visibility{Changer: model, URL: "https://sqs.example/transfers"}, nil)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater, Count: 1})
	ev := model.receiveID(a)
	ev.Records = append(ev.Records, model.receiveID(b).Records...)
	resp, _ := handler(context.Background(), ev)
	model.answer(ev, resp, false)
	t.Logf("batch answered %+v; item %s; changes %v", resp, describe(r.item(t, 0)), model.changes)
	for round := 0; r.item(t, 0).Status == transfer.StatusQueued; round++ {
		ids := model.ids()
		if len(ids) == 0 {
			t.Fatalf("the item is queued and no message names it: %s", describe(r.item(t, 0)))
		}
		if round == 5 {
			t.Fatalf("still queued after %d redeliveries", round)
		}
		ev := model.receiveID(ids[0])
		resp, _ := handler(context.Background(), ev)
		model.answer(ev, resp, false)
	}
	r.assertPaidOnce(t, 0)
}

// TestAsyncLeaseRetryCopiesChurnWithoutStrandingOrPayingTwice: copies of a message that meet each
// other's live lease settle the transfer once, never livelock, never come back before the lease
// ends, never reach SQS's dead-letter queue while the item is queued, and never leave the queued
// item without a message. The API's message of an async transfer and the sweep's copy of it (two
// SQS messages, one body) take turns on an item whose first send is refused again and again
// (TRY_AGAIN_LATER: nothing moved, requeued each time). Whenever one copy holds the item, the
// other is received (the worst order) and meets the live lease: it is answered failed with the
// lease's remaining time as its backoff (RunQueued: DeliveryRetry, TRANSFER_IN_PROGRESS), never
// acknowledged. Held: each run requeues or settles, a copy that met a lease waits at least its
// remaining time, some message names the item whenever it is queued, one transaction lands, and
// once it has landed every copy is acknowledged at its next receive. What it costs: every run
// burns one receive of each other copy (the figures are logged).
func TestAsyncLeaseRetryCopiesChurnWithoutStrandingOrPayingTwice(t *testing.T) {
	r, q, _ := asyncRig(t)
	r.enqueue(t, 0)
	m := one(t, q.take())
	model, ids := sqsModel(t, r, m, m) // the API's message, the sweep's copy
	handler := queue.Submitter(r.orch, queue.Visibility{Changer: model, URL: "https://sqs.example/transfers"}, nil)
	const refusals = 3
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater, Count: refusals})

	visibleAt := map[string]time.Time{} // when each message is next visible (its last change)
	waitOf := func(rh string) (time.Duration, bool) {
		model.mu.Lock()
		defer model.mu.Unlock()
		for i := len(model.changes) - 1; i >= 0; i-- {
			if rest, ok := strings.CutPrefix(model.changes[i], rh+"="); ok {
				secs, _ := strconv.Atoi(rest)
				return time.Duration(secs) * time.Second, true
			}
		}
		return 0, false
	}
	deliver := func(id string) events.SQSEventResponse {
		ev := model.receiveID(id)
		resp, _ := handler(context.Background(), ev)
		model.answer(ev, resp, false)
		if wait, ok := waitOf(ev.Records[0].ReceiptHandle); ok {
			visibleAt[id] = r.clock.Now().Add(wait)
		}
		return resp
	}
	running, lease := "", 0
	r.orch.Hooks = func(_ context.Context, step transfer.Step, rec transfer.Record) error {
		if step != transfer.StepClaimed {
			return nil
		}
		for _, other := range ids {
			if other == running || !model.holds(other) {
				continue
			}
			remaining := rec.LeaseExpiresAt.Sub(r.clock.Now())
			if resp := deliver(other); len(resp.BatchItemFailures) != 1 {
				t.Errorf("the copy %s met a live lease and was answered %+v, want delivered again", other, resp)
			} else if back := visibleAt[other].Sub(r.clock.Now()); back < remaining {
				t.Errorf("the copy %s comes back after %v, before the holder's lease ends (%v)", other, back, remaining)
			}
			lease++
		}
		return nil
	}
	defer func() { r.orch.Hooks = nil }()

	for round := 0; ; round++ {
		var next string
		for _, id := range model.ids() {
			if next == "" || visibleAt[id].Before(visibleAt[next]) || visibleAt[id].Equal(visibleAt[next]) && id < next {
				next = id
			}
		}
		receives := model.receivesByID()
		rec := r.item(t, 0)
		if next == "" {
			if rec.Status == transfer.StatusQueued {
				t.Fatalf("round %d: the item is queued and no message names it: %s", round, describe(rec))
			}
			t.Logf("after %d rounds: item %s; receives %v; %d lease retries", round, describe(rec), receives, lease)
			break
		}
		if round == 20 {
			t.Fatalf("still going after %d rounds (livelock?): item %s, receives %v", round, describe(rec), receives)
		}
		for id, n := range receives {
			if n > 10 {
				t.Errorf("message %s received %d times: past maxReceiveCount (10), SQS dead-lettered it", id, n)
			}
		}
		if at := visibleAt[next]; r.clock.Now().Before(at) {
			r.clock.Advance(at.Sub(r.clock.Now()))
		}
		running = next
		deliver(next)
		running = ""
	}
	var paid int
	for _, tx := range r.net.Applied()[r.setupTxs:] {
		if id, ok := r.ledger.ownerOf(tx.Hash); ok && id == r.wallet+"/"+r.input(0).Request.Amount {
			paid++
		}
	}
	if rec := r.item(t, 0); paid != 1 || rec.Status != transfer.StatusReplayable {
		t.Fatalf("%d transactions applied, item %s: want one, settled", paid, describe(rec))
	}
	if lease < refusals {
		t.Errorf("%d copies met a live lease, want one per run (%d at least): the test models nothing", lease, refusals)
	}
}
