package chaos

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestAsyncUnderFaults is a small campaign of async transfers: the store and the network fail
// (lost answers included), invocations die at every step (the API between its claim and its send
// too), and the queue loses, duplicates, reorders and delays messages, while sweeps run beside
// them. Then the faults heal, the sweep and the messages finish the work, and the late messages
// arrive. Every key must have exactly one transaction on the ledger and its item must be that
// transaction; every late message must do nothing.
func TestAsyncUnderFaults(t *testing.T) {
	seeds := asyncSeeds
	if testing.Short() {
		seeds = seeds[:1]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) { asyncUnderFaults(t, seed) })
	}
}

// asyncSeeds are TestAsyncUnderFaults' runs (each about a second with -race).
var asyncSeeds = []uint64{15, 16, 17, 18, 19}

func asyncUnderFaults(t *testing.T, seed uint64) {
	const keys = 16
	r, cleanup, err := newRig(Config{Seed: seed, Keys: keys, Callers: 1, Wave: 1, FaultRate: 0.15, SendFaultRate: 0.3, CrashRate: 0.08})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	q := &lossyQueue{}
	r.orch.Queue = q
	sweeper := reconcile.New(reconcile.Config{
		Store: r.store, Settler: r.orch, Ledger: r.ledger, Gauge: nopGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL },
		Logger: slog.New(slog.DiscardHandler), Queue: q, Queued: r.store, QueuedGrace: asyncGrace,
	})
	dice := rand.New(rand.NewPCG(seed, 1))
	caller := 0
	ctxOf := func(k int, faulty bool) context.Context {
		caller++
		return withCaller(context.Background(), r.newCaller(k, caller%200, faulty))
	}
	keyOf := map[string]int{}
	for k := range keys {
		keyOf[r.storeKey(k)] = k
	}
	accepted := make([]bool, keys)
	var pending, late []transfer.QueueMessage
	counts := map[string]int{}
	// collect takes what was sent and plays the queue's faults on it.
	collect := func(faulty bool) {
		for _, m := range q.take() {
			switch x := dice.Float64(); {
			case faulty && x < 0.1:
				counts["lost"]++
			case faulty && x < 0.3:
				counts["duplicated"]++
				pending = append(pending, m, m)
			case faulty && x < 0.4:
				counts["late"]++
				late = append(late, m)
			default:
				pending = append(pending, m)
			}
		}
	}
	deliver := func(faulty bool) {
		i := dice.IntN(len(pending)) // out of order
		m := pending[i]
		pending = append(pending[:i], pending[i+1:]...)
		d, err := r.orch.RunQueued(ctxOf(keyOf[m.StoreKey], faulty), m)
		counts["delivery_"+string(d)]++
		if errors.Is(err, errCrash) {
			counts["submitter_crashed"]++
		}
		if d == transfer.DeliveryRetry || errors.Is(err, errCrash) {
			pending = append(pending, m) // SQS delivers it again after its visibility timeout
		}
	}
	sweep := func(faulty bool) {
		ctx := ctxOf(0, faulty)
		if ans, err := sweeper.Sweep(ctx); err == nil {
			counts["sweep_sent"] += ans.Queued.Sent + ans.InDoubt.Requeued + ans.ExpiredClaims.Requeued
		}
	}
	for step := 0; step < 400; step++ {
		for k := range keys {
			if !accepted[k] && dice.Float64() < 0.3 {
				res, err := r.orch.Enqueue(ctxOf(k, true), r.input(k))
				accepted[k] = err == nil && res.Accepted
				if errors.Is(err, errCrash) {
					counts["api_crashed"]++
				}
			}
		}
		collect(true)
		if len(pending) > 0 {
			deliver(true)
		}
		if step%10 == 9 {
			r.clock.Advance(20 * time.Second)
			r.shown(t)
			sweep(true)
		}
	}
	// Healed: clients retry until accepted, sweeps and deliveries run until every key settles.
	for k := range keys {
		for !accepted[k] {
			res, err := r.orch.Enqueue(ctxOf(k, false), r.input(k))
			if err != nil {
				t.Fatalf("key %d: enqueue after healing: %v", k, err)
			}
			accepted[k] = res.Accepted || res.Outcome.TransactionHash != ""
		}
	}
	settled := func() bool {
		for k := range keys {
			if rec := r.item(t, k); rec.Status != transfer.StatusReplayable {
				return false
			}
		}
		return true
	}
	for round := 0; !settled(); round++ {
		if round == 50 {
			for k := range keys {
				t.Logf("key %d: %s", k, describe(r.item(t, k)))
			}
			t.Fatalf("not settled after 50 healing rounds; %v", counts)
		}
		collect(false)
		for len(pending) > 0 {
			deliver(false)
			collect(false)
		}
		r.clock.Advance(asyncGrace + 10*time.Second)
		r.shown(t)
		sweep(false)
	}
	// The late messages arrive after everything settled: they do nothing.
	sends := len(r.net.Envelopes())
	for _, m := range late {
		if d, err := r.orch.RunQueued(ctxOf(keyOf[m.StoreKey], false), m); d != transfer.DeliveryStale {
			t.Errorf("a late message for %s: %s (%v), want stale", m.StoreKey, d, err)
		}
	}
	if len(r.net.Envelopes()) != sends {
		t.Error("a late message sent an envelope")
	}
	for k := range keys {
		in := r.input(k)
		var hashes []string
		for _, tx := range r.net.Applied()[r.setupTxs:] {
			if id, ok := r.ledger.ownerOf(tx.Hash); ok && id == in.Request.WalletAddress+"/"+in.Request.Amount {
				hashes = append(hashes, tx.Hash)
			}
		}
		rec := r.item(t, k)
		if len(hashes) != 1 || rec.Result == nil || rec.Result.TransactionHash != hashes[0] {
			t.Errorf("key %d: applied %v, item %s", k, hashes, describe(rec))
		}
	}
	t.Logf("queue and crashes: %v; faults: %v; crashes by step: %v; events: %v", counts, r.faults.snapshot(), r.crashes.snapshot(), r.events.snapshot())
}
