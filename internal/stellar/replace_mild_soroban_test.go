package stellar_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A Soroban lane that clears above the base fee is surge priced even when it clears below twice
// the base fee, and a contract call's fee bump it outbids is replaced there too. stellar-rpc's
// sorobanInclusionFee holds a plain contract call's inclusion fee at the lane's rate and a fee
// bump's at twice it (two slots), so a p99 between the base fee and twice it cannot tell a
// surge from a quiet fee bump; the latest ledger's Soroban component names the rate its lane
// charged (getLedgers: the transaction set's ParallelTxsComponent.baseFee, stellar-core's
// computeLaneBaseFee). Here others' calls fill the Soroban lane (7 a ledger) at 101 to 130
// stroops for 12 ledgers; right after the first send they bid 160 to 195 stroops, 8 a ledger,
// which outbids the service's fee bump. Judged on the fee stats alone (p99 at most 195, below
// twice the base fee) the lane looked quiet: the envelope was never replaced, was evicted and
// banned, and the transfer ended TRANSACTION_EXPIRED after its maxTime.
func TestReplaceByFeeContractCallWhenTheSorobanLaneClearsBelowTwiceTheBaseFee(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 1, lanes: stellarsim.LaneLimits{SorobanTxs: sorobanLane}})
	r.inner.FeePercentile = 90
	r.ledger = r.ledgerWithCap(r.inner.MaxFeeStroops)
	r.orch.Ledger = r.ledger
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 21, SorobanPerLedger: sorobanLane + 1, SorobanFeeMin: 101, SorobanFeeMax: 130}); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		_ = r.clock.Sleep(context.Background(), 5*time.Second)
	}
	_ = r.clock.Sleep(context.Background(), contractLagMax)
	f := &foreignCalls{hashes: map[string]bool{}}
	var once sync.Once
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			once.Do(func() {
				if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 22, SorobanPerLedger: sorobanLane + 1, SorobanFeeMin: 160, SorobanFeeMax: 195}); err != nil {
					t.Error(err)
				}
			})
		}
		return nil
	}
	start := r.clock.Now()
	out, err := r.transfer("soroban-mild-1", transfer.Deposit, r.wallet, 5)
	if err != nil {
		r.logSent(f)
		t.Fatalf("transfer: %v", err)
	}
	if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
		t.Errorf("landed after %v, past the budget", took)
	}
	rec := r.item("soroban-mild-1")
	outers := rec.Envelope.Outers()
	if len(outers) < 2 || rec.Status != transfer.StatusReplayable || rec.Envelope.InnerHash != out.TransactionHash {
		r.logSent(f)
		t.Fatalf("item %s with outer hashes %v, want replayable with the first and its replacement", rec.Status, outers)
	}
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[len(outers)-1] {
		t.Fatalf("applied %+v (%v), want the replacement %s", a, ok, outers[len(outers)-1])
	}
	for _, l := range r.net.CongestionReport(1 << 10).Ledgers {
		if l.SorobanBaseFee >= 200 {
			t.Fatalf("ledger %d's Soroban lane cleared at %d stroops, not below twice the base fee: the test shows nothing", l.Sequence, l.SorobanBaseFee)
		}
	}
	if _, soroban, _ := r.net.ClearingFee(a.Ledger); soroban <= 100 {
		t.Errorf("the replacement landed in ledger %d, whose Soroban lane cleared at %d stroops: not surge priced", a.Ledger, soroban)
	}
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Errorf("vault balance %d, want the one deposit of %d", got, 5*unit)
	}
}

// A quiet Soroban lane is not surge priced, although stellar-rpc's sorobanInclusionFee shows a
// contract call's fee bump at twice the base fee (its inclusion fee over two slots): the
// service's own calls fill the window, then one is held back 3 ledgers (delay_inclusion) in a
// lane that never fills. The latest ledger's Soroban phase names the base fee, so nothing is
// replaced: one outer hash on the item, no other fee bump sent, and it lands as it was.
func TestNoReplacementByFeeOfAContractCallWhileTheSorobanLaneIsQuiet(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 1, lanes: stellarsim.LaneLimits{SorobanTxs: sorobanLane}})
	r.inner.FeePercentile = 90
	r.ledger = r.ledgerWithCap(r.inner.MaxFeeStroops)
	r.orch.Ledger = r.ledger
	for i := range 3 {
		if _, err := r.transfer(fmt.Sprintf("quiet-call-%d", i), transfer.Deposit, r.wallet, 1); err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
	}
	if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3}); err != nil {
		t.Fatal(err)
	}
	before := len(r.ours())
	out, err := r.transfer("held-back-call", transfer.Deposit, r.wallet, 5)
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	rec := r.item("held-back-call")
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" {
		t.Fatalf("applied %+v (%v)", a, ok)
	}
	if outers := rec.Envelope.Outers(); len(outers) != 1 || a.FeeBumpHash != outers[0] {
		t.Fatalf("outer hashes %v, landed %s: want the first fee bump alone", outers, a.FeeBumpHash)
	}
	for _, e := range r.ours()[before:] {
		if e.Hash != a.FeeBumpHash {
			t.Errorf("sent %s (%s) besides the envelope that landed", e.Hash, e.Status)
		}
	}
	for _, l := range r.net.CongestionReport(1 << 10).Ledgers {
		if l.SorobanFull {
			t.Fatalf("ledger %d's Soroban lane was surge priced: the test shows nothing", l.Sequence)
		}
	}
}
