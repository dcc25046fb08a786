package chaos

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Lost answers of the store: a write applied whose answer was lost, with the SDK's real retries
// (storeLosing, in stale_test.go), is recognised by its writer as its own, and a call whose own
// write failed never leaves the key held by its own leftover claim.

// TestLostClaimAnswerIsRecognisedAsOwn: a call recognises its own claim whose answer was lost. The
// claim's PutItem is applied but its answer is lost (the connection is reset); the SDK sends it
// again, the retry fails its condition against the item the first one wrote, and the store
// returns that item as the holder. The call carries on and is answered 200, not made to wait on
// itself for its whole budget and answer TRANSFER_IN_PROGRESS.
func TestLostClaimAnswerIsRecognisedAsOwn(t *testing.T) {
	r := quietRig(t)
	store, tr := r.storeLosing(t, loseFirst(isClaim))
	r.orch.Store = store
	start := r.clock.Now()
	out, err := r.call(0)
	sent, lost, _ := tr.counts()
	if lost["DynamoDB_20120810.PutItem"] != 1 || sent["DynamoDB_20120810.PutItem"] < 2 {
		t.Fatalf("PutItem sent %d times, %d answers lost: the test needs a lost claim answer and the SDK's retry", sent["DynamoDB_20120810.PutItem"], lost["DynamoDB_20120810.PutItem"])
	}
	if err != nil {
		t.Fatalf("transfer = %v after %v; want 200: the claim was this call's own", err, r.clock.Now().Sub(start))
	}
	if out.Replayed {
		t.Errorf("outcome %+v says replayed; this call made the transfer", out)
	}
	r.assertPaidOnce(t, 0, told{who: "caller", out: out})
}

// TestEveryLostWriteAnswerIsRecognisedAsOwn: every kind of write the orchestrator and the sweep
// make (attach, settle, release, in_doubt, take-over, sweep release), applied with its answer lost
// and sent again by the SDK's retryer (whose retry then fails its condition against the item the
// first attempt wrote), is recognised by its writer as its own: one transaction, the item right,
// the caller told the truth, and no call waiting on itself.
func TestEveryLostWriteAnswerIsRecognisedAsOwn(t *testing.T) {
	const put, del = "DynamoDB_20120810.PutItem", "DynamoDB_20120810.DeleteItem"
	// putOf picks the first PutItem of an item with this status and version (0: any version).
	putOf := func(status transfer.Status, version int) func(op string, req map[string]any) bool {
		return func(op string, req map[string]any) bool {
			return op == put && itemAttr(req, "status") == string(status) &&
				(version == 0 || itemAttr(req, "version") == strconv.Itoa(version))
		}
	}
	deleteOf := func(op string, _ map[string]any) bool { return op == del }
	for _, c := range []struct {
		name  string
		lose  func(op string, req map[string]any) bool
		setup func(t *testing.T, r *rig)
		// run makes the call(s) and returns what the last caller was told.
		run func(t *testing.T, r *rig) told
	}{
		{name: "attach", lose: putOf(transfer.StatusInFlight, 2)},
		{name: "settle", lose: putOf(transfer.StatusReplayable, 0)},
		{name: "release", lose: deleteOf, setup: func(t *testing.T, r *rig) {
			// The first send is refused before inclusion: the key is released and a new envelope
			// built. (txBAD_SEQ: a TRY_AGAIN_LATER to the vault's envelope says the vault is busy,
			// answered CHANNELS_BUSY at once without a rebuild.)
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Code: "txBAD_SEQ"})
		}},
		{name: "in_doubt", lose: putOf(transfer.StatusInDoubt, 3), run: func(t *testing.T, r *rig) told {
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall})
			var d *transfer.InDoubtError
			if _, err := r.callAs("first", 0); !errors.As(err, &d) {
				t.Errorf("first call = %v, want TRANSFER_IN_DOUBT", err)
			}
			if rec, err := r.store.Get(context.Background(), r.storeKey(0)); err != nil || rec.Status != transfer.StatusInDoubt {
				t.Errorf("item = %+v, %v; want in_doubt", rec, err)
			}
			r.net.ClearFaults()
			r.clock.Advance(ledgerInterval)
			r.shown(t)
			retry := told{who: "retry"}
			retry.out, retry.err = r.callAs("retry", 0)
			return retry
		}},
		{name: "take-over", lose: putOf(transfer.StatusInFlight, 3), setup: func(t *testing.T, r *rig) { r.deadClaim(t, 0) }},
		{name: "sweep-release", lose: deleteOf, run: func(t *testing.T, r *rig) told {
			stale := r.deadClaim(t, 0)
			s, err := r.orch.Settle(actorCtx(r, "sweep"), stale)
			if err != nil || s.Resolution != transfer.ResolvedReleased {
				t.Errorf("sweep = %s, %v; want released: its own delete applied", s.Resolution, err)
			}
			retry := told{who: "retry"}
			retry.out, retry.err = r.callAs("retry", 0)
			return retry
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := quietRig(t)
			store, tr := r.storeLosing(t, loseFirst(c.lose))
			if c.setup != nil {
				c.setup(t, r)
			}
			r.orch.Store = store
			start := r.clock.Now()
			var last told
			if c.run != nil {
				last = c.run(t, r)
			} else {
				last = told{who: "caller"}
				last.out, last.err = r.callAs("caller", 0)
			}
			if _, n, _ := tr.counts(); n[put]+n[del] != 1 {
				t.Fatalf("answers lost: %v; the test needs exactly one", n)
			}
			if last.err != nil {
				t.Errorf("%s = %v after %v; want 200", last.who, last.err, r.clock.Now().Sub(start))
			}
			if c.run == nil && r.clock.Now().Sub(start) > transfer.DefaultSettings().Timeout/2 {
				t.Errorf("the call took %v of its %v budget: it waited on its own write", r.clock.Now().Sub(start), transfer.DefaultSettings().Timeout)
			}
			r.assertPaidOnce(t, 0, last)
		})
	}
}

// TestOwnLeftoverDoesNotBlockTheKey: a call whose own write failed does not leave the key held by
// its own dead claim, so that it (or the client's next retry) would wait a whole budget on an
// item nobody is working on and answer TRANSFER_IN_PROGRESS, "another request with this key is
// still running". Played with a claim applied whose retries are all refused (no retry fails its
// condition, so the call never sees its own item) and with a release that never reaches the
// table.
func TestOwnLeftoverDoesNotBlockTheKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, r *rig)
		rule  func() func(op string, req map[string]any) fate
	}{
		{
			// The claim is applied and its answer lost; the SDK's two retries are refused before they
			// reach the table, so no retry fails its condition and the call never sees its own item.
			name: "claim-applied-retries-refused",
			rule: func() func(op string, req map[string]any) fate {
				n := 0
				return func(op string, req map[string]any) fate {
					if !isClaim(op, req) || n >= 3 {
						return pass
					}
					if n++; n == 1 {
						return lose
					}
					return refuse
				}
			},
		},
		{
			// The first send is refused before inclusion, so the call releases the key; the release
			// (all three of the SDK's attempts) is refused before it reaches the table. The refusal
			// is a TRY_AGAIN_LATER to the vault's envelope, so the call answers CHANNELS_BUSY at
			// once, its own leftover deleted first; the second call lands.
			name: "release-refused",
			setup: func(t *testing.T, r *rig) {
				r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater})
			},
			rule: func() func(op string, req map[string]any) fate {
				n := 0
				return func(op string, _ map[string]any) fate {
					if op != "DynamoDB_20120810.DeleteItem" || n >= 3 {
						return pass
					}
					n++
					return refuse
				}
			},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := quietRig(t)
			if c.setup != nil {
				c.setup(t, r)
			}
			store, tr := r.storeLosing(t, c.rule())
			r.orch.Store = store
			start := r.clock.Now()
			answers := r.callTwiceNotWaitingOnItself(t, "call", start, "only its own leftover item")
			_, lost, refused := tr.counts()
			t.Logf("answers lost %v, attempts refused %v", lost, refused)
			if last := answers[len(answers)-1]; last.err != nil {
				t.Errorf("the transfer did not land within two calls (+%v): %v", r.clock.Now().Sub(start), last.err)
			}
			if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
				t.Errorf("the key was blocked for %v by the call's own leftover claim", took)
			}
			r.assertPaidOnce(t, 0, answers...)
		})
	}
}

// TestOwnLeftoverAfterTakeOverDoesNotBlockTheKey: TestOwnLeftoverDoesNotBlockTheKey's refused
// release, reached through a take-over: the retry is never told TRANSFER_IN_PROGRESS by its own
// leftover, and the transfer lands within two calls. A claim's invocation died before it built
// anything; the client's retry takes the expired claim over (same incarnation, its own lease),
// builds E1, and E1's first send is refused before inclusion, so the retry releases the key to
// build again; the release (all three of the SDK's attempts) is refused before it reaches the
// table. A claim loop that re-released only claims it won, never a take-over, would find the item
// it holds itself and wait on it for its whole budget, and the client's next retry too, until the
// retry's lease ends.
func TestOwnLeftoverAfterTakeOverDoesNotBlockTheKey(t *testing.T) {
	r := quietRig(t)
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepClaimed {
			return errCrash // the first invocation dies right after its claim
		}
		return nil
	}
	if _, err := r.callAs("dead", 0); !errors.Is(err, errCrash) {
		t.Fatalf("setting up a dead claim without an envelope: %v", err)
	}
	r.orch.Hooks = nil
	r.clock.Advance(2 * time.Minute) // its lease expires
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: stellarsim.StatusTryAgainLater})
	n := 0
	store, tr := r.storeLosing(t, func(op string, _ map[string]any) fate {
		if op != "DynamoDB_20120810.DeleteItem" || n >= 3 {
			return pass
		}
		n++
		return refuse
	})
	r.orch.Store = store
	start := r.clock.Now()
	answers := r.callTwiceNotWaitingOnItself(t, "retry", start, "only the take-over's own leftover item")
	if _, _, refused := tr.counts(); refused["DynamoDB_20120810.DeleteItem"] != 3 {
		t.Fatalf("refused %v; the test needs the release refused three times", refused)
	}
	if last := answers[len(answers)-1]; last.err != nil {
		t.Errorf("the transfer did not land within two calls (+%v): %v", r.clock.Now().Sub(start), last.err)
	}
	r.assertPaidOnce(t, 0, answers...)
}

// TestOwnAttachLeftoverDoesNotBlockTheKey: TestOwnLeftoverDoesNotBlockTheKey for the attach: a
// call whose attach applied with its answer lost never leaves the key held by its own claim. The
// attach (E1 on the claim, v2) is applied and its answer lost, and the SDK's two retries are
// refused before they reach the table, so ReplaceItem never sees a condition fail and never reads
// back. The call answers 503 (nothing was submitted) and tries to release its claim at v1, which
// fails against its own v2; were the key left in_flight under the call's own lease, with an
// envelope never sent, the client's retry would wait on it for its whole budget and be told
// TRANSFER_IN_PROGRESS while nothing runs.
func TestOwnAttachLeftoverDoesNotBlockTheKey(t *testing.T) {
	r := quietRig(t)
	n := 0
	store, tr := r.storeLosing(t, func(op string, req map[string]any) fate {
		if op != "DynamoDB_20120810.PutItem" || itemAttr(req, "status") != string(transfer.StatusInFlight) ||
			itemAttr(req, "version") != "2" || n >= 3 {
			return pass
		}
		if n++; n == 1 {
			return lose
		}
		return refuse
	})
	r.orch.Store = store
	start := r.clock.Now()
	answers := r.callTwiceNotWaitingOnItself(t, "call", start, "only the first call's own attached claim")
	if _, lost, refused := tr.counts(); lost["DynamoDB_20120810.PutItem"] != 1 || refused["DynamoDB_20120810.PutItem"] != 2 {
		t.Fatalf("lost %v, refused %v; the test needs the attach applied with its answer lost and both retries refused", lost, refused)
	}
	if last := answers[len(answers)-1]; last.err != nil {
		t.Errorf("the transfer did not land within two calls (+%v): %v", r.clock.Now().Sub(start), last.err)
	}
	r.assertPaidOnce(t, 0, answers...)
}

// TestLostDiscardAnswerBeforeAReclaimIsStillReleased: an operator's discard whose delete applied
// is answered "released", even when its answer was lost and the key was claimed again before the
// SDK's retry. The discard proves E1 dead and deletes the in_doubt item; the delete's answer is
// lost, and a client's retry claims the free key and lands E2. The retried delete fails its
// condition against E2's item (rightly: it is not E1's), and the key then holds a later
// incarnation (another ClaimID), which can only exist once E1's item was deleted: the operator is
// told released, not "the transfer changed while it was being judged", and the key pays once.
func TestLostDiscardAnswerBeforeAReclaimIsStillReleased(t *testing.T) {
	r := quietRig(t)
	e1 := r.inDoubt(t, 0)
	store, tr := r.storeLosing(t, loseFirst(func(op string, _ map[string]any) bool { return op == "DynamoDB_20120810.DeleteItem" }))
	retry := told{who: "retry"}
	tr.onLost = func() { retry.out, retry.err = r.callAs("retry", 0) }
	r.orch.Store = store
	op := r.reconciler(r.orch)
	ans, err := op.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: e1.StoreKey,
		Discard: true, Operator: "oncall@example.com"})
	if _, lost, _ := tr.counts(); lost["DynamoDB_20120810.DeleteItem"] != 1 {
		t.Fatalf("answers lost %v; the test needs the discard's delete to lose its answer", lost)
	}
	if retry.err != nil {
		t.Fatalf("retry: %v", retry.err)
	}
	if a, ok := ans.(*reconcile.ResolveAnswer); err != nil || !ok || a.Resolution != string(transfer.ResolvedReleased) {
		t.Errorf("discard = %+v, %v; want released: its delete of E1's item applied", ans, err)
	}
	r.assertPaidOnce(t, 0, retry)
}
