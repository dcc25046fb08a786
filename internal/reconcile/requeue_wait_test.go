package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// heldQueue is a transfer.DelayQueue recording what is sent at once and what is held back, and
// for how long.
type heldQueue struct {
	now    []transfer.QueueMessage
	delays map[transfer.QueueMessage]time.Duration
}

func (q *heldQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.now = append(q.now, m)
	return nil
}

func (q *heldQueue) SendAfter(_ context.Context, m transfer.QueueMessage, d time.Duration) error {
	if q.delays == nil {
		q.delays = map[transfer.QueueMessage]time.Duration{}
	}
	q.delays[m] = d
	return nil
}

// The sweep that finds an async item's envelope included FAILED on the service's side requeues
// it (never dropped) and its message waits that failure's Retry-After, as the submitter's own
// requeue of the same failure does (README.md, "Asynchronous transfers"): sent at once, the
// submitter builds a new envelope against the unchanged cause, another FAILED inclusion and
// another fee. Both keys of a batch that failed op_bad_auth wait; a batch proven dead is sent at
// once.
func TestSweepRequeueForServiceSideFailureWaitsItsRetryAfter(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		codes []string
		wait  time.Duration
	}{
		{"service side", []string{"tx_failed", "op_bad_auth", "op_success"}, time.Minute},
		{"vault", []string{"tx_failed", "op_success", "op_underfunded"}, time.Minute},
		{"proven dead", nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			b, recs := f.putBatch(t, "wait-key-0", "wait-key-1")
			if c.codes != nil {
				f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash,
					Ledger: 80, ResultCodes: c.codes}
			} else {
				f.afterMaxTime()
			}
			q := &heldQueue{}
			svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
				KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log, Queue: q})
			out, err := svc.Sweep(ctx)
			if err != nil || out.InDoubt.Requeued != 2 {
				t.Fatalf("sweep = %+v, %v; want both keys requeued", out, err)
			}
			for _, rec := range recs {
				m := transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}
				got, held := q.delays[m]
				if c.wait == 0 {
					if held || !contains(q.now, m) {
						t.Errorf("%s: held back %v, sent at once %v; want it sent at once", rec.ClientKey, q.delays, q.now)
					}
					continue
				}
				if !held || got != c.wait || contains(q.now, m) {
					t.Errorf("%s: held back %v (%v), sent at once %v; want it held back %v", rec.ClientKey, got, held, q.now, c.wait)
				}
			}
		})
	}
}

func contains(ms []transfer.QueueMessage, m transfer.QueueMessage) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// An operator's discard that requeues a key for the same failure holds its message back as long.
func TestDiscardRequeueForServiceSideFailureWaitsItsRetryAfter(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "wait-dis-0", "wait-dis-1")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash, Ledger: 77,
		ResultCodes: []string{"tx_failed", "op_bad_auth", "op_success"}}
	q := &heldQueue{}
	f.svc = reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log, Queue: q})
	got := mustDo(t, f, `{"action":"resolve","storeKey":"`+recs[1].StoreKey+`","discard":true,"operator":"alice","reason":"signers fixed"}`)
	if got["resolution"] != "requeued" {
		t.Fatalf("discard = %v", got)
	}
	m := transfer.QueueMessage{StoreKey: recs[1].StoreKey, ClaimID: recs[1].ClaimID}
	if d, held := q.delays[m]; !held || d != time.Minute || len(q.now) != 0 {
		t.Fatalf("held back %v, sent at once %v; want the message held back 1m0s", q.delays, q.now)
	}
}
