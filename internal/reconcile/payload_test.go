package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestPayloadsReadOneWay: a payload that encoding/json would read one way and a person (or a
// proxy, or a log reader) another is refused before anything is done, as POST /transfers refuses
// it (issue 16, item 5). On the old decoder each of these acted: a forced discard of the second
// storeKey, a force-discard spelled in capitals, a discard turned into a resolution.
func TestPayloadsReadOneWay(t *testing.T) {
	f := newFixture(t)
	a := f.put(t, "order-dup-a", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	b := f.put(t, "order-dup-b", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.afterMaxTime()
	f.ledger.oldest = 90 // the ledger cannot prove anything: only force would release
	f.land(b, transfer.LookupSuccess, 60)
	force := `,"discard":true,"force":true,"operator":"dave","reason":"customer asked"}`
	for _, p := range []string{
		`{"action":"resolve","storeKey":"` + a.StoreKey + `","storeKey":"` + b.StoreKey + `"` + force,
		`{"ACTION":"resolve","storeKey":"` + a.StoreKey + `","Discard":true,"FORCE":true,"operator":"dave","reason":"customer asked"}`,
		`{"action":"resolve","storeKey":"` + b.StoreKey + `","discard":true,"discard":false,"transactionHash":"` + b.Envelope.InnerHash + `","operator":"dave"}`,
		`{"action":"resolve","storeKey":"` + a.StoreKey + `"` + force + `{"action":"list"}`,
		`{"action":"resolve","storeKey":"` + a.StoreKey + `"` + force + `]`,
	} {
		refused(t, f, p, reconcile.CodeBadRequest)
	}
	for _, rec := range []transfer.Record{a, b} {
		got, err := f.store.Get(context.Background(), rec.StoreKey)
		if err != nil || got.Status != transfer.StatusInDoubt || got.Version != rec.Version || got.Audit != nil {
			t.Errorf("%s changed: %+v, %v", rec.StoreKey, got, err)
		}
	}
	if len(f.ledger.done) != 0 {
		t.Errorf("a channel was released: %v", f.ledger.done)
	}
	// The same actions, spelled one way, act.
	if got := mustDo(t, f, `{"action":"resolve","storeKey":"`+a.StoreKey+`"`+force); got["resolution"] != "released" || got["forced"] != true {
		t.Errorf("forced discard = %v", got)
	}
}
