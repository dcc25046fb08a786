package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type recordingQueue struct {
	mu   sync.Mutex
	sent []transfer.QueueMessage
	err  error
}

func (q *recordingQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.sent = append(q.sent, m)
	return q.err
}

// Enqueue's answer for each state of the key, and what it writes and sends.
func TestEnqueueAnswers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	q := &recordingQueue{}
	h.orch.Queue = q
	in := input("async-key-0001", "5")
	res, err := h.orch.Enqueue(ctx, in)
	if err != nil || !res.Accepted || res.View.Status != "pending" {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	rec := h.item(t, in.ClientKey)
	if rec.Status != transfer.StatusQueued || !rec.Async || rec.Version != 1 || rec.LeaseOwner != "" || len(q.sent) != 1 ||
		q.sent[0] != (transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}) {
		t.Fatalf("item %+v, sent %+v", rec, q.sent)
	}
	if _, err := h.orch.Enqueue(ctx, input(in.ClientKey, "6")); !errors.As(err, new(*transfer.ConflictError)) {
		t.Fatalf("another amount: %v, want a conflict", err)
	}
	if again, err := h.orch.Enqueue(ctx, in); err != nil || !again.Accepted || len(q.sent) != 1 {
		t.Fatalf("repeat: %+v, %v, %d sent", again, err, len(q.sent))
	}
	if _, err := h.orch.Transfer(ctx, input("sync-key-0001", "7")); err != nil {
		t.Fatal(err)
	}
	out, err := h.orch.Enqueue(ctx, input("sync-key-0001", "7"))
	if err != nil || out.Accepted || !out.Outcome.Replayed || out.Outcome.TransactionHash == "" {
		t.Fatalf("a settled synchronous key: %+v, %v, want its replay", out, err)
	}

	// A failed send is still accepted: the item is durable and the sweep sends it.
	q.err = errors.New("sqs down")
	if res, err := h.orch.Enqueue(ctx, input("async-key-0002", "5")); err != nil || !res.Accepted {
		t.Fatalf("enqueue with the queue down = %+v, %v", res, err)
	}
	if rec := h.item(t, "async-key-0002"); rec.Status != transfer.StatusQueued {
		t.Fatalf("item = %+v", rec)
	}
	// A store that fails the claim without having written it: 503, nothing sent.
	q.err = nil
	sent := len(q.sent)
	h.store.Fail(func(op string) error {
		if op == "claim" {
			return errors.New("dynamo down")
		}
		return nil
	})
	if _, err := h.orch.Enqueue(ctx, input("async-key-0003", "5")); problemCode(err) != transfer.CodeStoreUnavailable || len(q.sent) != sent {
		t.Fatalf("claim failed: %v, %d sent", err, len(q.sent)-sent)
	}
	h.store.Fail(nil)
	if _, err := h.orch.Enqueue(ctx, input("async-key-0003", "5")); err != nil {
		t.Fatal(err)
	}
	// Without a Queue, Enqueue refuses (the API then never offers it).
	h.orch.Queue = nil
	if _, err := h.orch.Enqueue(ctx, input("async-key-0004", "5")); err == nil {
		t.Fatal("Enqueue without a Queue succeeded")
	}
}

// RunQueued acts only on the item its message names.
func TestRunQueuedNamesTheItem(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	in := input("async-key-0005", "5")
	if _, err := h.orch.Enqueue(ctx, in); err != nil {
		t.Fatal(err)
	}
	rec := h.item(t, in.ClientKey)
	for _, m := range []transfer.QueueMessage{
		{},
		{StoreKey: rec.StoreKey},
		{StoreKey: rec.StoreKey, ClaimID: "another-claim"},
		{StoreKey: transfer.StoreKey(wallet, "async-key-none"), ClaimID: rec.ClaimID},
	} {
		if d, _ := h.orch.RunQueued(ctx, m); d != transfer.DeliveryStale {
			t.Errorf("RunQueued(%+v) = %s, want stale", m, d)
		}
	}
	if got := h.item(t, in.ClientKey); got.Version != 1 || got.Status != transfer.StatusQueued {
		t.Fatalf("the item moved: %+v", got)
	}
	if prepares, _ := h.ledger.counts(); prepares != 0 {
		t.Fatalf("%d envelopes built for stale messages", prepares)
	}
	// A synchronous item is never run by a message, even one naming its claim.
	if _, err := h.orch.Transfer(ctx, input("sync-key-0002", "7")); err != nil {
		t.Fatal(err)
	}
	sync := h.item(t, "sync-key-0002")
	if d, _ := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: sync.StoreKey, ClaimID: sync.ClaimID}); d != transfer.DeliveryStale {
		t.Fatalf("a message naming a synchronous item: %s", d)
	}
	d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	if err != nil || d != transfer.DeliveryDone || h.item(t, in.ClientKey).Status != transfer.StatusReplayable || h.ledger.landedCount() != 2 {
		t.Fatalf("the right message: %s, %v, item %+v, %d landed", d, err, h.item(t, in.ClientKey), h.ledger.landedCount())
	}
}

// RetryAfter reads the problem's RetryAfter, wrapped or not, and falls back to one ledger interval
// for a requeue with no error or a problem that sets none.
func TestRetryAfter(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want time.Duration
	}{
		{"requeued, no error", nil, transfer.DefaultLedgerInterval},
		{"channels busy", &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 3 * time.Second}, 3 * time.Second},
		{"circuit open, wrapped", fmt.Errorf("run: %w", &transfer.UnavailableError{Code: transfer.CodeCircuitOpen, RetryAfter: 42 * time.Second}), 42 * time.Second},
		{"store unavailable, none set", &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable}, transfer.DefaultLedgerInterval},
		{"not a problem", errors.New("killed"), transfer.DefaultLedgerInterval},
		{"negative", &transfer.InProgressError{RetryAfter: -time.Second}, transfer.DefaultLedgerInterval},
	} {
		if got := transfer.RetryAfter(c.err); got != c.want {
			t.Errorf("%s: RetryAfter = %v, want %v", c.name, got, c.want)
		}
	}
}
