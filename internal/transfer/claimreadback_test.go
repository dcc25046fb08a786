package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A claim whose conditional write fails (throttled, nothing written) reads the key back; what it
// reads decides the answer, exactly as a claim that lost its condition would be answered. 503
// STORE_UNAVAILABLE "nothing was submitted" is true only when the key is free.

// claimThrottled makes every claim fail without writing anything, as a throttled PutItem does.
func claimThrottled(h *harness) {
	h.store.Fail(func(op string) error {
		if op == "claim" {
			return errors.New("ProvisionedThroughputExceededException: throttled")
		}
		return nil
	})
}

// answer is what a client is told, reduced to what must agree between the two paths.
type answer struct {
	code     string // problem code, "" for a 200
	hash     string
	replayed bool
	accepted bool
}

func syncAnswer(out transfer.Outcome, err error) answer {
	if err != nil {
		a := answer{code: problemCode(err)}
		var p transfer.ProblemError
		if errors.As(err, &p) {
			a.replayed = p.Problem().Replayed
		}
		return a
	}
	return answer{hash: out.TransactionHash, replayed: out.Replayed}
}

func asyncAnswer(res transfer.Enqueued, err error) answer {
	if err != nil {
		return syncAnswer(transfer.Outcome{}, err)
	}
	return answer{hash: res.Outcome.TransactionHash, replayed: res.Outcome.Replayed, accepted: res.Accepted}
}

// keyStates are the items a failed claim can read back, each set up on a fresh harness under
// key "order-rb" for the request input("order-rb", "5").
var keyStates = []struct {
	name  string
	setup func(t *testing.T, h *harness)
	// sync and async: the answer either path must give (the same as a claim that lost its
	// condition); hash "*" means any non-empty hash.
	sync, async answer
}{
	{
		name: "replayable",
		setup: func(t *testing.T, h *harness) {
			if _, err := h.orch.Transfer(context.Background(), input("order-rb", "5")); err != nil {
				t.Fatal(err)
			}
		},
		sync:  answer{hash: "*", replayed: true},
		async: answer{hash: "*", replayed: true},
	},
	{
		name: "rejected",
		setup: func(t *testing.T, h *harness) {
			h.ledger.failResult = func(transfer.Envelope) bool { return true }
			if _, err := h.orch.Transfer(context.Background(), input("order-rb", "5")); problemCode(err) == "" {
				t.Fatal("want a rejection")
			}
			h.ledger.failResult = nil
		},
		sync:  answer{code: "*rejected", replayed: true},
		async: answer{code: "*rejected", replayed: true},
	},
	{
		name: "another request",
		setup: func(t *testing.T, h *harness) {
			if _, err := h.orch.Transfer(context.Background(), input("order-rb", "6")); err != nil {
				t.Fatal(err)
			}
		},
		sync:  answer{code: transfer.CodeKeyConflict},
		async: answer{code: transfer.CodeKeyConflict},
	},
	{
		name: "in doubt",
		setup: func(t *testing.T, h *harness) {
			h.ledger.noClose = true
			h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
				return transfer.SendResult{}, false, errors.New("timeout after write")
			}
			if _, err := h.orch.Transfer(context.Background(), input("order-rb", "5")); problemCode(err) != transfer.CodeInDoubt {
				t.Fatalf("setup: %v, want in doubt", err)
			}
		},
		sync:  answer{code: transfer.CodeInDoubt},
		async: answer{code: transfer.CodeInDoubt},
	},
	{
		name: "accepted async",
		setup: func(t *testing.T, h *harness) {
			if res, err := h.orch.Enqueue(context.Background(), input("order-rb", "5")); err != nil || !res.Accepted {
				t.Fatalf("setup: %+v, %v", res, err)
			}
		},
		async: answer{accepted: true},
	},
	{
		name: "live synchronous claim",
		setup: func(t *testing.T, h *harness) {
			in := input("order-rb", "5")
			now := h.clock.Now()
			h.store.Put(transfer.Record{
				StoreKey: transfer.StoreKey(wallet, in.ClientKey), ClaimID: "someone-else", Status: transfer.StatusInFlight,
				Fingerprint: in.Request.Fingerprint(), Request: in.Request, ClientKey: in.ClientKey,
				LeaseOwner: "another-invocation", LeaseExpiresAt: now.Add(time.Hour), Version: 1, CreatedAt: now, UpdatedAt: now,
			})
		},
		async: answer{code: transfer.CodeInProgress},
	},
}

func (a answer) matches(want answer) bool {
	switch {
	case want.hash == "*":
		return a.code == "" && a.hash != "" && a.replayed == want.replayed && !a.accepted
	case want.code == "*rejected":
		return a.code != "" && a.code != transfer.CodeStoreUnavailable && a.code != transfer.CodeKeyConflict &&
			a.code != transfer.CodeInDoubt && a.code != transfer.CodeInProgress && a.replayed == want.replayed
	}
	return a == want
}

func TestFailedClaimAnswersWhatTheKeyHoldsSync(t *testing.T) {
	for _, st := range keyStates {
		if st.sync == (answer{}) {
			continue
		}
		t.Run(st.name, func(t *testing.T) {
			// The reference: the same call with a claim that lost its condition.
			ref := newHarness(t)
			st.setup(t, ref)
			want := syncAnswer(ref.orch.Transfer(context.Background(), input("order-rb", "5")))

			h := newHarness(t)
			st.setup(t, h)
			claimThrottled(h)
			got := syncAnswer(h.orch.Transfer(context.Background(), input("order-rb", "5")))
			if !got.matches(st.sync) || got != want {
				t.Fatalf("throttled claim answered %+v; a lost claim answers %+v; want %+v", got, want, st.sync)
			}
		})
	}
}

func TestFailedClaimAnswersWhatTheKeyHoldsAsync(t *testing.T) {
	for _, st := range keyStates {
		t.Run(st.name, func(t *testing.T) {
			ref := newHarness(t)
			ref.orch.Queue = &recordingQueue{}
			st.setup(t, ref)
			want := asyncAnswer(ref.orch.Enqueue(context.Background(), input("order-rb", "5")))

			h := newHarness(t)
			q := &recordingQueue{}
			h.orch.Queue = q
			st.setup(t, h)
			sent := len(q.sent)
			claimThrottled(h)
			got := asyncAnswer(h.orch.Enqueue(context.Background(), input("order-rb", "5")))
			if !got.matches(st.async) || got != want {
				t.Fatalf("throttled claim answered %+v; a lost claim answers %+v; want %+v", got, want, st.async)
			}
			if len(q.sent) != sent {
				t.Fatalf("%d message(s) sent for a claim that did not apply", len(q.sent)-sent)
			}
		})
	}
}

// Only a free key (or one holding only an expired settled item, which the claim would have
// replaced) is answered STORE_UNAVAILABLE "nothing was submitted", and then nothing was.
func TestFailedClaimOnAFreeKeySaysNothingWasSubmitted(t *testing.T) {
	for _, expired := range []bool{false, true} {
		h := newHarness(t)
		h.orch.Queue = &recordingQueue{}
		if expired {
			if _, err := h.orch.Transfer(context.Background(), input("order-rb", "6")); err != nil {
				t.Fatal(err)
			}
			h.clock.Advance(48 * time.Hour) // past the replay window
		}
		claimThrottled(h)
		prepares, _ := h.ledger.counts()
		for _, call := range []func() error{
			func() error { _, err := h.orch.Transfer(context.Background(), input("order-rb", "5")); return err },
			func() error { _, err := h.orch.Enqueue(context.Background(), input("order-rb", "5")); return err },
		} {
			err := call()
			var u *transfer.UnavailableError
			if !errors.As(err, &u) || u.Code != transfer.CodeStoreUnavailable || !strings.Contains(u.Detail, "nothing was submitted") {
				t.Fatalf("expired=%v: %v, want STORE_UNAVAILABLE saying nothing was submitted", expired, err)
			}
		}
		if p, _ := h.ledger.counts(); p != prepares {
			t.Fatalf("expired=%v: %d envelope(s) built without a claim", expired, p-prepares)
		}
	}
}

// A take-over of an expired lease whose item holds an envelope (its invocation died after
// attaching it, so it may land) that cannot be written is STORE_UNAVAILABLE, but never "nothing
// was submitted": the envelope may be on the network.
func TestFailedTakeOverOfAnEnvelopeNeverSaysNothingWasSubmitted(t *testing.T) {
	h := newHarness(t)
	in := input("order-rb", "5")
	now := h.clock.Now()
	key := transfer.StoreKey(wallet, in.ClientKey)
	h.store.Put(transfer.Record{
		StoreKey: key, ClaimID: "dead-invocation", Status: transfer.StatusInFlight,
		Fingerprint: in.Request.Fingerprint(), Request: in.Request, ClientKey: in.ClientKey,
		LeaseOwner: "dead", LeaseExpiresAt: now.Add(-time.Second), Version: 2, CreatedAt: now, UpdatedAt: now,
		Envelope: &transfer.Envelope{XDR: "xdr-sent", InnerHash: strings.Repeat("ab", 32), MaxTime: now.Add(time.Minute).Unix(), SubmittedLedger: 100, Channel: "GVAULT"},
	})
	h.store.Fail(func(op string) error {
		if op == "replace" {
			return errors.New("ProvisionedThroughputExceededException: throttled")
		}
		return nil
	})
	_, err := h.orch.Transfer(context.Background(), in)
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeStoreUnavailable || strings.Contains(u.Detail, "nothing was submitted") {
		t.Fatalf("%v: want STORE_UNAVAILABLE that does not say nothing was submitted", err)
	}
	if p, _ := h.ledger.counts(); p != 0 {
		t.Fatalf("%d envelope(s) built while an envelope of the key may land", p)
	}
}
