package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// seqLedger is the fixture's ledger with the corroboration internal/stellar's RPCLedger gives a
// NOT_FOUND once a ledger after maxTime has closed (notFound, innerSourceAndSequence): the source
// account's sequence number, read from the signed XDR, is still below the envelope's. Without the
// XDR it cannot read the source, so it proves nothing, as the real ledger does.
type seqLedger struct{ *ledger }

func (l seqLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	lk, err := l.ledger.Lookup(ctx, env)
	if err == nil && lk.Status == transfer.LookupNotFound && env.XDR != "" && env.MaxTime > 0 &&
		lk.LatestLedgerCloseTime.Unix() > env.MaxTime {
		lk.SourceNotAdvanced = true
	}
	return lk, err
}

// An operator's get of a batched key shows the chain as its batch's proof judges it: the key's
// own item holds no XDR (its batch item does), so a view looked up from the item alone loses the
// source-sequence corroboration and says "not proven dead" of a batch that a discard, judged from
// the batch item, proves dead and queues again. Both must read the same envelope.
func TestAnOperatorsViewOfABatchedKeyJudgesItsBatchsEnvelope(t *testing.T) {
	f := newFixture(t)
	_, recs := f.putBatch(t, "batch-view1", "batch-view2")
	// Long after maxTime, on an RPC whose history no longer reaches the submission (ledger 50):
	// only the channel's sequence number proves the batch never applied.
	f.ledger.closedAt, f.ledger.latest, f.ledger.oldest = t0.Add(time.Hour), 1000, 400
	f.clock.now = t0.Add(time.Hour)
	l := seqLedger{f.ledger}
	orch := &transfer.Orchestrator{Store: f.store, Ledger: l, Clock: f.clock, Logger: f.log}
	f.svc = reconcile.New(reconcile.Config{Store: f.store, Settler: orch, Ledger: l, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log})

	got := mustDo(t, f, `{"action":"get","storeKey":"`+recs[0].StoreKey+`"}`)
	item, _ := got["item"].(map[string]any)
	chain, _ := item["chain"].(map[string]any)
	if chain == nil || chain["provenDead"] != true || chain["canStillLand"] != false {
		t.Fatalf("get shows the chain %v for a batch its own discard proves dead", chain)
	}
	done := mustDo(t, f, `{"action":"resolve","storeKey":"`+recs[0].StoreKey+`","discard":true,"operator":"alice","reason":"batch expired"}`)
	if done["resolution"] != "requeued" {
		t.Fatalf("discard = %v", done)
	}
}
