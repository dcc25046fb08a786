package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// takenByDeadSubmitter enqueues keys and takes each as a submitter would, its lease ending a
// second from now: the submitter then dies.
func takenByDeadSubmitter(t *testing.T, h *harness, keys ...string) []transfer.Record {
	t.Helper()
	now := h.clock.Now()
	var taken []transfer.Record
	for _, k := range keys {
		rec := enqueued(t, h, k)
		next := rec
		next.Status = transfer.StatusInFlight
		next.LeaseOwner, next.LeaseExpiresAt = "dead-submitter", now.Add(time.Second)
		next.Version++
		if err := transfer.ReplaceItem(context.Background(), h.store, rec, next); err != nil {
			t.Fatalf("take %s: %v", k, err)
		}
		taken = append(taken, next)
	}
	return taken
}

// forgedBatch enqueues keys, takes them under a lease owner that then dies (expiring in a
// second), and attaches one batch envelope to all of them as the submitter does (PutBatch, then
// one ReplaceAll): the state a submitter leaves when it dies after the attach.
func forgedBatch(t *testing.T, h *harness, keys ...string) (transfer.BatchEnvelope, []transfer.Record) {
	t.Helper()
	ctx := context.Background()
	now := h.clock.Now()
	var attached []transfer.Record
	taken := takenByDeadSubmitter(t, h, keys...)
	b := transfer.BatchEnvelope{Version: 1, CreatedAt: now}
	for _, rec := range taken {
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	h.ledger.mu.Lock()
	h.ledger.prepares++
	hash := fmt.Sprintf("%064x", 1<<50+h.ledger.prepares)
	h.ledger.mu.Unlock()
	b.Envelope = transfer.Envelope{XDR: "xdr-batch-" + hash, InnerHash: hash, MaxTime: now.Add(60 * time.Second).Unix(),
		SubmittedLedger: 100, Channel: "GCHANNEL", FeeStroops: 300}
	if err := h.store.PutBatch(ctx, b); err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	for i, rec := range taken {
		attached = append(attached, transfer.BatchAttached(rec, b.Envelope, transfer.BatchRef{Index: i, Size: len(taken)}, now))
	}
	if err := transfer.ReplaceAllItems(ctx, h.store, taken, attached); err != nil {
		t.Fatalf("attach: %v", err)
	}
	return b, attached
}

// sendToNetwork puts env in the fake network's queue, as a send whose answer was lost would.
func (l *fakeLedger) sendToNetwork(env transfer.Envelope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queued[env.InnerHash] = env
}

func (l *fakeLedger) sent(hash string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, h := range l.sends {
		if h == hash {
			n++
		}
	}
	return n
}

// A batch whose send's answer was lost and which landed: a synchronous retry of one key takes it
// over and re-sends the same batch envelope (never rebuilt) and answers its landing; the sweep's
// Settle then settles the other key from the same landing. One transaction landed.
func TestBatchLostAnswerLandedTakeOverResendsTheSameEnvelope(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, _ := forgedBatch(t, h, "batch-0001", "batch-0002")
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second) // the lease ends; a ledger closes with the batch in it
	prepares, _ := h.ledger.counts()
	out, err := h.orch.Transfer(ctx, input("batch-0002", "5"))
	if err != nil || out.TransactionHash != b.Envelope.InnerHash {
		t.Fatalf("retry of the second key: %+v, %v; want the batch's hash %s", out, err, b.Envelope.InnerHash)
	}
	if p, _ := h.ledger.counts(); p != prepares {
		t.Fatalf("the take-over built %d envelopes", p-prepares)
	}
	if n := h.ledger.sent(b.Envelope.InnerHash); n != 1 {
		t.Fatalf("the batch envelope was re-sent %d times by the take-over, want 1", n)
	}
	second := h.item(t, "batch-0002")
	if second.Status != transfer.StatusReplayable || second.Batch == nil || second.Batch.Index != 1 || second.Result.TransactionHash != b.Envelope.InnerHash {
		t.Fatalf("second key %+v (result %+v, batch %+v)", second, second.Result, second.Batch)
	}
	first := h.item(t, "batch-0001")
	if first.Status != transfer.StatusInFlight {
		t.Fatalf("the first key was written by another key's take-over: %s", first.Status)
	}
	s, err := h.orch.Settle(ctx, first)
	if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Result.TransactionHash != b.Envelope.InnerHash || s.Record.Batch.Index != 0 {
		t.Fatalf("Settle of the first key: %+v, %v", s, err)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}

// A batch in which one destination has no trustline: that key is a stored rejection naming the
// transaction and its operation; the other key is requeued (nothing moved) and its next run
// builds a new envelope.
func TestBatchWithoutTrustlineRejectsOnlyItsKey(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, _ := forgedBatch(t, h, "trust-0001", "trust-0002", "trust-0003")
	h.ledger.failResult = func(env transfer.Envelope) bool { return env.InnerHash == b.Envelope.InnerHash }
	h.ledger.failCodes = []string{"tx_failed", "op_success", "op_no_trust", "op_success"}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second)
	for i, k := range []string{"trust-0001", "trust-0002", "trust-0003"} {
		s, err := h.orch.Settle(ctx, h.item(t, k))
		if err != nil {
			t.Fatalf("Settle %s: %v", k, err)
		}
		rec := h.item(t, k)
		if i == 1 {
			if s.Resolution != transfer.ResolvedFailed || rec.Status != transfer.StatusRejected || rec.Result.TransactionHash != b.Envelope.InnerHash ||
				!slices.Equal(rec.Result.ResultCodes, []string{"tx_failed", "op_no_trust"}) || rec.Batch == nil || rec.Batch.Index != 1 {
				t.Fatalf("the key without a trustline: %s, %+v (result %+v)", s.Resolution, rec, rec.Result)
			}
			continue
		}
		if s.Resolution != transfer.ResolvedRequeued || rec.Status != transfer.StatusQueued || rec.Envelope != nil || rec.Batch != nil {
			t.Fatalf("the neighbour %s: %s, %+v", k, s.Resolution, rec)
		}
	}
	// The requeued key runs again alone, a new envelope.
	first := h.item(t, "trust-0001")
	h.ledger.failResult = nil
	if d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: first.StoreKey, ClaimID: first.ClaimID}); d != transfer.DeliveryDone || err != nil {
		t.Fatalf("the requeued key's run: %s, %v", d, err)
	}
	if rec := h.item(t, "trust-0001"); rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash == b.Envelope.InnerHash {
		t.Fatalf("requeued key after its run: %+v", rec)
	}
}

// A synchronous retry of a key inside an in-doubt batch settles it inline from the batch's
// landing, for its key alone.
func TestSyncRetryOfKeyInInDoubtBatch(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, items := forgedBatch(t, h, "doubt-0001", "doubt-0002")
	for _, rec := range items {
		if err := transfer.ReplaceItem(ctx, h.store, rec, transfer.InDoubtRecord(rec, transfer.CodeTimeout, h.clock.Now())); err != nil {
			t.Fatal(err)
		}
	}
	// Undecided: the retry is told in doubt, nothing written, nothing sent.
	if _, err := h.orch.Transfer(ctx, input("doubt-0001", "5")); problemCode(err) != transfer.CodeInDoubt {
		t.Fatalf("retry while the batch is pending: %v", err)
	}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second)
	out, err := h.orch.Transfer(ctx, input("doubt-0001", "5"))
	if err != nil || !out.Replayed || out.TransactionHash != b.Envelope.InnerHash {
		t.Fatalf("retry after the batch landed: %+v, %v", out, err)
	}
	if rec := h.item(t, "doubt-0001"); rec.Status != transfer.StatusReplayable || rec.Batch.Index != 0 {
		t.Fatalf("first key %+v", rec)
	}
	if rec := h.item(t, "doubt-0002"); rec.Status != transfer.StatusInDoubt {
		t.Fatalf("the other key was written by this retry: %s", rec.Status)
	}
	if n := h.ledger.sent(b.Envelope.InnerHash); n != 0 {
		t.Fatalf("inline reconciliation sent the batch %d times", n)
	}
}

// A batched key whose batch item names another key at its index is never judged.
func TestBatchedKeyNotInItsBatchIsNotJudged(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	forgedBatch(t, h, "mis-0001", "mis-0002")
	rec := h.item(t, "mis-0001")
	rec.Batch = &transfer.BatchRef{Index: 1, Size: 2}
	h.store.Put(rec)
	h.clock.Advance(6 * time.Second)
	if _, err := h.orch.Settle(ctx, h.item(t, "mis-0001")); !errors.Is(err, transfer.ErrBatchMismatch) {
		t.Fatalf("Settle of a key its batch does not hold: %v", err)
	}
}

func TestFeeShareSumsToTheFee(t *testing.T) {
	for _, c := range []struct {
		fee  int64
		size int
	}{{1010, 100}, {303, 2}, {7, 3}, {0, 5}, {500, 1}} {
		var sum int64
		for i := range c.size {
			sum += transfer.FeeShare(c.fee, i, c.size)
		}
		if sum != c.fee {
			t.Fatalf("shares of %d over %d sum to %d", c.fee, c.size, sum)
		}
	}
	if got := transfer.FeeShare(1010, 5, 100); got != 10 {
		t.Fatalf("operation 5's share of 1010 over 100 = %d, want 10", got)
	}
}
