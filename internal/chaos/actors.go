package chaos

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The stale actors that run beside each wave's traffic, with faults armed, so that a write built from a stale read meets a newer claim: the
// scheduled sweep and an operator working the in-doubt queue through internal/reconcile, as the
// reconcile function does. Their reads and writes go through the same faulty DynamoDB client and
// heldStore as the callers', so their writes are held back past other callers' releases and
// reclaims too.

// noGauge drops the in-doubt gauge.
type noGauge struct{}

func (noGauge) InDoubtGauge(context.Context, int) {}

// sweeper runs the sweep about once a minute (30 to 90 s apart; the deployed schedule is
// rate(1 minute)) while active says the wave's callers are still at work.
func (r *rig) sweeper(ctx context.Context, active func() bool) {
	c := callerOf(ctx)
	for {
		_ = r.clock.Sleep(ctx, time.Duration(30_000+c.rng.IntN(60_000))*time.Millisecond)
		if !active() {
			return
		}
		r.stale.add("sweeps")
		ans, err := r.ops.Sweep(ctx)
		if err != nil {
			r.stale.add("sweeps_failed")
			continue
		}
		for _, part := range []reconcile.SweepCounts{ans.InDoubt, ans.ExpiredClaims} {
			r.stale.addN("sweep_landed", part.Landed)
			r.stale.addN("sweep_failed_on_chain", part.Failed)
			r.stale.addN("sweep_released", part.Released)
			r.stale.addN("sweep_parked_in_doubt", part.ParkedInDoubt)
			r.stale.addN("sweep_changed_meanwhile", part.Changed)
			r.stale.addN("sweep_requeued", part.Requeued)
		}
		r.stale.addN("sweep_sent_queued", ans.Queued.Sent)
	}
}

// operator works the in-doubt queue every 15 to 45 s while active: list a page, get most of its
// items, and act as an operator would on what the chain shows. Resolve with the hash the ledger
// shows SUCCESS; discard what it shows FAILED or proves dead (reconcile settles it from the
// ledger); force only where the ledger can no longer judge (maxTime passed, history too short),
// after checking the envelope's hashes in the network's full history: a forced resolve when it
// landed, a forced discard when it did not. Now and then the operator is careless and asks for
// what must be refused: a resolve with the hash of an envelope proven dead or one that can still
// land, a discard of one that can still land, or an unforced discard the ledger cannot prove.
func (r *rig) operator(ctx context.Context, active func() bool) {
	c := callerOf(ctx)
	for {
		_ = r.clock.Sleep(ctx, time.Duration(15_000+c.rng.IntN(30_000))*time.Millisecond)
		if !active() {
			return
		}
		ans, err := r.ops.Do(ctx, reconcile.Request{Action: reconcile.ActionList, Limit: 10})
		r.operated("list", err)
		if err != nil {
			continue
		}
		for _, listed := range ans.(*reconcile.ListAnswer).Items {
			if c.rng.IntN(4) == 0 {
				continue // not every item on every pass
			}
			got, err := r.ops.Do(ctx, reconcile.Request{Action: reconcile.ActionGet, StoreKey: listed.StoreKey})
			r.operated("get", err)
			if err != nil {
				continue
			}
			req, what, ok := r.decide(c, got.(*reconcile.GetAnswer).Item)
			if !ok {
				continue
			}
			_, err = r.ops.Do(ctx, req)
			r.operated(what, err)
		}
	}
}

// decide is the operator's judgement of one item, and the name its outcome is counted under.
func (r *rig) decide(c *caller, it reconcile.Item) (reconcile.Request, string, bool) {
	req := reconcile.Request{Action: reconcile.ActionResolve, StoreKey: it.StoreKey, Operator: "chaos-operator"}
	ch := it.Chain
	switch {
	case it.Status != string(transfer.StatusInDoubt):
		return req, "", false
	case ch == nil:
		// An in_doubt item without an envelope: nothing was ever sent.
		req.Discard, req.Force, req.Reason = true, true, "no envelope was ever attached"
		return req, "forced_discard", true
	case ch.Error != "":
		return req, "", false
	case ch.Status == string(transfer.LookupSuccess):
		req.TransactionHash = ch.Hash
		return req, "resolve", true
	case ch.ProvenDead && c.rng.IntN(8) == 0:
		req.TransactionHash = it.InnerHash
		return req, "careless_resolve", true // must be refused: PROVEN_DEAD
	case ch.Status == string(transfer.LookupFailed) || ch.ProvenDead:
		req.Discard = true
		return req, "discard", true
	case ch.CanStillLand:
		switch c.rng.IntN(8) {
		case 0:
			req.Discard = true
			return req, "careless_discard", true
		case 1:
			req.TransactionHash = it.InnerHash
			return req, "careless_resolve", true
		}
		return req, "", false
	case ch.MaxTimePassed && !ch.HistoryCovers && c.rng.IntN(8) == 0:
		req.Discard = true
		return req, "careless_discard", true // must be refused: NOT_PROVEN_DEAD
	case ch.MaxTimePassed && !ch.HistoryCovers:
		// The ledger can no longer judge: look the hashes up in full history first.
		for _, h := range viewHashes(it) {
			if tx, ok := r.net.Transaction(h); h != "" && ok {
				if tx.Status != string(transfer.LookupSuccess) {
					return req, "", false // failed on chain: not an operator's to force
				}
				req.TransactionHash, req.Force, req.Reason = h, true, "found SUCCESS in full history"
				return req, "forced_resolve", true
			}
		}
		req.Discard, req.Force, req.Reason = true, true, "not in full history and maxTime has passed"
		req.InnerHash = it.InnerHash // the envelope checked: a later one of the key is never discarded
		return req, "forced_discard", true
	}
	return req, "", false
}

// operated counts an operator action by what it answered: ok or the refusal's code.
func (r *rig) operated(what string, err error) {
	code := "ok"
	if err != nil {
		code = "untyped"
		var e *reconcile.Error
		if errors.As(err, &e) {
			code = e.Code
		}
	}
	r.operators.add(what + "_" + strings.ToLower(code))
}
