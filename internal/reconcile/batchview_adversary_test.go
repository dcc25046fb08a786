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

// orphanBatch is putBatch's keys, parked in_doubt, naming a batch whose item the store does not
// hold (lost, or removed by hand).
func (f *fixture) orphanBatch(t *testing.T, keys ...string) []transfer.Record {
	t.Helper()
	env := transfer.Envelope{InnerHash: hashOf("orphan", false), OuterHash: hashOf("orphan", true), MaxTime: t0.Unix() + 30, SubmittedLedger: 50, Channel: "GCHAN"}
	return f.attachInDoubt(t, f.takeKeys(t, keys...), env, "LEASE_EXPIRED")
}

// An in-doubt batched key whose batch item does not hold its operation cannot be judged from the
// ledger (nothing can read its batch's XDR). An operator's discard is refused for what it is (not
// proven dead: the batch item does not hold the key's operation), never as a ledger outage the
// operator would retry for ever; and once no ledger can include the batch (NOT_FOUND, a ledger closed after its
// maxTime), a forced discard with the key's inner hash and a reason releases it, so the key is
// never stuck beyond an operator's reach.
func TestAnOperatorCanReleaseABatchedKeyWhoseBatchItemIsGone(t *testing.T) {
	f := newFixture(t)
	recs := f.orphanBatch(t, "orphan-one", "orphan-two")
	f.ledger.closedAt, f.ledger.latest, f.ledger.oldest = t0.Add(time.Hour), 1000, 400
	f.clock.now = t0.Add(time.Hour)
	key := recs[0].StoreKey
	refused(t, f, `{"action":"resolve","storeKey":"`+key+`","discard":true,"operator":"alice","reason":"gone"}`, reconcile.CodeNotProvenDead)
	got := mustDo(t, f, `{"action":"resolve","storeKey":"`+key+`","discard":true,"force":true,"innerHash":"`+recs[0].Envelope.InnerHash+`","operator":"alice","reason":"batch item lost; hash absent from full history"}`)
	if got["resolution"] != "released" || got["forced"] != true {
		t.Fatalf("forced discard = %v", got)
	}
	if _, err := f.store.Get(context.Background(), key); err == nil {
		t.Fatalf("the key is still held after a forced discard")
	}
	if other, err := f.store.Get(context.Background(), recs[1].StoreKey); err != nil || other.Status != transfer.StatusInDoubt {
		t.Fatalf("the other key was written: %+v, %v", other, err)
	}
}

// While the batch can still land (no ledger closed after its maxTime), even a forced discard of a
// key whose batch item is gone is refused.
func TestAForcedDiscardOfABatchedKeyWhoseBatchItemIsGoneWaitsForMaxTime(t *testing.T) {
	f := newFixture(t)
	recs := f.orphanBatch(t, "orphan-wait")
	refused(t, f, `{"action":"resolve","storeKey":"`+recs[0].StoreKey+`","discard":true,"force":true,"innerHash":"`+recs[0].Envelope.InnerHash+`","operator":"alice","reason":"too soon"}`, reconcile.CodeStillCanLand)
}

// An operator's resolve of a batched key records the key's share of the transaction's fee
// (transfer.FeeShare), as every other judge of a batched key does, so the records and settlement
// events of a batch's keys sum to what the ledger charged; never the whole batch's fee on one key.
func TestAnOperatorsResolveOfABatchedKeyRecordsItsShareOfTheFee(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-fee1", "batch-fee2")
	const fee = 301
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupSuccess, Hash: b.Envelope.InnerHash, Ledger: 77, FeeChargedStroops: fee}
	mustDo(t, f, `{"action":"resolve","storeKey":"`+recs[1].StoreKey+`","transactionHash":"`+b.Envelope.InnerHash+`","operator":"alice"}`)
	got, err := f.store.Get(context.Background(), recs[1].StoreKey)
	if err != nil || got.Result == nil {
		t.Fatalf("resolved key %+v, %v", got, err)
	}
	if want := transfer.FeeShare(fee, 1, 2); got.Result.FeeChargedStroops != want {
		t.Fatalf("the resolved key records a fee of %d stroops, want its share %d of the batch's %d", got.Result.FeeChargedStroops, want, fee)
	}
}
