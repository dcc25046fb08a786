package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

var ops = transfer.Canceller{Caller: "arn:aws:iam::123456789012:user/ops", RequestID: "req-cancel-1"}

// enqueued is h with a Queue and the key enqueued: its queued item.
func enqueued(t *testing.T, h *harness, key string) transfer.Record {
	t.Helper()
	if h.orch.Queue == nil {
		h.orch.Queue = &recordingQueue{}
	}
	if res, err := h.orch.Enqueue(context.Background(), input(key, "5")); err != nil || !res.Accepted {
		t.Fatalf("enqueue %s: %+v, %v", key, res, err)
	}
	return h.item(t, key)
}

// notCancellableState is err's State when it is a *NotCancellableError, else "".
func notCancellableState(err error) string {
	var nc *transfer.NotCancellableError
	if errors.As(err, &nc) {
		return nc.State
	}
	return ""
}

// What Cancel answers in each state of the key, what it writes, and what every later call with
// the key answers.
func TestCancelAnswers(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	if _, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "cancel-none", ops); !errors.As(err, new(*transfer.NotFoundError)) {
		t.Fatalf("unknown key: %v, want not found", err)
	}
	queued := enqueued(t, h, "cancel-0001")
	h.clock.Advance(3 * time.Second)
	at := h.clock.Now()
	got, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "cancel-0001", ops)
	if err != nil || got.Replayed || got.View.Status != "cancelled" || !got.View.CancelledAt.Equal(at) || got.View.CancelledBy != ops.Caller {
		t.Fatalf("cancel: %+v, %v", got, err)
	}
	rec := h.item(t, "cancel-0001")
	want := transfer.Cancelled(queued, ops, at, transfer.DefaultSettings().KeyTTL)
	if rec.Status != transfer.StatusCancelled || rec.Version != queued.Version+1 || rec.ClaimID != queued.ClaimID ||
		rec.Envelope != nil || rec.LeaseOwner != "" || rec.ExpiresAt != want.ExpiresAt || rec.Audit == nil ||
		rec.Audit.Action != transfer.AuditCancel || rec.Audit.Operator != ops.Caller || rec.Audit.RequestID != ops.RequestID ||
		!rec.Audit.At.Equal(at) {
		t.Fatalf("cancelled item %+v (audit %+v)", rec, rec.Audit)
	}
	// Again, by anyone: the same cancellation, replayed, nothing written.
	writes := h.store.Writes()
	again, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "cancel-0001", transfer.Canceller{})
	if err != nil || !again.Replayed || again.View.CancelledBy != ops.Caller || h.store.Writes() != writes {
		t.Fatalf("cancel again: %+v, %v, %d writes", again, err, h.store.Writes()-writes)
	}
	// The same request with the key: the cancellation, replayed, async and sync alike; another
	// request: a conflict.
	for name, call := range map[string]func() error{
		"async": func() error { _, err := h.orch.Enqueue(ctx, input("cancel-0001", "5")); return err },
		"sync":  func() error { _, err := h.orch.Transfer(ctx, input("cancel-0001", "5")); return err },
	} {
		err := call()
		var ce *transfer.CancelledError
		if !errors.As(err, &ce) || !ce.Problem().Replayed || !ce.CancelledAt.Equal(at) || ce.Problem().Kind != transfer.KindConflict {
			t.Errorf("%s POST of the cancelled key: %v, want TRANSFER_CANCELLED replayed", name, err)
		}
	}
	if _, err := h.orch.Enqueue(ctx, input("cancel-0001", "6")); !errors.As(err, new(*transfer.ConflictError)) {
		t.Errorf("another body: %v, want IDEMPOTENCY_KEY_CONFLICT", err)
	}
	// Its message, delivered now: nothing taken, built or sent; acknowledged.
	d, err := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: queued.StoreKey, ClaimID: queued.ClaimID})
	if prepares, sends := h.ledger.counts(); d != transfer.DeliveryStale || err != nil || prepares != 0 || sends != 0 {
		t.Fatalf("the cancelled item's message: %s, %v, %d prepares, %d sends", d, err, prepares, sends)
	}
	if v, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "cancel-0001"); err != nil || v.Status != "cancelled" || v.CancelledBy != ops.Caller {
		t.Fatalf("view: %+v, %v", v, err)
	}
	if after := h.item(t, "cancel-0001"); after.Version != rec.Version || after.Status != transfer.StatusCancelled {
		t.Fatalf("item after the message and the POSTs: %+v", after)
	}

	// Past queued: 409 with the state.
	if _, err := h.orch.Transfer(ctx, input("cancel-settled", "7")); err != nil {
		t.Fatal(err)
	}
	_, err = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "cancel-settled", ops)
	var nc *transfer.NotCancellableError
	if !errors.As(err, &nc) || nc.State != "success" || nc.TransactionHash == "" || nc.Problem().Kind != transfer.KindConflict {
		t.Fatalf("cancel of a settled transfer: %v", err)
	}
	for st, want := range map[transfer.Status]string{transfer.StatusInFlight: "in_flight", transfer.StatusInDoubt: "in_doubt", transfer.StatusRejected: "error"} {
		key := "cancel-" + string(st)
		r := queued
		r.StoreKey, r.ClientKey, r.Status, r.LeaseOwner = transfer.StoreKey(wallet, key), key, st, "someone"
		h.store.Put(r)
		if _, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, key, ops); notCancellableState(err) != want {
			t.Errorf("cancel of a %s item: %v, want state %s", st, err, want)
		}
		if got := h.item(t, key); got.Status != st {
			t.Errorf("the %s item moved to %s", st, got.Status)
		}
	}

	// After the replay window the key is free: 404, and the same request is a new transfer.
	h.clock.Advance(transfer.DefaultSettings().KeyTTL + time.Hour)
	if _, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "cancel-0001", ops); !errors.As(err, new(*transfer.NotFoundError)) {
		t.Fatalf("after the window: %v, want not found", err)
	}
	if res, err := h.orch.Enqueue(ctx, input("cancel-0001", "5")); err != nil || !res.Accepted {
		t.Fatalf("after the window: %+v, %v, want accepted afresh", res, err)
	}
}

// takeRace runs the submitter's message for key and a cancel of it, the second interleaved at
// the first's conditional write (its first "replace"): first runs up to its write, second runs
// whole, then first's write meets what second left.
func takeRace(t *testing.T, h *harness, first string, key string) (cancelled transfer.Cancellation, cancelErr error, d transfer.Delivery) {
	t.Helper()
	ctx := context.Background()
	rec := h.item(t, key)
	msg := transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}
	var fired atomic.Bool
	interleave := func(second func()) {
		h.store.Fail(func(op string) error {
			if op == "replace" && fired.CompareAndSwap(false, true) {
				second()
			}
			return nil
		})
	}
	switch first {
	case "submitter":
		interleave(func() { cancelled, cancelErr = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, key, ops) })
		d, _ = h.orch.RunQueued(ctx, msg)
	case "cancel":
		interleave(func() { d, _ = h.orch.RunQueued(ctx, msg) })
		cancelled, cancelErr = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, key, ops)
	}
	h.store.Fail(nil)
	if !fired.Load() {
		t.Fatalf("%s first: the interleaving never happened", first)
	}
	return cancelled, cancelErr, d
}

// The cancel's conditional write and the submitter's take, interleaved both ways at the write:
// exactly one wins, and nothing is ever built or sent for a cancelled item.
func TestCancelRacesTheTake(t *testing.T) {
	t.Run("the cancel writes between the submitter's read and its take", func(t *testing.T) {
		h := newHarness(t)
		enqueued(t, h, "race-0001")
		c, err, d := takeRace(t, h, "submitter", "race-0001")
		prepares, sends := h.ledger.counts()
		if err != nil || c.Replayed || c.View.Status != "cancelled" || d != transfer.DeliveryStale || prepares != 0 || sends != 0 {
			t.Fatalf("cancel %+v, %v; delivery %s; %d prepares, %d sends: want the cancel to win and nothing built", c, err, d, prepares, sends)
		}
		if rec := h.item(t, "race-0001"); rec.Status != transfer.StatusCancelled || rec.LeaseOwner != "" || rec.Envelope != nil {
			t.Fatalf("item %+v", rec)
		}
	})
	t.Run("the submitter takes and settles between the cancel's read and its write", func(t *testing.T) {
		h := newHarness(t)
		enqueued(t, h, "race-0002")
		c, err, d := takeRace(t, h, "cancel", "race-0002")
		if notCancellableState(err) != "success" || c.View.Status != "" || d != transfer.DeliveryDone || h.ledger.landedCount() != 1 {
			t.Fatalf("cancel %+v, %v; delivery %s; %d landed: want the take to win and the cancel 409 success", c, err, d, h.ledger.landedCount())
		}
		if rec := h.item(t, "race-0002"); rec.Status != transfer.StatusReplayable || rec.Audit != nil {
			t.Fatalf("item %+v", rec)
		}
	})
	t.Run("the submitter takes between the cancel's read and its write, and is still sending", func(t *testing.T) {
		h := newHarness(t)
		rec := enqueued(t, h, "race-0003")
		taken := rec
		taken.Status, taken.LeaseOwner, taken.LeaseExpiresAt = transfer.StatusInFlight, "submitter-1", h.clock.Now().Add(time.Minute)
		taken.Version++
		var fired atomic.Bool
		h.store.Fail(func(op string) error {
			if op == "replace" && fired.CompareAndSwap(false, true) {
				if err := h.store.Replace(context.Background(), taken, transfer.Expect(rec)); err != nil {
					t.Errorf("take: %v", err)
				}
			}
			return nil
		})
		_, err := h.orch.Cancel(context.Background(), transfer.Wallet{Address: wallet}, "race-0003", ops)
		h.store.Fail(nil)
		if notCancellableState(err) != "in_flight" {
			t.Fatalf("cancel: %v, want 409 in_flight", err)
		}
		if got := h.item(t, "race-0003"); got.Status != transfer.StatusInFlight || got.LeaseOwner != "submitter-1" || got.Audit != nil {
			t.Fatalf("item %+v", got)
		}
	})
}

// lostAnswerStore applies a write of the status lose, once, and then answers it as the SDK would
// after losing its answer: its retry failed the condition against the item the write itself left
// (transit false), or every retry failed in transit (transit true); the read back that follows
// fails when getFail is set.
type lostAnswerStore struct {
	*transfertest.Store
	mu      sync.Mutex
	lose    transfer.Status
	transit bool
	getFail bool
	failGet bool
}

func (s *lostAnswerStore) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	if err := s.Store.Replace(ctx, next, cond); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if next.Status != s.lose {
		return nil
	}
	s.lose = ""
	s.failGet = s.getFail
	if s.transit {
		return errors.New("request timed out after 3 attempts")
	}
	return fmt.Errorf("retried after a timeout: %w", s.Store.Replace(ctx, next, cond)) // ErrConditionFailed: the item moved on
}

func (s *lostAnswerStore) Get(ctx context.Context, key string) (transfer.Record, error) {
	s.mu.Lock()
	fail := s.failGet
	s.failGet = false
	s.mu.Unlock()
	if fail {
		return transfer.Record{}, errors.New("read timed out")
	}
	return s.Store.Get(ctx, key)
}

// A cancel whose write applied and whose answer was lost answers the cancellation, never 409. If
// the store failed in transit and even its read back fails, the answer says it may have applied
// (503, retryable), and a DELETE again answers the cancellation. The submitter's message then
// does nothing.
func TestCancelLostAnswer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		transit, readFails, unknown bool
	}{{false, false, false}, {false, true, false}, {true, false, false}, {true, true, true}} {
		t.Run(fmt.Sprintf("in transit %v, read back fails %v", c.transit, c.readFails), func(t *testing.T) {
			h := newHarness(t)
			rec := enqueued(t, h, "lost-0001")
			s := &lostAnswerStore{Store: h.store, lose: transfer.StatusCancelled, transit: c.transit, getFail: c.readFails}
			h.orch.Store = s
			h.clock.Advance(1_234_567 * time.Nanosecond) // the store keeps milliseconds: the read back still names this call's write
			got, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "lost-0001", ops)
			switch {
			case !c.unknown && (err != nil || got.View.Status != "cancelled" || got.Replayed || got.View.CancelledBy != ops.Caller):
				t.Fatalf("lost answer: %+v, %v, want this call's cancellation", got, err)
			case c.unknown && problemCode(err) != transfer.CodeStoreUnavailable:
				t.Fatalf("lost answer, read back failed: %v, want STORE_UNAVAILABLE", err)
			}
			if notCancellableState(err) != "" {
				t.Fatalf("a cancel that applied answered 409: %v", err)
			}
			retry, err := h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "lost-0001", ops)
			if err != nil || retry.View.Status != "cancelled" || !retry.Replayed || retry.View.CancelledBy != ops.Caller {
				t.Fatalf("the retry: %+v, %v, want the cancellation", retry, err)
			}
			d, _ := h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
			if prepares, sends := h.ledger.counts(); d != transfer.DeliveryStale || prepares != 0 || sends != 0 {
				t.Fatalf("the message after the cancel: %s, %d prepares, %d sends", d, prepares, sends)
			}
		})
	}
}

// Cancels and submitters on one queued item each, run concurrently: exactly one of each pair
// wins, and a cancelled item never has an envelope, a lease or a send.
func TestCancelAndTakeConcurrently(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	const n = 40
	recs := make([]transfer.Record, n)
	for i := range n {
		recs[i] = enqueued(t, h, fmt.Sprintf("conc-%04d", i))
	}
	type result struct {
		c   transfer.Cancellation
		err error
		d   transfer.Delivery
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i, rec := range recs {
		wg.Go(func() {
			results[i].c, results[i].err = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, rec.ClientKey, ops)
		})
		wg.Go(func() {
			results[i].d, _ = h.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
		})
	}
	wg.Wait()
	cancels := 0
	for i, rec := range recs {
		got := h.item(t, rec.ClientKey)
		r := results[i]
		switch {
		case r.err == nil:
			cancels++
			if got.Status != transfer.StatusCancelled || got.Envelope != nil || got.LeaseOwner != "" || r.d != transfer.DeliveryStale {
				t.Errorf("%s: the cancel won but the item is %+v and the message %s", rec.ClientKey, got, r.d)
			}
		case notCancellableState(r.err) != "":
			if got.Status == transfer.StatusCancelled || got.Audit != nil {
				t.Errorf("%s: the cancel lost (%v) but the item is %+v", rec.ClientKey, r.err, got)
			}
		default:
			t.Errorf("%s: cancel: %v", rec.ClientKey, r.err)
		}
	}
	if landed := h.ledger.landedCount(); landed != n-cancels {
		t.Fatalf("%d landed for %d transfers not cancelled (%d cancelled)", landed, n-cancels, cancels)
	}
	t.Logf("%d of %d cancelled", cancels, n)
}
