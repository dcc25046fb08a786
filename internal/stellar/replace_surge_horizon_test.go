package stellar_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Horizon's /fee_stats counts a fee bump as stellar-core does (fee_charged over operation_count
// plus one), so a lane whose ledgers clear above the base fee is surge priced there even when
// they clear below twice the base fee, the mark that only stellar-rpc's window needs (it counts
// a one-payment fee bump at twice its rate). Here the classic lane (20 operations a ledger) has
// cleared at 101 to 130 stroops for 12 ledgers; right after the first send others bid 190 stroops
// for 45 payments at once (the queue holds 40) and 160 to 195 stroops for 40 a ledger from then
// on, which outbids the envelope and evicts it from the full queue. Over
// Horizon the service still sees a surge, replaces the envelope 2 ledgers later at 10x its rate
// around the same inner transaction, and it lands within the budget, the first and the
// replacement named on the item. Read against a twice-the-base-fee mark, Horizon's fee stats
// (p99 at most 195) showed no surge: the envelope was never replaced, was evicted and banned,
// and the transfer was answered TRANSACTION_EXPIRED after its maxTime.
func TestReplaceByFeeOverHorizonWhenTheLaneClearsBelowTwiceTheBaseFee(t *testing.T) {
	r := newPayRig(t, payRigOpts{backend: "horizon", channels: 2, classicOps: 20, maxFee: 100_000, feePercentile: 90})
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
