package reconcile_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// replaced gives rec's envelope two more fee bumps around the same inner transaction, as
// replace-by-fee leaves it (outerHashes oldest first), written as the orchestrator writes them.
func (f *fixture) replaced(t *testing.T, rec transfer.Record) transfer.Record {
	t.Helper()
	next := rec
	env := *rec.Envelope
	first := env.OuterHash
	env.OuterHashes = []string{first, strings.Repeat("c", 64), strings.Repeat("d", 64)}
	env.OuterHash, env.XDR = env.OuterHashes[2], "BBBB-replacement"
	next.Envelope = &env
	next.Version++
	if err := transfer.ReplaceItem(context.Background(), f.store, rec, next); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.Get(context.Background(), rec.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// An in-doubt item whose envelope was replaced by fee: get shows every outer hash, an operator's
// resolve accepts any of them (here the first, which is the one a full-history search found) and
// refuses a foreign one, and the item is settled with the inner hash.
func TestResolveAnItemWithSeveralOuterHashes(t *testing.T) {
	f := newFixture(t)
	rec := f.replaced(t, f.put(t, "order-rbf1", transfer.StatusInDoubt, t0.Add(time.Hour), false))
	outers := rec.Envelope.Outers()
	if len(outers) != 3 {
		t.Fatalf("outer hashes %v", outers)
	}
	got := mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)["item"].(map[string]any)
	list, _ := got["outerHashes"].([]any)
	if len(list) != 3 || list[0] != outers[0] || list[2] != outers[2] || got["outerHash"] != outers[2] {
		t.Fatalf("get shows outerHash %v, outerHashes %v; want all three, newest as outerHash", got["outerHash"], got["outerHashes"])
	}
	resolve := func(hash string) string {
		return `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + hash + `","operator":"alice"}`
	}
	refused(t, f, resolve(strings.Repeat("e", 64)), reconcile.CodeHashMismatch)
	f.land(rec, transfer.LookupSuccess, 90)
	res := mustDo(t, f, resolve(outers[0]))
	if res["resolution"] != "replayable" || res["transactionHash"] != rec.Envelope.InnerHash {
		t.Fatalf("resolve with the first outer hash = %v", res)
	}
	stored, err := f.store.Get(context.Background(), rec.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored.Envelope.Outers(), outers) || stored.Status != transfer.StatusReplayable {
		t.Fatalf("stored %s %v", stored.Status, stored.Envelope.Outers())
	}
}

// The sweep settles an in-doubt item with several outer hashes from the ledger like any other.
func TestSweepAnItemWithSeveralOuterHashes(t *testing.T) {
	f := newFixture(t)
	rec := f.replaced(t, f.put(t, "order-rbf2", transfer.StatusInDoubt, t0.Add(time.Hour), false))
	f.land(rec, transfer.LookupSuccess, 91)
	mustDo(t, f, `{"action":"sweep"}`)
	stored, err := f.store.Get(context.Background(), rec.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != transfer.StatusReplayable || stored.Result.Ledger != 91 || len(stored.Envelope.Outers()) != 3 {
		t.Fatalf("after the sweep: %s %+v %v", stored.Status, stored.Result, stored.Envelope.Outers())
	}
}
