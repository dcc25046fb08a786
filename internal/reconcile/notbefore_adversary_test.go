package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A key the sweep requeued held back (its batch included FAILED on the service's side) and whose
// message is then lost (dead-lettered after its receives) is not left pending for ever: once it has
// waited the queued grace, the sweep restarts it (a write that keeps the hold and its failure) and
// sends its message again, and that message, past the hold, runs it.
func TestSweepSendsAHeldItemAgainOnceItsMessageIsLost(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	b, recs := f.putBatch(t, "held-lost-0", "held-lost-1")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash,
		Ledger: 80, ResultCodes: []string{"tx_failed", "op_bad_auth", "op_success"}}
	q := &heldQueue{}
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log, Queue: q, Queued: f.store})
	if out, err := svc.Sweep(ctx); err != nil || out.InDoubt.Requeued != 2 {
		t.Fatalf("sweep = %+v, %v; want both keys requeued", out, err)
	}
	for _, rec := range recs {
		got, err := f.store.Get(ctx, rec.StoreKey)
		if err != nil || got.Status != transfer.StatusQueued || got.NotBefore == 0 {
			t.Fatalf("%s after the sweep: %+v, %v; want queued, held back", rec.ClientKey, got, err)
		}
	}
	// The held-back messages are lost; the grace passes.
	q.delays, q.now = nil, nil
	f.clock.now = f.clock.now.Add(reconcile.DefaultQueuedGrace + time.Second)
	out, err := svc.Sweep(ctx)
	if err != nil || out.Queued.Sent != 2 {
		t.Fatalf("sweep after the grace = %+v, %v; want both held keys sent again", out.Queued, err)
	}
	for _, rec := range recs {
		got, err := f.store.Get(ctx, rec.StoreKey)
		if err != nil || got.Status != transfer.StatusQueued || got.NotBefore == 0 || got.Result == nil {
			t.Fatalf("%s after the restart: %+v, %v; want queued with its hold and failure kept", rec.ClientKey, got, err)
		}
		if _, held := got.HeldFor(f.clock.Now()); held {
			t.Errorf("%s: still held back %d s after its hold", rec.ClientKey, f.clock.Now().Unix()-got.NotBefore)
		}
		if !contains(q.now, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}) {
			t.Errorf("%s: no message sent again (%v)", rec.ClientKey, q.now)
		}
	}
}
