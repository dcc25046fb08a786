package chaos

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Stale writers and take-overs: a writer (a sweep, an operator, a caller) that read one
// incarnation of a key never changes a later one. Every new claim starts again at version 1, so
// a condition on status and version alone would match the next incarnation's item; the
// conditions name the claim too. A take-over of an expired lease settles the envelope it finds.
// The stale actors are in stale_test.go.

// TestExpiredLeaseWithSentEnvelopeIsNotReRun: a take-over of an expired lease whose envelope was
// sent settles that envelope, never builds another. The invocation dies right after its send,
// the envelope lands, the lease expires, and the client's retry is answered the landed
// transaction: one applied, no rebuild.
func TestExpiredLeaseWithSentEnvelopeIsNotReRun(t *testing.T) {
	r := quietRig(t)
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash // the invocation dies right after its send
		}
		return nil
	}
	if _, err := r.call(0); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v", err)
	}
	r.orch.Hooks = nil
	r.clock.Advance(ledgerInterval)  // the envelope lands
	r.clock.Advance(2 * time.Minute) // the dead invocation's lease expires
	out, err := r.call(0)
	if err != nil {
		t.Fatalf("take-over: %v", err)
	}
	r.assertOnce(t, 0, out)
}

// TestStaleSweepNeverTouchesALaterIncarnation: a sweep that judged one incarnation of a key never
// changes a later one. The sweep reads an expired claim (E1) and its ledger lookup is slow.
// Meanwhile a retry takes the claim over, proves E1 dead, releases, claims again (v1), and
// attaches and sends E2 (v2). The sweep's "E1 is dead: release" must not delete E2's item, or the
// next retry builds E3 while E2 can still land. Played with the real sweep while E2's sender dies,
// and with the sweep's Settle while E2's sender still waits for the ledger.
func TestStaleSweepNeverTouchesALaterIncarnation(t *testing.T) {
	t.Run("sweep/sender-died", func(t *testing.T) {
		// The real sweep (internal/reconcile): it lists the expired claim, reads it, and judges it
		// with a slow lookup, while the retry runs and dies right after sending E2.
		r := quietRig(t)
		stale := r.deadClaim(t, 0)
		var retry told
		var e2 transfer.Record // E2's item as the retry left it
		sweep := r.reconciler(r.slowSettler(func() {
			r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
				if step == transfer.StepSent && rec.Envelope.InnerHash != stale.Envelope.InnerHash {
					return errCrash // E2 is on the network; its invocation dies
				}
				return nil
			}
			retry.out, retry.err = r.callAs("retry", 0)
			r.orch.Hooks = nil
			e2 = r.item(t, 0)
		}))
		ans, err := sweep.Sweep(context.Background())
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		if !errors.Is(retry.err, errCrash) {
			t.Fatalf("the retry should have died after sending E2: %+v, %v", retry.out, retry.err)
		}
		if e2.Status != transfer.StatusInFlight || e2.Envelope == nil || e2.Envelope.InnerHash == stale.Envelope.InnerHash || e2.ClaimID == stale.ClaimID {
			t.Fatalf("after the retry the key holds %s; want E2's claim (another incarnation, in_flight with E2)", describe(e2))
		}
		// The incarnation the sweep read is gone (the retry released it, for the reason the sweep
		// would): DeleteItem counts that as released, as it cannot tell it from its own delete
		// whose answer was lost (released is the right count then), or the sweep finds the item
		// changed. Either way it must not touch E2's item.
		if c := ans.ExpiredClaims; c.Checked != 1 || c.Released+c.Changed != 1 || c.Landed+c.Failed+c.ParkedInDoubt+c.Unresolved+c.Errors != 0 {
			t.Errorf("sweep counts %+v: want E1's claim counted released or changed, and nothing else", c)
		}
		r.assertUntouched(t, 0, e2, "the stale sweep")
		// E2's invocation is dead: E2 lands at the next ledger, its lease expires, and the next
		// retry settles it.
		r.clock.Advance(ledgerInterval)
		r.clock.Advance(2 * time.Minute)
		next := told{who: "next retry"}
		next.out, next.err = r.callAs("next", 0)
		if next.err != nil {
			t.Errorf("next retry: %v", next.err)
		}
		r.assertPaidOnce(t, 0, next)
	})

	t.Run("settle/sender-alive", func(t *testing.T) {
		// The sweep's Settle, with the item it read, lands while the retry that sent E2 is still
		// waiting for the ledger.
		r := quietRig(t)
		stale := r.deadClaim(t, 0)
		var swept transfer.Settlement
		var sweepErr error
		done := false
		r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
			if step == transfer.StepSent && !done && rec.Envelope.InnerHash != stale.Envelope.InnerHash {
				done = true
				e2 := r.item(t, 0)
				if e2.ClaimID == stale.ClaimID || e2.Envelope == nil || e2.Envelope.InnerHash != rec.Envelope.InnerHash {
					t.Errorf("when E2 is sent the key holds %s; want E2's claim", describe(e2))
				}
				swept, sweepErr = r.orch.Settle(actorCtx(r, "sweep"), stale)
				r.assertUntouched(t, 0, e2, "the stale sweep")
			}
			return nil
		}
		retry := told{who: "retry"}
		retry.out, retry.err = r.callAs("retry", 0)
		r.orch.Hooks = nil
		if !done {
			t.Fatal("the retry never sent a second envelope")
		}
		// The incarnation the sweep read is gone, released by the retry for the reason the sweep
		// would release it: DeleteItem answers released (it cannot tell that from its own delete
		// whose answer was lost, so released is the right answer then) or the condition failure. Never a
		// write: E2's item is untouched (checked in the hook).
		released := sweepErr == nil && swept.Resolution == transfer.ResolvedReleased
		if !released && !errors.Is(sweepErr, transfer.ErrConditionFailed) {
			t.Errorf("stale sweep = %s, %v; want released or ErrConditionFailed: the item it read is gone, E2's is not its to settle", swept.Resolution, sweepErr)
		}
		if retry.err != nil {
			t.Errorf("retry: %v", retry.err)
		}
		next := told{who: "next retry"}
		next.out, next.err = r.callAs("next", 0)
		if next.err != nil || !next.out.Replayed {
			t.Errorf("next retry = %+v, %v; want E2 replayed", next.out, next.err)
		}
		r.assertPaidOnce(t, 0, retry, next)
	})
}

// TestStaleParkNeverReplacesALaterIncarnation: a sweep's park in doubt, conditioned on the item it
// read, never replaces a later incarnation's item. The sweep reads an expired claim (E1) while no
// ledger has closed after E1's maxTime, so its lookup cannot judge E1 and it will park the item
// in_doubt. Its answer is slow to come back: meanwhile a ledger closes, a retry takes the claim
// over, proves E1 dead, releases, claims again (v1) and attaches and sends E2 (v2), then dies. The
// park fails its condition; were it to replace E2's item with E1's in_doubt copy, E1 would be
// proven dead again, released, and the next retry would build E3 while E2 lands.
func TestStaleParkNeverReplacesALaterIncarnation(t *testing.T) {
	r := quietRig(t)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash
		}
		return nil
	}
	if _, err := r.callAs("dead", 0); !errors.Is(err, errCrash) {
		t.Fatalf("setting up a dead claim: %v", err)
	}
	r.orch.Hooks = nil
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall}) // no ledger closes after E1's maxTime yet
	r.clock.Advance(2 * time.Minute)
	stale, err := r.store.Get(context.Background(), r.storeKey(0))
	if err != nil || !stale.LeaseExpired(r.clock.Now()) || stale.Envelope == nil {
		t.Fatalf("dead claim = %+v, %v", stale, err)
	}
	retry := told{who: "retry"}
	r.orch.Ledger = &slowLookup{Ledger: r.orch.Ledger, actor: "sweep", late: true, meanwhile: func() {
		r.net.ClearFaults()
		r.clock.Advance(ledgerInterval) // a ledger closes after E1's maxTime
		r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
			if step == transfer.StepSent && rec.Envelope.InnerHash != stale.Envelope.InnerHash {
				return errCrash // E2 is on the network; its invocation dies
			}
			return nil
		}
		retry.out, retry.err = r.callAs("retry", 0)
		r.orch.Hooks = nil
	}}
	s, err := r.orch.Settle(actorCtx(r, "sweep"), stale)
	if !errors.Is(retry.err, errCrash) {
		t.Fatalf("the retry should have died after sending E2: %+v, %v", retry.out, retry.err)
	}
	if !errors.Is(err, transfer.ErrConditionFailed) {
		t.Errorf("stale park = %s, %v; want ErrConditionFailed: the item it read is gone", s.Resolution, err)
	}
	if rec, err := r.store.Get(context.Background(), r.storeKey(0)); err != nil || rec.Status != transfer.StatusInFlight || rec.Envelope.InnerHash == stale.Envelope.InnerHash {
		t.Errorf("after the sweep the key holds %+v, %v; want E2's claim", rec, err)
	}
	r.clock.Advance(ledgerInterval) // E2 lands
	r.clock.Advance(2 * time.Minute)
	next := told{who: "next retry"}
	next.out, next.err = r.callAs("next", 0)
	if next.err != nil {
		t.Errorf("next retry: %v", next.err)
	}
	r.assertPaidOnce(t, 0, next)
}

// TestDelayedTakeOverWriteFailsAgainstALaterClaim: a take-over write built from a stale read fails
// its condition against a later claim of the key. Caller A reads an expired claim (E1) at v2;
// before A's take-over write lands, B takes the claim over, proves E1 dead, releases, reclaims
// (v1), attaches E2 (v2) and sends it. A's write fails with ErrConditionFailed, and A and B are
// both told E2's one payment.
func TestDelayedTakeOverWriteFailsAgainstALaterClaim(t *testing.T) {
	r := quietRig(t)
	stale := r.deadClaim(t, 0)
	b := told{who: "B"}
	var aWrite error
	aWrote := false
	r.orch.Store = &holdStore{Store: r.orch.Store, actor: "A", hold: func(write func() error) error {
		// A's take-over write is stuck in the network while B runs; it lands once B has sent E2,
		// and B then carries on.
		r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
			if actorOf(ctx) == "B" && step == transfer.StepSent && !aWrote && rec.Envelope.InnerHash != stale.Envelope.InnerHash {
				aWrote = true
				aWrite = write()
			}
			return nil
		}
		b.out, b.err = r.callAs("B", 0)
		return aWrite
	}}
	a := told{who: "A"}
	a.out, a.err = r.callAs("A", 0)
	if !aWrote {
		t.Fatal("B never sent a second envelope while A's write was held")
	}
	if !errors.Is(aWrite, transfer.ErrConditionFailed) {
		t.Errorf("A's delayed take-over write = %v; want ErrConditionFailed against B's new claim", aWrite)
	}
	if a.err != nil || b.err != nil {
		t.Errorf("A: %+v, %v; B: %+v, %v; want both 200", a.out, a.err, b.out, b.err)
	}
	if a.err == nil && b.err == nil && a.out.TransactionHash != b.out.TransactionHash {
		t.Errorf("A was told %s, B %s: two payments for one key", a.out.TransactionHash, b.out.TransactionHash)
	}
	r.assertPaidOnce(t, 0, a, b)
}

// TestStaleSettleNeverTouchesALaterInDoubtIncarnation: whoever judged an in_doubt item (the
// sweep, an operator's discard, forced discard or forced resolve, another caller's inline
// reconciliation) never changes a later incarnation's in_doubt item. The stale reader's lookup is
// slow; meanwhile a retry proves E1 dead, reclaims, and E2 ends in_doubt at v3 too (it landed, but
// the retry could not see it). The stale "E1 is dead: release" must not delete E2's in_doubt
// item, or the next call builds E3; a forced "E1 landed" must not record E1 over E2's payment.
func TestStaleSettleNeverTouchesALaterInDoubtIncarnation(t *testing.T) {
	// retryToInDoubt is the retry that reclaims the key and ends in_doubt with E2, although E2
	// landed: its send's answer is lost and E2 lands, then falls out of the lookups' one-ledger
	// history, so NOT_FOUND proves nothing until the retry's budget ends. Then full history is back.
	retryToInDoubt := func(t *testing.T, r *rig, e1 transfer.Record) (told, transfer.Record) {
		armed, closed := false, false
		isE2 := func(ctx context.Context, rec transfer.Record) bool {
			return actorOf(ctx) == "retry" && rec.Envelope != nil && rec.Envelope.InnerHash != e1.Envelope.InnerHash
		}
		r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
			switch {
			case step == transfer.StepAttached && !armed && isE2(ctx, rec):
				armed = true
				r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
				r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
			case step == transfer.StepSent && armed && !closed && isE2(ctx, rec):
				closed = true
				for range 3 {
					r.net.CloseLedger() // E2 lands, then falls out of the one-ledger history
				}
			}
			return nil
		}
		retry := told{who: "retry"}
		retry.out, retry.err = r.callAs("retry", 0)
		r.orch.Hooks = nil
		r.net.ClearFaults()
		var d *transfer.InDoubtError
		if !errors.As(retry.err, &d) {
			t.Fatalf("retry = %+v, %v; want TRANSFER_IN_DOUBT with E2", retry.out, retry.err)
		}
		rec, err := r.store.Get(context.Background(), r.storeKey(0))
		if err != nil || rec.Status != transfer.StatusInDoubt || rec.Version != 3 || rec.Envelope.InnerHash == e1.Envelope.InnerHash {
			t.Fatalf("after the retry the item is %+v, %v; want E2 in_doubt at v3", rec, err)
		}
		if tx, ok := r.net.Transaction(rec.Envelope.InnerHash); !ok || tx.Status != "SUCCESS" {
			t.Fatalf("E2 should have landed: %v/%s", ok, tx.Status)
		}
		return retry, rec
	}
	// finish lets a last retry read the outcome.
	finish := func(t *testing.T, r *rig, answers ...told) {
		r.clock.Advance(ledgerInterval)
		last := told{who: "last retry"}
		last.out, last.err = r.callAs("last", 0)
		if last.err != nil {
			t.Errorf("last retry: %v", last.err)
		}
		r.assertPaidOnce(t, 0, append(answers, last)...)
	}

	t.Run("sweep", func(t *testing.T) {
		r := quietRig(t)
		e1 := r.inDoubt(t, 0)
		var retry told
		var e2 transfer.Record
		sweep := r.reconciler(r.slowSettler(func() { retry, e2 = retryToInDoubt(t, r, e1) }))
		ans, err := sweep.Sweep(context.Background())
		if err != nil {
			t.Fatalf("sweep: %v", err)
		}
		// E1's incarnation is gone (the retry proved it dead and released it): released, which
		// DeleteItem cannot tell from its own delete whose answer was lost (so released is the
		// right count then), or changed. Never a write to E2's in_doubt item.
		if c := ans.InDoubt; c.Checked != 1 || c.Released+c.Changed != 1 || c.Landed+c.Failed+c.ParkedInDoubt+c.Unresolved+c.Errors != 0 {
			t.Errorf("sweep counts %+v: want E1's item counted released or changed, and nothing else", c)
		}
		r.assertUntouched(t, 0, e2, "the stale sweep")
		finish(t, r, retry)
	})

	t.Run("operator-discard", func(t *testing.T) {
		r := quietRig(t)
		e1 := r.inDoubt(t, 0)
		var retry told
		var e2 transfer.Record
		op := r.reconciler(r.slowSettler(func() { retry, e2 = retryToInDoubt(t, r, e1) }))
		ans, err := op.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: e1.StoreKey,
			Discard: true, Operator: "oncall@example.com"})
		// E1 is proven dead and its incarnation is gone: the operator is told released (DeleteItem
		// cannot tell the retry's release from its own delete whose answer was lost, so
		// released is the right answer then) or CONFLICT. Either way E2's in_doubt item is untouched.
		var rerr *reconcile.Error
		a, ok := ans.(*reconcile.ResolveAnswer)
		released := err == nil && ok && a.Resolution == string(transfer.ResolvedReleased)
		if !released && (!errors.As(err, &rerr) || rerr.Code != reconcile.CodeConflict) {
			t.Errorf("discard = %+v, %v; want released or CONFLICT: E1's incarnation is gone", ans, err)
		}
		r.assertUntouched(t, 0, e2, "the stale discard")
		finish(t, r, retry)
	})

	t.Run("operator-forced-discard", func(t *testing.T) {
		// The ledger cannot judge E1 (another transfer used its sequence number, and the history
		// no longer reaches its submission), so the operator forces the discard. Between the
		// operator's lookup and its writes, full history is back, a retry proves E1 dead and E2
		// ends in_doubt. The forced discard (audit write, then delete) must not touch E2's item.
		r := quietRig(t)
		e1 := r.inDoubt(t, 0)
		if _, err := r.callAs("other key", 1); err != nil {
			t.Fatalf("key 1: %v", err) // it takes the vault's next sequence number: E1's
		}
		r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
		for range 3 {
			r.net.CloseLedger()
		}
		var retry told
		var e2 transfer.Record
		op := r.reconciler(r.settleThenWait(func() {
			r.net.ClearFaults()
			retry, e2 = retryToInDoubt(t, r, e1)
		}))
		ans, err := op.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: e1.StoreKey,
			Discard: true, Force: true, InnerHash: e1.Envelope.InnerHash, Reason: "checked the inner hash on an explorer", Operator: "oncall@example.com"})
		var rerr *reconcile.Error
		if !errors.As(err, &rerr) || rerr.Code != reconcile.CodeConflict {
			t.Errorf("forced discard = %+v, %v; want CONFLICT: the item changed while it was judged", ans, err)
		}
		r.assertUntouched(t, 0, e2, "the stale forced discard")
		finish(t, r, retry)
	})

	t.Run("operator-forced-resolve", func(t *testing.T) {
		// As above, but the operator forces "E1 landed" (its hash) while the ledger cannot judge
		// it; between the operator's lookup and its write, a retry proves E1 dead and E2 ends
		// in_doubt. The forced resolve must not turn E2's item into "replayable with E1", a
		// transaction that never landed, while E2's landed payment goes unrecorded.
		r := quietRig(t)
		e1 := r.inDoubt(t, 0)
		if _, err := r.callAs("other key", 1); err != nil {
			t.Fatalf("key 1: %v", err)
		}
		r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
		for range 3 {
			r.net.CloseLedger()
		}
		var retry told
		var e2 transfer.Record
		op := reconcile.New(reconcile.Config{
			Store: r.store, Settler: r.orch, Gauge: nopGauge{}, Clock: r.clock,
			Ledger: &slowLookup{Ledger: r.ledger, actor: "operator", late: true, meanwhile: func() {
				r.net.ClearFaults()
				retry, e2 = retryToInDoubt(t, r, e1)
			}},
			KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL },
			Logger: slog.New(slog.DiscardHandler),
		})
		ans, err := op.Do(actorCtx(r, "operator"), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: e1.StoreKey,
			TransactionHash: e1.Envelope.InnerHash, Force: true, Reason: "seen on an explorer", Operator: "oncall@example.com"})
		var rerr *reconcile.Error
		if !errors.As(err, &rerr) || rerr.Code != reconcile.CodeConflict {
			t.Errorf("forced resolve = %+v, %v; want CONFLICT: the item changed while it was resolved", ans, err)
		}
		r.assertUntouched(t, 0, e2, "the stale forced resolve")
		finish(t, r, retry)
	})

	t.Run("caller", func(t *testing.T) {
		// Another caller's inline reconciliation read E1's in_doubt item; its lookup is slow.
		r := quietRig(t)
		e1 := r.inDoubt(t, 0)
		var retry told
		r.orch.Ledger = &slowLookup{Ledger: r.orch.Ledger, actor: "stale", meanwhile: func() { retry, _ = retryToInDoubt(t, r, e1) }}
		stale := told{who: "stale caller"}
		stale.out, stale.err = r.callAs("stale", 0)
		t.Logf("the stale caller was told %+v, %v", stale.out, stale.err)
		// Its slow lookup spent its budget: it may answer 409 (retry later), or E2's success if it
		// still had time to read E2's item again; never a payment of its own.
		var inDoubt *transfer.InDoubtError
		var inProgress *transfer.InProgressError
		if stale.err != nil && !errors.As(stale.err, &inDoubt) && !errors.As(stale.err, &inProgress) {
			t.Errorf("stale caller = %v; want E2's success or a 409 to retry", stale.err)
		}
		if n := r.events.snapshot()["rebuilds"]; n > 1 {
			t.Errorf("the stale caller built another envelope (%d rebuilds) while E2 had landed", n)
		}
		finish(t, r, retry, stale)
	})
}
