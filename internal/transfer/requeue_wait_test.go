package transfer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// delayQueue is a transfer.DelayQueue that records what is sent at once and what is held back.
type delayQueue struct {
	mu      sync.Mutex
	now     []transfer.QueueMessage
	delayed []delayedMessage
}

type delayedMessage struct {
	m     transfer.QueueMessage
	delay time.Duration
}

func (q *delayQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.now = append(q.now, m)
	return nil
}

func (q *delayQueue) SendAfter(_ context.Context, m transfer.QueueMessage, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if d <= 0 {
		q.now = append(q.now, m)
		return nil
	}
	q.delayed = append(q.delayed, delayedMessage{m, d})
	return nil
}

// asyncInDoubtFailed leaves key an async item (accepted, taken by the submitter, its envelope
// sent) parked in_doubt, whose envelope the ledger then included FAILED with codes.
func asyncInDoubtFailed(t *testing.T, h *harness, key string, codes []string) transfer.Record {
	t.Helper()
	ctx := context.Background()
	q := h.orch.Queue
	h.orch.Queue = &recordingQueue{}
	defer func() { h.orch.Queue = q }()
	if res, err := h.orch.Enqueue(ctx, input(key, "1")); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	rec := h.item(t, key)
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = codes
	h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
		if s == transfer.StepSent {
			return errCrash
		}
		return nil
	}
	if _, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}); !errors.Is(err, errCrash) {
		t.Fatalf("run = %v, want the crash after the send", err)
	}
	h.orch.Hooks = nil
	rec = h.item(t, key)
	h.clock.Advance(time.Minute)
	h.ledger.closeIfDue()
	doubt := transfer.InDoubtRecord(rec, transfer.CodeTimeout, h.clock.Now())
	if err := transfer.ReplaceItem(ctx, h.store, rec, doubt); err != nil {
		t.Fatalf("writing the in_doubt item: %v", err)
	}
	return h.item(t, key)
}

// An async item whose envelope the ledger included FAILED on the service's side is requeued
// (never dropped), but its message must wait that failure's Retry-After, as RunQueued's own
// requeue of it does through the submitter's Backoff (README.md, "Asynchronous transfers"): sent
// at once, the submitter builds a new envelope against the unchanged cause within the second,
// another FAILED inclusion, another fee and another page, while the page says an operator must
// act. A retry that settles it inline is answered the failure at once, as the call that sent it
// would have been, rather than wait on an item that runs only after the delay; a requeue after a
// proof of death is still sent at once.
func TestRequeueForServiceSideFailureWaitsItsRetryAfter(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		codes []string
		code  string
	}{
		{[]string{"tx_failed", "op_bad_auth"}, transfer.CodeServiceSideFailure},
		{[]string{"tx_failed", "op_underfunded"}, transfer.CodeVaultUnderfunded},
	} {
		t.Run(tc.codes[1], func(t *testing.T) {
			h := newHarness(t)
			q := &delayQueue{}
			h.orch.Queue = q
			asyncInDoubtFailed(t, h, "payout-wait-1", tc.codes)
			prepares, sends := h.ledger.counts()
			start := h.clock.Now()

			_, err := h.orch.Transfer(ctx, input("payout-wait-1", "1"))
			u := unavailable(t, err, tc.code)
			if got := h.clock.Now().Sub(start); got != 0 {
				t.Errorf("the retry waited %v before answering, want an answer at once", got)
			}
			rec := h.item(t, "payout-wait-1")
			if rec.Status != transfer.StatusQueued {
				t.Fatalf("item %s, want queued again (an accepted transfer is never dropped)", rec.Status)
			}
			if p, s := h.ledger.counts(); p != prepares || s != sends {
				t.Errorf("the retry built %d and sent %d envelopes against the unchanged cause, want none", p-prepares, s-sends)
			}
			want := transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}
			if len(q.now) != 0 || len(q.delayed) != 1 || q.delayed[0].m != want || q.delayed[0].delay != u.RetryAfter || u.RetryAfter != time.Minute {
				t.Fatalf("sent at once %v, held back %v; want only %v held back for the failure's Retry-After (%v)", q.now, q.delayed, want, u.RetryAfter)
			}

			// The sweep's and an operator's requeue of the same failure wait as long.
			h2 := newHarness(t)
			rec2 := asyncInDoubtFailed(t, h2, "payout-wait-2", tc.codes)
			s, err := h2.orch.Settle(ctx, rec2)
			if err != nil || s.Resolution != transfer.ResolvedRequeued || s.Shortfall != tc.code {
				t.Fatalf("settle = %+v, %v; want requeued for %s", s, err, tc.code)
			}
			if d := transfer.RequeueDelay(s); d != time.Minute {
				t.Fatalf("RequeueDelay = %v, want the failure's Retry-After, 1m0s", d)
			}
			q2 := &delayQueue{}
			if err := transfer.SendRequeued(ctx, q2, s); err != nil || len(q2.now) != 0 || len(q2.delayed) != 1 || q2.delayed[0].delay != time.Minute {
				t.Fatalf("SendRequeued = %v: at once %v, held back %v; want one held back 1m0s", err, q2.now, q2.delayed)
			}
			// A queue that cannot hold a message back sends nothing: the sweep sends the item once
			// its grace (longer than the Retry-After) has passed.
			plain := &recordingQueue{}
			if err := transfer.SendRequeued(ctx, plain, s); !errors.Is(err, transfer.ErrCannotDelay) || len(plain.sent) != 0 {
				t.Fatalf("SendRequeued on a queue without delay = %v, sent %v; want ErrCannotDelay and nothing sent", err, plain.sent)
			}
		})
	}

	t.Run("proven dead is sent at once", func(t *testing.T) {
		h := newHarness(t)
		h.orch.Queue = &recordingQueue{}
		if _, err := h.orch.Enqueue(ctx, input("payout-wait-3", "1")); err != nil {
			t.Fatal(err)
		}
		rec := h.item(t, "payout-wait-3")
		h.ledger.noClose = true
		h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
			if s == transfer.StepSent {
				return errCrash
			}
			return nil
		}
		if _, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}); !errors.Is(err, errCrash) {
			t.Fatalf("run = %v, want the crash", err)
		}
		h.orch.Hooks = nil
		h.ledger.mu.Lock()
		h.ledger.queued = map[string]transfer.Envelope{} // dropped by the network
		h.ledger.mu.Unlock()
		h.ledger.noClose = false
		h.clock.Advance(10 * time.Minute)
		h.ledger.closeIfDue()
		s, err := h.orch.Settle(ctx, h.item(t, "payout-wait-3"))
		if err != nil || s.Resolution != transfer.ResolvedRequeued || s.Shortfall != "" || transfer.RequeueDelay(s) != 0 {
			t.Fatalf("settle = %+v, %v; want requeued with no delay", s, err)
		}
		q := &delayQueue{}
		if err := transfer.SendRequeued(ctx, q, s); err != nil || len(q.now) != 1 || len(q.delayed) != 0 {
			t.Fatalf("SendRequeued = %v: at once %v, held back %v; want one at once", err, q.now, q.delayed)
		}
		if err := transfer.SendRequeued(ctx, &recordingQueue{}, s); err != nil {
			t.Fatalf("SendRequeued on a plain queue = %v, want it sent", err)
		}
	})
}
