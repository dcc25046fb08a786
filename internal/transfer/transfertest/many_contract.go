package transfertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ManyStore is a Store that reads many items at once (transfer.ManyReader), as both the in-memory
// Store and internal/dynamo's do.
type ManyStore interface {
	transfer.Store
	transfer.ManyReader
}

// ManyContract checks that a ManyStore's GetMany reads what Get reads: every item held at the
// keys asked, as Get returns it, by store key; a key holding none absent and no error; a key asked
// twice read once; more keys than one DynamoDB request reads (internal/dynamo.BatchGetKeys, 100);
// none. Run it against every implementation, as StoreContract.
func ManyContract(t *testing.T, open func(t *testing.T) ManyStore) {
	ctx := context.Background()

	t.Run("GetMany reads each item as Get does and leaves out the keys holding none", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		inFlight := withEnvelope(claimRecord("contract-many-a", "owner-a"))
		queued := queuedRecord("contract-many-b")
		replayable := settle(claimRecord("contract-many-c", "owner-c"), transfer.StatusReplayable, t0.Unix()+86400)
		for _, rec := range []transfer.Record{inFlight, queued, replayable} {
			put(t, s, rec)
		}
		missing := transfer.StoreKey(wallet, "contract-many-none")
		keys := []string{inFlight.StoreKey, missing, queued.StoreKey, replayable.StoreKey, inFlight.StoreKey}
		got, err := s.GetMany(ctx, keys)
		if err != nil {
			t.Fatalf("GetMany: %v", err)
		}
		if len(got) != 3 {
			t.Fatalf("GetMany returned %d items, want 3 (the key holding none left out): %v", len(got), got)
		}
		for _, rec := range []transfer.Record{inFlight, queued, replayable} {
			equal(t, "read by GetMany", got[rec.StoreKey], mustGet(t, s, rec.StoreKey))
		}
		if _, ok := got[missing]; ok {
			t.Fatalf("GetMany holds the key with no item: %+v", got[missing])
		}
	})

	t.Run("GetMany reads more keys than one request holds", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		var keys []string
		for i := range 130 {
			rec := queuedRecord(fmt.Sprintf("contract-many-%03d", i))
			if i%10 != 9 { // every tenth key holds no item
				put(t, s, rec)
			}
			keys = append(keys, rec.StoreKey)
		}
		got, err := s.GetMany(ctx, keys)
		if err != nil {
			t.Fatalf("GetMany of %d keys: %v", len(keys), err)
		}
		if len(got) != 117 {
			t.Fatalf("GetMany of %d keys returned %d items, want 117", len(keys), len(got))
		}
		for i, k := range keys {
			rec, ok := got[k]
			if ok != (i%10 != 9) || (ok && (rec.StoreKey != k || rec.ClaimID != "claim-queued-"+fmt.Sprintf("contract-many-%03d", i))) {
				t.Fatalf("key %d (%s): held %v, item %+v", i, k, ok, rec)
			}
		}
	})

	t.Run("GetMany of no key reads nothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		got, err := s.GetMany(ctx, nil)
		if err != nil || len(got) != 0 {
			t.Fatalf("GetMany(nil) = %v, %v; want an empty map", got, err)
		}
	})
}
