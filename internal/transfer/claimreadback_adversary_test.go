package transfer_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// Adversarial tests of a failed claim's read-back: what a client is told when the claim's
// conditional write fails, and that nothing is paid twice or lost whatever the read-back meets.

// storeThrottled makes the listed operations fail without writing anything, as DynamoDB does
// once the SDK's retries give up on a throttled table.
func storeThrottled(h *harness, ops ...string) {
	h.store.Fail(func(op string) error {
		for _, o := range ops {
			if op == o {
				return errors.New("ProvisionedThroughputExceededException: throttled")
			}
		}
		return nil
	})
}

// saysNothingSubmitted reports whether err tells the client that nothing was submitted.
func saysNothingSubmitted(err error) bool {
	var u *transfer.UnavailableError
	return errors.As(err, &u) && strings.Contains(u.Detail, "nothing was submitted")
}

// TestFailedClaimNeverSaysNothingWasSubmittedWhenTheKeyCouldNotBeRead. Rule (README, problem
// STORE_UNAVAILABLE): "nothing was submitted" only when the key was read back free. A claim that
// fails while its read-back fails too knows nothing of the key: the key may hold this request's
// landed transfer (its 200 lost), or its accepted async transfer that runs and pays. A synchronous
// retry that is told "nothing was submitted" there tells the client something false, and a client
// that trusts it and pays another way pays twice.
func TestFailedClaimNeverSaysNothingWasSubmittedWhenTheKeyCouldNotBeRead(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, h *harness)
	}{
		{name: "landed", setup: func(t *testing.T, h *harness) {
			if _, err := h.orch.Transfer(context.Background(), input("order-rb2", "5")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "accepted async", setup: func(t *testing.T, h *harness) {
			if res, err := h.orch.Enqueue(context.Background(), input("order-rb2", "5")); err != nil || !res.Accepted {
				t.Fatalf("setup: %+v, %v", res, err)
			}
		}},
		{name: "in doubt", setup: func(t *testing.T, h *harness) {
			h.ledger.noClose = true
			h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
				return transfer.SendResult{Status: transfer.SendPending}, true, nil
			}
			if _, err := h.orch.Transfer(context.Background(), input("order-rb2", "5")); problemCode(err) != transfer.CodeInDoubt {
				t.Fatalf("setup: %v, want in doubt", err)
			}
		}},
	} {
		for _, mode := range []string{"sync", "async"} {
			t.Run(c.name+"/"+mode, func(t *testing.T) {
				h := newHarness(t)
				h.orch.Queue = &recordingQueue{}
				c.setup(t, h)
				storeThrottled(h, "claim", "get")
				var err error
				if mode == "sync" {
					_, err = h.orch.Transfer(context.Background(), input("order-rb2", "5"))
				} else {
					_, err = h.orch.Enqueue(context.Background(), input("order-rb2", "5"))
				}
				if problemCode(err) != transfer.CodeStoreUnavailable || saysNothingSubmitted(err) {
					t.Fatalf("claim and read-back failed with the key holding a %s transfer of this request: %v; "+
						"want STORE_UNAVAILABLE that does not say nothing was submitted", c.name, err)
				}
			})
		}
	}
}

// answerLostStore applies a claim and then fails it, as a PutItem whose answer is lost and whose
// SDK retries are all refused (throttled) does; afterClaim, when set, runs between the write and
// the error (another caller acting on the key meanwhile).
type answerLostStore struct {
	*transfertest.Store
	mu         sync.Mutex
	lose       int // claims to apply and then fail
	afterClaim func()
}

func (s *answerLostStore) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	held, won, err := s.Store.Claim(ctx, rec, now)
	s.mu.Lock()
	lose := s.lose > 0 && err == nil
	if lose {
		s.lose--
	}
	after := s.afterClaim
	s.mu.Unlock()
	if !lose {
		return held, won, err
	}
	if after != nil {
		after()
	}
	return transfer.Record{}, false, errors.New("PutItem: connection reset; retries throttled")
}

// TestClaimThatAppliedWithItsAnswerLostRunsOnceAndAnswersTheTruth. Rule: a claim whose write
// applied and whose answer was lost is this call's own: the read-back finds its ClaimID and the
// call carries on (sync: one payment, a fresh 200; async: one message, a 202), never waiting on
// itself nor telling the client nothing was submitted.
func TestClaimThatAppliedWithItsAnswerLostRunsOnceAndAnswersTheTruth(t *testing.T) {
	t.Run("sync", func(t *testing.T) {
		h := newHarness(t)
		s := &answerLostStore{Store: h.store, lose: 1}
		h.orch.Store = s
		out, err := h.orch.Transfer(context.Background(), input("order-lost", "5"))
		if err != nil || out.Replayed || out.TransactionHash == "" {
			t.Fatalf("transfer = %+v, %v; want this call's fresh 200", out, err)
		}
		if n := h.ledger.landedCount(); n != 1 {
			t.Fatalf("%d transactions landed, want 1", n)
		}
	})
	t.Run("async", func(t *testing.T) {
		h := newHarness(t)
		q := &recordingQueue{}
		h.orch.Queue = q
		s := &answerLostStore{Store: h.store, lose: 1}
		h.orch.Store = s
		res, err := h.orch.Enqueue(context.Background(), input("order-lost", "5"))
		if err != nil || !res.Accepted {
			t.Fatalf("enqueue = %+v, %v; want 202", res, err)
		}
		if len(q.sent) != 1 || q.sent[0].ClaimID != h.item(t, "order-lost").ClaimID {
			t.Fatalf("messages %+v; want one naming the item", q.sent)
		}
	})
}

// TestFailedClaimOfACoalescingCallerNeverBuildsWhileAnAsyncTransferIsQueued. Rule: a synchronous
// retry whose claims keep failing and which reads back the accepted async transfer of the same
// request waits on it (coalesce) and, if it does not settle in time, answers
// TRANSFER_IN_PROGRESS: never a payment of its own, never "nothing was submitted".
func TestFailedClaimOfACoalescingCallerNeverBuildsWhileAnAsyncTransferIsQueued(t *testing.T) {
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	if res, err := h.orch.Enqueue(context.Background(), input("order-co", "5")); err != nil || !res.Accepted {
		t.Fatalf("setup: %+v, %v", res, err)
	}
	storeThrottled(h, "claim")
	_, err := h.orch.Transfer(context.Background(), input("order-co", "5"))
	if problemCode(err) != transfer.CodeInProgress {
		t.Fatalf("sync retry = %v, want TRANSFER_IN_PROGRESS", err)
	}
	if p, _ := h.ledger.counts(); p != 0 {
		t.Fatalf("%d envelope(s) built while the async transfer is queued", p)
	}
	if rec := h.item(t, "order-co"); rec.Status != transfer.StatusQueued || !rec.Async {
		t.Fatalf("item = %+v, want the async transfer still queued", rec)
	}
}

// TestFailedClaimAfterAReleaseAndReclaimAnswersTheNewHolder. Rule: the read-back is answered as it
// stands. The key is held by another call of the same request when the claim is sent; it is
// released and claimed by a different request before the read-back: the answer is a conflict
// (the key now holds another request), never a payment and never "nothing was submitted".
func TestFailedClaimAfterAReleaseAndReclaimAnswersTheNewHolder(t *testing.T) {
	h := newHarness(t)
	in := input("order-race", "5")
	other := input("order-race", "6")
	key := transfer.StoreKey(wallet, in.ClientKey)
	now := h.clock.Now()
	h.store.Put(transfer.Record{
		StoreKey: key, ClaimID: "holder", Status: transfer.StatusInFlight, Fingerprint: in.Request.Fingerprint(),
		Request: in.Request, ClientKey: in.ClientKey, LeaseOwner: "holder-invocation", LeaseExpiresAt: now.Add(time.Minute),
		Version: 1, CreatedAt: now, UpdatedAt: now,
	})
	h.store.Fail(func(op string) error {
		if op != "claim" {
			return nil
		}
		// Just before the claim's write, which then fails: the holder releases and another
		// request claims before the read-back.
		h.store.Remove(key)
		h.store.Put(transfer.Record{
			StoreKey: key, ClaimID: "newcomer", Status: transfer.StatusInFlight, Fingerprint: other.Request.Fingerprint(),
			Request: other.Request, ClientKey: other.ClientKey, LeaseOwner: "newcomer-invocation", LeaseExpiresAt: now.Add(time.Minute),
			Version: 1, CreatedAt: now, UpdatedAt: now,
		})
		return errors.New("throttled")
	})
	_, err := h.orch.Transfer(context.Background(), in)
	if problemCode(err) != transfer.CodeKeyConflict {
		t.Fatalf("%v, want IDEMPOTENCY_KEY_CONFLICT", err)
	}
	if p, _ := h.ledger.counts(); p != 0 {
		t.Fatalf("%d envelope(s) built", p)
	}
}

// TestFailedClaimOverAnExpiredSettledItemOfThisRequestIsANewTransfer. Rule: past its replay window
// the same key is a new transfer (README, idempotency window); a failed claim that reads back the
// expired item of the same request answers STORE_UNAVAILABLE "nothing was submitted" (the new
// transfer was not), never the stale replay, and the next call, its claim answered, pays again.
func TestFailedClaimOverAnExpiredSettledItemOfThisRequestIsANewTransfer(t *testing.T) {
	h := newHarness(t)
	first, err := h.orch.Transfer(context.Background(), input("order-exp", "5"))
	if err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(48 * time.Hour)
	storeThrottled(h, "claim")
	out, err := h.orch.Transfer(context.Background(), input("order-exp", "5"))
	if !saysNothingSubmitted(err) || out.TransactionHash != "" {
		t.Fatalf("%+v, %v; want STORE_UNAVAILABLE saying nothing was submitted, not the expired replay", out, err)
	}
	h.store.Fail(nil)
	again, err := h.orch.Transfer(context.Background(), input("order-exp", "5"))
	if err != nil || again.Replayed || again.TransactionHash == first.TransactionHash {
		t.Fatalf("%+v, %v; want a new transfer", again, err)
	}
}

// TestFailedClaimReleasesOwnLeftoverAndNeverWaitsOnItself. Rule: the read-back of this call's own
// leftover (an envelope proven dead whose release failed) is released again, not waited on; the
// call then builds a new envelope once its claim is answered, and pays once.
func TestFailedClaimReleasesOwnLeftoverAndNeverWaitsOnItself(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	deletes, claims := 0, 0
	h.store.Fail(func(op string) error {
		mu.Lock()
		defer mu.Unlock()
		switch op {
		case "delete":
			deletes++
			if deletes == 1 {
				return errors.New("throttled release")
			}
		case "claim":
			claims++
			if claims == 2 {
				return errors.New("throttled claim")
			}
		}
		return nil
	})
	// The first send is refused before inclusion (txBAD_SEQ): proven dead, released (fails).
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			return transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ"}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	out, err := h.orch.Transfer(context.Background(), input("order-left", "5"))
	// The second pass's claim failed and read back the leftover: released again, then the third
	// pass claims and pays.
	if err != nil || out.TransactionHash == "" {
		t.Fatalf("transfer = %+v, %v; want a 200 after releasing its own leftover", out, err)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d landed, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if p, _ := h.ledger.counts(); claims < 3 || deletes != 2 || p != 2 {
		t.Fatalf("claims %d, deletes %d, envelopes %d: the test needs a failed claim that read back the leftover and released it again", claims, deletes, p)
	}
}
