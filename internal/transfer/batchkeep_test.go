package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batched key in doubt must never get stuck: the batch item it is judged from keeps no TTL while
// any key names it unsettled, however long that lasts (an in_doubt key never expires), and starts
// its TTL when the last key is decided. Here the ledger's history cannot be read for two days past
// KeyTTL + BatchKeep (DynamoDB's TTL deletion runs at the clock's time: DropExpired); each key is
// then still judged by its own operation, and the batch item expires only after the last one.
func TestABatchedKeyInDoubtNeverGetsStuck(t *testing.T) {
	ctx := context.Background()
	h, _, msgs := batchHarness(t, 10, 2)
	h.ledger.lookupErr = errors.New("history unavailable")
	for i, ans := range h.orch.RunQueuedBatch(ctx, msgs) {
		if rec := h.batchItem(t, i); problemCode(ans.Err) != transfer.CodeInDoubt || rec.Status != transfer.StatusInDoubt || rec.Batch == nil {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	hash := h.batchItem(t, 0).Envelope.InnerHash
	if b, err := h.store.GetBatch(ctx, hash); err != nil || b.ExpiresAt != 0 {
		t.Fatalf("batch item while its keys are in doubt: expiresAt %d, %v; want no TTL", b.ExpiresAt, err)
	}
	keep := transfer.DefaultSettings().KeyTTL + transfer.BatchKeep
	h.clock.Advance(keep + 48*time.Hour)
	h.store.DropExpired(h.clock.Now())
	h.ledger.lookupErr = nil

	s, err := h.orch.Settle(ctx, h.batchItem(t, 0))
	if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Result.TransactionHash != hash || s.Record.Batch.Index != 0 {
		t.Fatalf("Settle of key 0 %s after the outage: %+v, %v", keep+48*time.Hour, s, err)
	}
	if b, err := h.store.GetBatch(ctx, hash); err != nil || b.ExpiresAt != 0 {
		t.Fatalf("batch item with key 1 still in doubt: expiresAt %d, %v; want no TTL", b.ExpiresAt, err)
	}
	h.clock.Advance(keep + time.Hour)
	h.store.DropExpired(h.clock.Now())
	s, err = h.orch.Settle(ctx, h.batchItem(t, 1))
	if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Batch.Index != 1 {
		t.Fatalf("Settle of key 1, the last: %+v, %v", s, err)
	}
	b, err := h.store.GetBatch(ctx, hash)
	if want := h.clock.Now().Add(keep).Unix(); err != nil || b.ExpiresAt != want {
		t.Fatalf("batch item once its last key is decided: expiresAt %d, %v; want %d (now + KeyTTL + BatchKeep)", b.ExpiresAt, err, want)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}

// A batch decided within its invocation starts its item's TTL at once (now + KeyTTL + BatchKeep),
// and so does a batch whose keys were requeued together (nothing names it any more).
func TestADecidedBatchItemExpires(t *testing.T) {
	ctx := context.Background()
	keep := transfer.DefaultSettings().KeyTTL + transfer.BatchKeep
	for name, refuse := range map[string]bool{"landed": false, "refused and requeued": true} {
		t.Run(name, func(t *testing.T) {
			h, fb, msgs := batchHarness(t, 10, 2)
			if refuse {
				h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
					return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
				}
			}
			h.orch.RunQueuedBatch(ctx, msgs)
			if len(fb.built) != 1 {
				t.Fatalf("built %d batches", len(fb.built))
			}
			b, err := h.store.GetBatch(ctx, fb.hashes[0])
			if want := h.clock.Now().Add(keep).Unix(); err != nil || b.ExpiresAt != want {
				t.Fatalf("batch item: expiresAt %d, %v; want %d", b.ExpiresAt, err, want)
			}
		})
	}
}

// ReleaseBatch keeps the batch item without a TTL while any key names it in_flight or in_doubt,
// reading from the key after the one just written (one read when the next is still unsettled),
// and starts it once none does.
func TestReleaseBatchKeepsTheItemWhileAnyKeyIsUnsettled(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, attached := forgedBatch(t, h, "keep-0001", "keep-0002", "keep-0003")
	reads := 0
	h.store.Fail(func(op string) error {
		if op == "get" {
			reads++
		}
		return nil
	})
	requeue := func(i int) {
		t.Helper()
		cur := h.item(t, attached[i].ClientKey)
		if err := transfer.ReplaceItem(ctx, h.store, cur, transfer.Requeued(cur, h.clock.Now())); err != nil {
			t.Fatal(err)
		}
	}
	ttl := transfer.DefaultSettings().KeyTTL
	requeue(0)
	if ok, err := transfer.ReleaseBatch(ctx, h.store, b, []string{attached[0].StoreKey}, h.clock.Now(), ttl); ok || err != nil || reads != 1 {
		t.Fatalf("with keys 1 and 2 in flight: released %v, %v after %d reads; want kept after 1", ok, err, reads)
	}
	requeue(2)
	reads = 0
	if ok, err := transfer.ReleaseBatch(ctx, h.store, b, []string{attached[2].StoreKey}, h.clock.Now(), ttl); ok || err != nil || reads != 2 {
		t.Fatalf("with key 1 in flight: released %v, %v after %d reads; want kept after 2 (key 0, then key 1)", ok, err, reads)
	}
	requeue(1)
	if ok, err := transfer.ReleaseBatch(ctx, h.store, b, []string{attached[1].StoreKey}, h.clock.Now(), ttl); !ok || err != nil {
		t.Fatalf("with every key requeued: released %v, %v; want released", ok, err)
	}
	got, err := h.store.GetBatch(ctx, b.Envelope.InnerHash)
	if want := h.clock.Now().Add(ttl + transfer.BatchKeep).Unix(); err != nil || got.ExpiresAt != want {
		t.Fatalf("batch item expires at %d, %v; want %d", got.ExpiresAt, err, want)
	}
}
