package dynamo_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// queuedRecord is an async transfer's claim as Enqueue writes it.
func queuedRecord(name string, at time.Time) transfer.Record {
	rec := claimRecord(key(name), "api", "fp-"+name)
	rec.Status, rec.LeaseOwner, rec.LeaseExpiresAt, rec.Async = transfer.StatusQueued, "", time.Time{}, true
	rec.CreatedAt, rec.UpdatedAt = at, at
	return rec
}

// A queued item round-trips (async included), sits on gsi1 under "queued" by its queued time, and
// is listed by ListQueued only once older than the time asked, oldest first; taken (in_flight) or
// requeued, it moves between the index's partitions with it.
func TestQueuedItems(t *testing.T) {
	client, _ := dynamotest.Minidyn(t)
	f := newFixture(t, client)
	ctx := context.Background()
	old, young := queuedRecord("queued-old", t0), queuedRecord("queued-young", t0.Add(time.Minute))
	for _, rec := range []transfer.Record{young, old} {
		if _, won, err := f.store.Claim(ctx, rec, t0); err != nil || !won {
			t.Fatalf("claim %s: %v, %v", rec.StoreKey, won, err)
		}
	}
	got, err := f.store.Get(ctx, old.StoreKey)
	if err != nil || !reflect.DeepEqual(got, old) {
		t.Fatalf("Get = %+v, %v; want %+v", got, err, old)
	}
	list := func(before time.Time) []string {
		t.Helper()
		recs, next, err := f.store.ListQueued(ctx, before, 10, "")
		if err != nil || next != "" {
			t.Fatalf("ListQueued: %v (next %q)", err, next)
		}
		var keys []string
		for _, r := range recs {
			keys = append(keys, r.StoreKey)
		}
		return keys
	}
	if got := list(t0); len(got) != 0 {
		t.Fatalf("queued before t0: %v, want none", got)
	}
	if got := list(t0.Add(2 * time.Minute)); !reflect.DeepEqual(got, []string{old.StoreKey, young.StoreKey}) {
		t.Fatalf("queued before t0+2m: %v, want oldest first", got)
	}
	// Taken: in_flight under a lease, off the queued partition, on the claims partition.
	taken := old
	taken.Status, taken.LeaseOwner, taken.LeaseExpiresAt, taken.Version = transfer.StatusInFlight, "submitter", t0.Add(time.Minute), 2
	if err := f.store.Replace(ctx, taken, transfer.Expect(old)); err != nil {
		t.Fatal(err)
	}
	if got := list(t0.Add(2 * time.Minute)); !reflect.DeepEqual(got, []string{young.StoreKey}) {
		t.Fatalf("after the take: %v", got)
	}
	if claims, _, err := f.store.ListExpiredClaims(ctx, t0.Add(2*time.Minute), 10, ""); err != nil || len(claims) != 1 || !claims[0].Async {
		t.Fatalf("expired claims = %+v, %v", claims, err)
	}
	// Requeued: back on the queued partition under its new queued time.
	back := transfer.Requeued(taken, t0.Add(3*time.Minute))
	if err := f.store.Replace(ctx, back, transfer.Expect(taken)); err != nil {
		t.Fatal(err)
	}
	if got := list(t0.Add(2 * time.Minute)); !reflect.DeepEqual(got, []string{young.StoreKey}) {
		t.Fatalf("requeued at t0+3m is listed before t0+2m: %v", got)
	}
	if got := list(t0.Add(4 * time.Minute)); !reflect.DeepEqual(got, []string{young.StoreKey, old.StoreKey}) {
		t.Fatalf("after the requeue: %v", got)
	}
}

// The store refuses a queued item that holds what a queued item never holds.
func TestQueuedItemRefused(t *testing.T) {
	base := queuedRecord("queued-bad", t0)
	for name, mutate := range map[string]func(r *transfer.Record){
		"lease owner":                func(r *transfer.Record) { r.LeaseOwner = "someone" },
		"envelope":                   func(r *transfer.Record) { r.Envelope = &transfer.Envelope{XDR: "AAAA", InnerHash: "ab"} },
		"expiry":                     func(r *transfer.Record) { r.ExpiresAt = t0.Unix() },
		"not async":                  func(r *transfer.Record) { r.Async = false },
		"a hold without its failure": func(r *transfer.Record) { r.NotBefore = t0.Unix() + 60 },
		"a failure without a hold": func(r *transfer.Record) {
			r.Result = &transfer.Result{Code: transfer.CodeServiceSideFailure}
		},
		"a negative hold": func(r *transfer.Record) {
			r.NotBefore, r.Result = -1, &transfer.Result{Code: transfer.CodeServiceSideFailure}
		},
	} {
		rec := base
		mutate(&rec)
		if _, err := dynamo.EncodeItem(rec); err == nil {
			t.Errorf("%s: a queued item with it was accepted", name)
		}
	}
	if _, err := dynamo.EncodeItem(base); err != nil {
		t.Fatalf("a good queued item was refused: %v", err)
	}
	held := base
	held.NotBefore, held.Result = t0.Unix()+60, &transfer.Result{Code: transfer.CodeServiceSideFailure, Detail: "op_bad_auth"}
	if _, err := dynamo.EncodeItem(held); err != nil {
		t.Fatalf("a queued item held back with its failure was refused: %v", err)
	}
	flight := claimRecord(key("flight-held"), "api", "fp-flight-held")
	flight.NotBefore = t0.Unix() + 60
	if _, err := dynamo.EncodeItem(flight); err == nil {
		t.Error("an in_flight item held back was accepted: only a queued item waits to be taken")
	}
}

// A queued item held back (notBefore with its failure as result) that a build older than
// notBefore wrote back (a rollback, or the old build's sweep during a deploy: it restarts the
// item it read, and the whole-item PutItem drops the attribute it does not know but keeps the
// result) reads back as an item this build can write again: the sweep restarts every queued item
// it finds (next := item, Version+1), and an item it cannot write is never sent again, its key
// pending for ever once its message is gone.
func TestAHeldItemAnOlderBuildWroteBackCanBeWrittenAgain(t *testing.T) {
	held := queuedRecord("held-old-build", t0)
	held.NotBefore, held.Result = t0.Unix()+60, &transfer.Result{Code: transfer.CodeServiceSideFailure, Detail: "op_bad_auth"}
	av, err := dynamo.EncodeItem(held)
	if err != nil {
		t.Fatal(err)
	}
	delete(av, "notBefore") // as the older build writes it back
	rec, err := dynamo.DecodeItem(av)
	if err != nil {
		t.Fatal(err)
	}
	restarted := rec
	restarted.Version++
	restarted.UpdatedAt = t0.Add(11 * time.Minute)
	if _, err := dynamo.EncodeItem(restarted); err != nil {
		t.Fatalf("the sweep's restart of the item an older build wrote back was refused: %v", err)
	}
	if _, held := rec.HeldFor(t0); held || rec.Result != nil {
		t.Errorf("read back: held %v, result %+v; want an item that runs at once, with no result", held, rec.Result)
	}
}
