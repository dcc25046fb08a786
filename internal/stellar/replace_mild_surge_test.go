package stellar_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A lane that clears above the base fee is surge priced, however the backend's fee stats count
// a fee bump, even when it clears below twice the base fee. Horizon's /fee_stats counts the bump
// as stellar-core does (fee_charged over operation_count plus one), so a figure above the base
// fee shows the surge; stellar-rpc's window counts a one-payment fee bump at twice its rate, so
// a figure between the base fee and twice it may be a quiet fee bump, and the latest ledger's
// transactions decide (getTransactions: a classic one charged above the base fee per slot).
// Here the classic lane (20 operations a ledger) has cleared at 101 to 130 stroops for 12
// ledgers of plain payments; right after the first send others bid 190 stroops for 45 payments
// at once (the queue holds 40) and 160 to 195 stroops for 40 a ledger from then on, which
// outbids the envelope and evicts it from the full queue. The service replaces it 2 ledgers
// later at 10x its rate around the same inner transaction, and it lands within the budget, the
// first and the replacement named on the item. Read against twice the base fee alone, neither
// backend's fee stats (p99 at most 195, no fee bump in the window) showed a surge: the envelope
// was never replaced, was evicted and banned, and the transfer was answered TRANSACTION_EXPIRED
// after its maxTime.
func TestReplaceByFeeWhenTheLaneClearsBelowTwiceTheBaseFee(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) { replaceInMildSurge(t, backend) })
}

func replaceInMildSurge(t *testing.T, backend string) {
	r := newPayRig(t, payRigOpts{backend: backend, channels: 2, classicOps: 20, maxFee: 100_000, feePercentile: 90})
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 21, PerLedger: 30, FeeMin: 101, FeeMax: 130}); err != nil {
		t.Fatal(err)
	}
	r.ledgers(12)
	var once sync.Once
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			once.Do(func() {
				r.foreignPayments(190, 45)
				if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 22, PerLedger: 40, FeeMin: 160, FeeMax: 195}); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	}
	start := r.clock.Now()
	out, err := r.transfer("mild-surge-1", 5)
	if err != nil {
		r.logSent()
		t.Fatalf("transfer: %v", err)
	}
	if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
		t.Errorf("landed after %v, past the budget", took)
	}
	r.logSent()
	rec := r.item("mild-surge-1")
	outers := rec.Envelope.Outers()
	if len(outers) < 2 || rec.Status != transfer.StatusReplayable || rec.Envelope.InnerHash != out.TransactionHash {
		t.Fatalf("item %s with outer hashes %v (inner %s), want replayable with the first and its replacement, answered with the inner hash %s",
			rec.Status, outers, rec.Envelope.InnerHash, out.TransactionHash)
	}
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[len(outers)-1] {
		t.Fatalf("applied %+v (%v), want the replacement %s", a, ok, outers[len(outers)-1])
	}
	// The premise: every ledger of the run cleared above the base fee and below twice it.
	for _, l := range r.net.CongestionReport(1 << 10).Ledgers {
		if l.ClassicBaseFee >= 200 {
			t.Fatalf("ledger %d cleared at %d stroops, not below twice the base fee: the test shows nothing", l.Sequence, l.ClassicBaseFee)
		}
	}
	if classic, _, _ := r.net.ClearingFee(a.Ledger); classic <= 100 {
		t.Errorf("the replacement landed in ledger %d, which cleared at %d stroops: not surge priced", a.Ledger, classic)
	}
	sent := r.sentHashes()
	first, last := offered(t, sent[outers[0]].EnvelopeXDR), offered(t, sent[outers[len(outers)-1]].EnvelopeXDR)
	if last < 10*first {
		t.Errorf("replacement bids %d per slot, want at least 10 x %d", last, first)
	}
}

// A quiet lane is not surge priced, although stellar-rpc's window shows its fee bumps at twice
// the base fee: the service's own payments (one-payment fee bumps charged the base fee per slot)
// fill the fee stats, then an envelope is held back 3 ledgers (delay_inclusion) in a lane that
// never fills. Nothing outbid it, so it is not replaced (one outer hash on the item, no other
// fee bump sent) and it lands as it was; over RPC the latest ledger's transactions, charged the
// base fee per slot, say so where the fee stats cannot.
func TestNoReplacementByFeeWhileTheLaneIsQuiet(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: 2, classicOps: 20, maxFee: 100_000, feePercentile: 90})
		for i := range 3 {
			if _, err := r.transfer(fmt.Sprintf("quiet-%d", i), 1); err != nil {
				t.Fatalf("transfer %d: %v", i, err)
			}
		}
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3}); err != nil {
			t.Fatal(err)
		}
		before := len(r.ours())
		out, err := r.transfer("held-back", 5)
		if err != nil {
			r.logSent()
			t.Fatalf("transfer: %v", err)
		}
		rec := r.item("held-back")
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" {
			t.Fatalf("applied %+v (%v)", a, ok)
		}
		if outers := rec.Envelope.Outers(); len(outers) != 1 || a.FeeBumpHash != outers[0] {
			r.logSent()
			t.Fatalf("outer hashes %v, landed %s: want the first fee bump alone", outers, a.FeeBumpHash)
		}
		for _, e := range r.ours()[before:] {
			if e.Hash != a.FeeBumpHash {
				t.Errorf("sent %s (%s) besides the envelope that landed", e.Hash, e.Status)
			}
		}
		for _, l := range r.net.CongestionReport(1 << 10).Ledgers {
			if l.ClassicFull {
				t.Fatalf("ledger %d was surge priced: the test shows nothing", l.Sequence)
			}
		}
	})
}
