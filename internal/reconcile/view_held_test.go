package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An operator's get shows a queued key held back after an answer that pages: when it may run
// again (notBefore) and the answer a synchronous call with the key meets until then (heldCode),
// so "why has this payout not moved?" is answered from the view rather than from the logs.
func TestOperatorViewShowsAHeldKeysNotBeforeAndCode(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	b, recs := f.putBatch(t, "held-view-0", "held-view-1")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash,
		Ledger: 80, ResultCodes: []string{"tx_failed", "op_bad_auth", "op_success"}}
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log, Queue: &heldQueue{}, Queued: f.store})
	if out, err := svc.Sweep(ctx); err != nil || out.InDoubt.Requeued != 2 {
		t.Fatalf("sweep = %+v, %v; want both keys requeued", out, err)
	}
	for _, rec := range recs {
		stored, err := f.store.Get(ctx, rec.StoreKey)
		if err != nil || stored.NotBefore == 0 || stored.Result == nil {
			t.Fatalf("%s: %+v, %v; want held back with its failure", rec.ClientKey, stored, err)
		}
		got, err := svc.Do(ctx, reconcile.Request{Action: "get", StoreKey: rec.StoreKey})
		if err != nil {
			t.Fatal(err)
		}
		it := got.(*reconcile.GetAnswer).Item
		if it.Status != string(transfer.StatusQueued) || it.NotBefore == nil || !it.NotBefore.Equal(time.Unix(stored.NotBefore, 0)) ||
			it.HeldCode != stored.Result.Code || it.HeldCode == "" {
			t.Errorf("%s: view status %s, notBefore %v, heldCode %q; want queued, %v, %q", rec.ClientKey, it.Status, it.NotBefore,
				it.HeldCode, time.Unix(stored.NotBefore, 0).UTC(), stored.Result.Code)
		}
		if it.FailingCode != "" {
			t.Errorf("%s: a queued key shows failingCode %q (in_doubt only)", rec.ClientKey, it.FailingCode)
		}
	}
}
