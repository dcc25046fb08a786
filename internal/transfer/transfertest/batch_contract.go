package transfertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// BatchStore is a Store that keeps batches (transfer.BatchStore), as both the in-memory Store and
// internal/dynamo's do.
type BatchStore interface {
	transfer.Store
	transfer.BatchStore
}

// BatchContract checks that a BatchStore keeps the rules of the DynamoDB store's batches
// (internal/dynamo, batch.go; the in-memory Store's batch.go says them), one subtest per rule; open
// returns an empty store for one subtest. Run it against every implementation, as StoreContract.
func BatchContract(t *testing.T, open func(t *testing.T) BatchStore) {
	ctx := context.Background()

	t.Run("a batch envelope is written once and reads back as written", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		b := batchEnvelope(strings.Repeat("b1", 32), "contract-batch-a", "contract-batch-b")
		if err := s.PutBatch(ctx, b); err != nil {
			t.Fatalf("PutBatch: %v", err)
		}
		got, err := s.GetBatch(ctx, b.Envelope.InnerHash)
		if err != nil {
			t.Fatalf("GetBatch: %v", err)
		}
		want := b
		want.CreatedAt = time.UnixMilli(b.CreatedAt.UnixMilli()).UTC()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("GetBatch:\n got  %+v\n want %+v", got, want)
		}
		if got.Index(b.Ops[1].StoreKey) != 1 || got.Index("transfer:none") != -1 {
			t.Fatalf("Index of the second key = %d, of an absent one %d", got.Index(b.Ops[1].StoreKey), got.Index("transfer:none"))
		}
		again := b
		again.Ops = b.Ops[:1]
		if err := s.PutBatch(ctx, again); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("a second PutBatch of the same hash: %v, want ErrConditionFailed", err)
		}
		if got, _ := s.GetBatch(ctx, b.Envelope.InnerHash); len(got.Ops) != 2 {
			t.Fatalf("the second PutBatch changed the batch: %d operations", len(got.Ops))
		}
	})

	t.Run("a batch's TTL is set on its item and never creates one", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		b := batchEnvelope(strings.Repeat("e5", 32), "contract-batch-ttl")
		b.ExpiresAt = 0
		if err := s.PutBatch(ctx, b); err != nil {
			t.Fatalf("PutBatch: %v", err)
		}
		if err := s.ExpireBatch(ctx, b.Envelope.InnerHash, 1_900_000_000); err != nil {
			t.Fatalf("ExpireBatch: %v", err)
		}
		if got, err := s.GetBatch(ctx, b.Envelope.InnerHash); err != nil || got.ExpiresAt != 1_900_000_000 || len(got.Ops) != 1 || got.Envelope.XDR != b.Envelope.XDR {
			t.Fatalf("GetBatch after ExpireBatch: %+v, %v; want expiresAt 1900000000 and the rest as written", got, err)
		}
		absent := strings.Repeat("e6", 32)
		if err := s.ExpireBatch(ctx, absent, 1_900_000_000); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("ExpireBatch of a batch never written: %v, want ErrNotFound", err)
		}
		if _, err := s.GetBatch(ctx, absent); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("ExpireBatch created an item: GetBatch %v", err)
		}
	})

	t.Run("a batch's replacement by fee is written on its version and keeps the rest", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		b := batchEnvelope(strings.Repeat("e8", 32), "contract-batch-rbf-a", "contract-batch-rbf-b")
		if err := s.PutBatch(ctx, b); err != nil {
			t.Fatalf("PutBatch: %v", err)
		}
		next := b
		next.Envelope.XDR, next.Envelope.FeeStroops = "AAAA-replacement", 10*b.Envelope.FeeStroops+10
		next.Envelope.OuterHash = strings.Repeat("f8", 32)
		next.Envelope.OuterHashes = []string{b.Envelope.OuterHash, next.Envelope.OuterHash}
		next.Version = 2
		if err := s.ReplaceBatch(ctx, next); err != nil {
			t.Fatalf("ReplaceBatch: %v", err)
		}
		got, err := s.GetBatch(ctx, b.Envelope.InnerHash)
		if err != nil || got.Version != 2 || got.Envelope.XDR != next.Envelope.XDR || got.Envelope.OuterHash != next.Envelope.OuterHash ||
			!slices.Equal(got.Envelope.Outers(), next.Envelope.Outers()) || got.Envelope.FeeStroops != next.Envelope.FeeStroops ||
			got.Envelope.MaxTime != b.Envelope.MaxTime || got.Envelope.Channel != b.Envelope.Channel || !reflect.DeepEqual(got.Ops, b.Ops) ||
			got.ExpiresAt != b.ExpiresAt {
			t.Fatalf("GetBatch after ReplaceBatch: %+v, %v; want the replacement's envelope at version 2, the rest as written", got, err)
		}
		// The same version again (a second judge that read version 1, or this write's SDK retry):
		// the condition fails and nothing changes.
		again := next
		again.Envelope.OuterHash, again.Envelope.XDR = strings.Repeat("f9", 32), "AAAA-other"
		again.Envelope.OuterHashes = []string{b.Envelope.OuterHash, again.Envelope.OuterHash}
		if err := s.ReplaceBatch(ctx, again); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("a second ReplaceBatch of version 1: %v, want ErrConditionFailed", err)
		}
		if got, _ := s.GetBatch(ctx, b.Envelope.InnerHash); got.Envelope.OuterHash != next.Envelope.OuterHash {
			t.Fatalf("the failed ReplaceBatch changed the batch: outer hash %s", got.Envelope.OuterHash)
		}
		absent := next
		absent.Envelope.InnerHash = strings.Repeat("e9", 32)
		if err := s.ReplaceBatch(ctx, absent); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("ReplaceBatch of a batch never written: %v, want ErrConditionFailed", err)
		}
		if _, err := s.GetBatch(ctx, absent.Envelope.InnerHash); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("ReplaceBatch created an item: GetBatch %v", err)
		}
	})

	t.Run("a batch's in-doubt page is claimed once", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		pager, ok := s.(interface {
			PageBatch(ctx context.Context, innerHash, by string) (bool, error)
		})
		if !ok {
			t.Skip("the store claims no pages")
		}
		b := batchEnvelope(strings.Repeat("e7", 32), "contract-batch-page")
		if err := s.PutBatch(ctx, b); err != nil {
			t.Fatalf("PutBatch: %v", err)
		}
		for _, tc := range []struct {
			hash, by string
			want     bool
			missing  bool // ErrNotFound: no batch item
		}{
			{b.Envelope.InnerHash, "event-1", true, false},
			{b.Envelope.InnerHash, "event-1", true, false}, // the same record delivered again
			{b.Envelope.InnerHash, "event-2", false, false},
			{strings.Repeat("e8", 32), "event-1", false, true}, // no batch item
		} {
			got, err := pager.PageBatch(ctx, tc.hash, tc.by)
			if got != tc.want || errors.Is(err, transfer.ErrNotFound) != tc.missing || err != nil && !tc.missing {
				t.Fatalf("PageBatch(%s, %s) = %v, %v; want %v, not found %v", tc.hash[:4], tc.by, got, err, tc.want, tc.missing)
			}
		}
		if got, err := s.GetBatch(ctx, b.Envelope.InnerHash); err != nil || len(got.Ops) != 1 || got.Envelope.XDR != b.Envelope.XDR {
			t.Fatalf("GetBatch after PageBatch: %+v, %v", got, err)
		}
		if _, err := s.GetBatch(ctx, strings.Repeat("e8", 32)); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("PageBatch created an item: GetBatch %v", err)
		}
	})

	t.Run("a batch never written is not found", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		if _, err := s.GetBatch(ctx, strings.Repeat("0f", 32)); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("GetBatch: %v, want ErrNotFound", err)
		}
	})

	t.Run("a malformed batch is refused before anything is written", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		hash := strings.Repeat("c3", 32)
		none := batchEnvelope(hash)
		twice := batchEnvelope(hash, "contract-batch-twice", "contract-batch-twice")
		tooMany := batchEnvelope(hash)
		for i := range transfer.MaxBatchOperations + 1 {
			tooMany.Ops = append(tooMany.Ops, transfer.BatchOp{StoreKey: fmt.Sprintf("transfer:k%d", i), ClaimID: "c"})
		}
		noXDR := batchEnvelope(hash, "contract-batch-noxdr")
		noXDR.Envelope.XDR = ""
		for name, b := range map[string]transfer.BatchEnvelope{"no operations": none, "a key twice": twice,
			"101 operations": tooMany, "no XDR": noXDR} {
			err := s.PutBatch(ctx, b)
			if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("PutBatch with %s: %v, want a refusal", name, err)
			}
		}
		if _, err := s.GetBatch(ctx, hash); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("after the refusals GetBatch: %v, want ErrNotFound", err)
		}
	})

	t.Run("one transaction attaches a batch to every key, and requeues them", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		taken := []transfer.Record{takenRecord("contract-attach-a"), takenRecord("contract-attach-b")}
		for _, rec := range taken {
			mustClaim(t, s, rec)
		}
		attached := attachBatch(taken, strings.Repeat("d4", 32))
		if err := transfer.ReplaceAllItems(ctx, s, taken, attached); err != nil {
			t.Fatalf("ReplaceAllItems (attach): %v", err)
		}
		for _, rec := range attached {
			equal(t, "attached item", mustGet(t, s, rec.StoreKey), asStored(rec))
		}
		requeued := []transfer.Record{transfer.Requeued(attached[0], t0.Add(time.Second)), transfer.Requeued(attached[1], t0.Add(time.Second))}
		if err := transfer.ReplaceAllItems(ctx, s, attached, requeued); err != nil {
			t.Fatalf("ReplaceAllItems (requeue): %v", err)
		}
		for _, rec := range requeued {
			got := mustGet(t, s, rec.StoreKey)
			equal(t, "requeued item", got, asStored(rec))
			if got.Batch != nil || got.Envelope != nil {
				t.Fatalf("a requeued item keeps its batch: %+v", got)
			}
		}
	})

	t.Run("a transaction with one failed condition writes nothing and names that key", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		taken := []transfer.Record{takenRecord("contract-fail-a"), takenRecord("contract-fail-b"), takenRecord("contract-fail-c")}
		for _, rec := range taken {
			mustClaim(t, s, rec)
		}
		// Another invocation took b over (its lease expired) before the attach.
		over := taken[1]
		over.LeaseOwner, over.Version = "owner-takeover", over.Version+1
		if err := s.Replace(ctx, over, transfer.Expect(taken[1])); err != nil {
			t.Fatalf("take-over: %v", err)
		}
		err := transfer.ReplaceAllItems(ctx, s, taken, attachBatch(taken, strings.Repeat("e5", 32)))
		var bce *transfer.BatchConditionError
		if !errors.As(err, &bce) || !errors.Is(err, transfer.ErrConditionFailed) || !slices.Equal(bce.Failed, []string{taken[1].StoreKey}) {
			t.Fatalf("ReplaceAllItems: %v, want a BatchConditionError naming only %s", err, taken[1].StoreKey)
		}
		equal(t, "a", mustGet(t, s, taken[0].StoreKey), asStored(taken[0]))
		equal(t, "b", mustGet(t, s, taken[1].StoreKey), asStored(over))
		equal(t, "c", mustGet(t, s, taken[2].StoreKey), asStored(taken[2]))
	})

	t.Run("a malformed transaction is refused before anything is written", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a, b := takenRecord("contract-bad-a"), takenRecord("contract-bad-b")
		mustClaim(t, s, a)
		mustClaim(t, s, b)
		att := attachBatch([]transfer.Record{a, b}, strings.Repeat("f6", 32))
		outOfRange := att[1]
		outOfRange.Batch = &transfer.BatchRef{Index: 2, Size: 2}
		sync := att[1]
		sync.Async = false
		queued := transfer.Requeued(b, t0)
		queued.Batch = &transfer.BatchRef{Index: 1, Size: 2}
		for name, writes := range map[string][]transfer.ItemWrite{
			"no writes":                  nil,
			"a key twice":                {{Next: att[0], Cond: transfer.Expect(a)}, {Next: att[0], Cond: transfer.Expect(a)}},
			"an index outside the batch": {{Next: att[0], Cond: transfer.Expect(a)}, {Next: outOfRange, Cond: transfer.Expect(b)}},
			"a batched synchronous item": {{Next: att[0], Cond: transfer.Expect(a)}, {Next: sync, Cond: transfer.Expect(b)}},
			"a queued item in a batch":   {{Next: att[0], Cond: transfer.Expect(a)}, {Next: queued, Cond: transfer.Expect(b)}},
			"the wrong version":          {{Next: att[0], Cond: transfer.Expect(att[0])}},
		} {
			err := s.ReplaceAll(ctx, writes)
			if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("ReplaceAll with %s: %v, want a refusal", name, err)
			}
		}
		equal(t, "a", mustGet(t, s, a.StoreKey), asStored(a))
		equal(t, "b", mustGet(t, s, b.StoreKey), asStored(b))
	})
}

// batchEnvelope is a signed batch paying one operation to each of clientKeys' items.
func batchEnvelope(innerHash string, clientKeys ...string) transfer.BatchEnvelope {
	b := transfer.BatchEnvelope{
		Envelope: *withEnvelope(transfer.Record{}).Envelope, Version: 1,
		CreatedAt: t0.Add(123456789 * time.Nanosecond), ExpiresAt: t0.Add(72 * time.Hour).Unix(),
	}
	b.Envelope.InnerHash = innerHash
	for _, k := range clientKeys {
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: transfer.StoreKey(wallet, k), ClaimID: "claim-queued-" + k})
	}
	return b
}

// takenRecord is clientKey's async item as the submitter took it: in_flight under its lease.
func takenRecord(clientKey string) transfer.Record {
	rec := claimRecord(clientKey, "owner-batch")
	rec.Async, rec.ClaimID = true, "claim-queued-"+clientKey
	return rec
}

// attachBatch is taken with the batch innerHash attached, one operation each in order: the
// envelope's hashes without the XDR, and the item's operation.
func attachBatch(taken []transfer.Record, innerHash string) []transfer.Record {
	out := make([]transfer.Record, len(taken))
	for i, rec := range taken {
		env := *withEnvelope(rec).Envelope
		env.InnerHash, env.XDR = innerHash, ""
		rec.Envelope = &env
		rec.Batch = &transfer.BatchRef{Index: i, Size: len(taken)}
		rec.Version++
		rec.UpdatedAt = rec.UpdatedAt.Add(time.Second)
		out[i] = rec
	}
	return out
}
