package stellarsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// sorobanCongested is a network with a vault host whose lanes are lanes, the profile posted
// through POST /_sim/congestion, and k ledgers closed 5 s apart on the fake clock.
func sorobanCongested(t *testing.T, lanes stellarsim.LaneLimits, profile map[string]any, k int) (*env, *stellarsim.VaultHost) {
	t.Helper()
	host := stellarsim.NewVaultHost(stellarsim.VaultOptions{MinPersistentTTL: 1000})
	e := newEnv(t, stellarsim.Options{Contracts: host, Lanes: lanes, SurgeSeed: 7})
	body, _ := json.Marshal(profile)
	resp, err := http.Post(e.n.URL()+"/_sim/congestion", "application/json", bytes.NewReader(body))
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /_sim/congestion: %v %v", err, resp)
	}
	_ = resp.Body.Close()
	for range k {
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
	}
	return e, host
}

// Background contract calls fill the Soroban lane as core fills it: 8 calls a ledger into a
// lane of 4 transactions leave some out, so the lane is surge priced at the lowest included
// inclusion fee; the classic lane stays empty; the same profile gives the same ledgers; a 10x
// spike raises the Soroban clearing fee tenfold; getFeeStats reports the calls' inclusion fees in
// sorobanInclusionFee and nothing in the classic inclusionFee.
func TestBackgroundSorobanTrafficFillsTheSorobanLane(t *testing.T) {
	profile := map[string]any{"seed": 42, "soroban_per_ledger": 8, "soroban_fee_min": 200, "soroban_fee_max": 2000,
		"spikes": []map[string]any{{"after": "50s", "for": "30s", "multiplier": 10}}}
	run := func() (*env, []stellarsim.LedgerLanes) {
		e, _ := sorobanCongested(t, stellarsim.LaneLimits{SorobanTxs: 4}, profile, 24)
		return e, e.n.CongestionReport(24).Ledgers
	}
	e, first := run()
	_, second := run()
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two runs differ:\n%+v\n%+v", first, second)
	}
	byseq := map[uint32]stellarsim.LedgerLanes{}
	for _, l := range first {
		byseq[l.Sequence] = l
		if l.ClassicOps != 0 || l.ClassicFull || l.ClassicBaseFee != 100 {
			t.Fatalf("ledger %d: the classic lane moved: %+v", l.Sequence, l)
		}
	}
	full := 0
	for s := uint32(3); s <= 25; s++ {
		l := byseq[s]
		if l.SorobanTxs > 4 {
			t.Fatalf("ledger %d took %d Soroban transactions into a lane of 4", s, l.SorobanTxs)
		}
		if l.SorobanFull {
			full++
			if l.SorobanTxs != 4 || l.SorobanBaseFee < 200 {
				t.Fatalf("ledger %d full but %+v", s, l)
			}
		}
	}
	if full < 15 {
		t.Fatalf("%d of 23 ledgers full under 8 calls a ledger into 4 slots: %+v", full, first)
	}
	// The spike runs 50 s..80 s after the profile was set: calls submitted after the closes of
	// ledgers 11..16, taken from ledger 12 on.
	base := byseq[11].SorobanBaseFee
	for s := uint32(13); s <= 17; s++ {
		if byseq[s].SorobanBaseFee < 10*base {
			t.Fatalf("ledger %d Soroban clearing fee %d during a 10x spike over %d", s, byseq[s].SorobanBaseFee, base)
		}
	}
	if byseq[25].SorobanBaseFee >= 10*base {
		t.Fatalf("Soroban clearing fee %d after the spike", byseq[25].SorobanBaseFee)
	}

	// What the last ledger's calls were charged: the clearing fee as the inclusion part, the
	// resource fee (less its refund) on top; and that is what the Soroban fee window shows.
	last := byseq[25]
	var applied int
	for _, a := range e.n.Applied() {
		if a.Ledger != 25 {
			continue
		}
		applied++
		var env xdr.TransactionEnvelope
		if err := xdr.SafeUnmarshalBase64(a.EnvelopeXDR, &env); err != nil {
			t.Fatal(err)
		}
		if a.Status != "SUCCESS" || len(a.Ops) != 1 || a.Ops[0].Type != "invoke_host_function" {
			t.Fatalf("applied %+v, want a successful contract call", a)
		}
		resource := int64(env.V1.Tx.Ext.SorobanData.ResourceFee)
		if a.FeeCharged > last.SorobanBaseFee+resource || a.FeeCharged < last.SorobanBaseFee {
			t.Fatalf("charged %d: want the clearing fee %d plus at most the resource fee %d", a.FeeCharged, last.SorobanBaseFee, resource)
		}
	}
	if int64(applied) != last.SorobanTxs {
		t.Fatalf("%d applied in ledger 25, the report says %d", applied, last.SorobanTxs)
	}
	fs, err := e.rpc.GetFeeStats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := fs.SorobanInclusionFee
	if s.TransactionCount < 40 || s.Min < 200 || int64(s.Max) < 10*base || fs.InclusionFee.TransactionCount != 0 {
		t.Fatalf("getFeeStats soroban %+v classic %+v: want the surge-priced calls apart", s, fs.InclusionFee)
	}
	t.Logf("Soroban clearing fees: before the spike %d, during %d, after %d; sorobanInclusionFee p50 %d p90 %d over %d calls",
		base, byseq[14].SorobanBaseFee, byseq[25].SorobanBaseFee, s.P50, s.P90, s.TransactionCount)
}

// The Soroban queue holds twice the lane (TxQueueLimiter): once background calls fill it, a
// contract call bidding the base fee is refused ERROR txINSUFFICIENT_FEE naming the fee that
// outbids the lowest queued call (its inclusion part, plus its own resource fee), and the
// declared instructions count too: calls declaring 3M instructions fill a lane of 9M
// instructions three at a time, whatever its transaction count.
func TestBackgroundSorobanTrafficCountsAgainstTheSorobanQueue(t *testing.T) {
	e, host := sorobanCongested(t, stellarsim.LaneLimits{SorobanTxs: 50, SorobanInstructions: 9_000_000},
		map[string]any{"seed": 3, "soroban_per_ledger": 12, "soroban_fee_min": 500, "soroban_fee_max": 500, "soroban_instructions": 3_000_000}, 3)
	for _, l := range e.n.CongestionReport(2).Ledgers {
		if l.SorobanTxs != 3 || !l.SorobanFull || l.SorobanBaseFee != 500 {
			t.Fatalf("ledger %d: %+v, want 3 calls of 3M instructions into 9M, surge priced at 500", l.Sequence, l)
		}
	}
	op := e.funded(100 * xlm)
	id, err := host.DeployVault(stellarsim.VaultSpec{Operator: op.Address()})
	if err != nil {
		t.Fatal(err)
	}
	v := &vaultEnv{env: e, host: host, operator: op, vault: id}
	call := v.invokeOp("deposit", op.Address(), 5)
	sim := v.simulate(op, call)
	if sim.Error != "" {
		t.Fatalf("simulate: %s", sim.Error)
	}
	_ = v.assemble(call, sim)
	tx := e.build(op, []txnbuild.Operation{call}, 100, 0)
	code, fee := errorFee(t, e.send(b64(t, tx)))
	if code != xdr.TransactionResultCodeTxInsufficientFee || fee != 501+sim.MinResourceFee {
		t.Fatalf("%s naming %d, want txINSUFFICIENT_FEE naming 501 + the resource fee %d", code, fee, sim.MinResourceFee)
	}
}

// Adding Soroban traffic to a profile leaves its classic traffic as it was: the classic lanes of
// the same profile with and without contract calls are the same, ledger by ledger.
func TestBackgroundSorobanTrafficLeavesTheClassicTrafficAlone(t *testing.T) {
	classic := func(p map[string]any) []stellarsim.LedgerLanes {
		e, _ := sorobanCongested(t, stellarsim.LaneLimits{ClassicOps: 10, SorobanTxs: 3}, p, 12)
		var out []stellarsim.LedgerLanes
		for _, l := range e.n.CongestionReport(12).Ledgers {
			out = append(out, stellarsim.LedgerLanes{Sequence: l.Sequence, ClassicBaseFee: l.ClassicBaseFee, ClassicFull: l.ClassicFull, ClassicOps: l.ClassicOps})
		}
		return out
	}
	alone := classic(map[string]any{"seed": 9, "per_ledger": 14, "fee_min": 100, "fee_max": 400})
	mixed := classic(map[string]any{"seed": 9, "per_ledger": 14, "fee_min": 100, "fee_max": 400, "soroban_per_ledger": 6})
	if !reflect.DeepEqual(alone, mixed) {
		t.Fatalf("classic lanes differ with Soroban traffic:\n%+v\n%+v", alone, mixed)
	}
}

// Soroban traffic needs a contract host, and its bounds are checked.
func TestBackgroundSorobanTrafficRefusesBadInput(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	if err := e.n.SetCongestion(stellarsim.Congestion{SorobanPerLedger: 2}); err == nil {
		t.Fatal("Soroban traffic accepted on a network without a contract host")
	}
	host := stellarsim.NewVaultHost(stellarsim.VaultOptions{})
	e = newEnv(t, stellarsim.Options{Contracts: host})
	for _, body := range []string{`{"soroban_per_ledger":-1}`, `{"soroban_per_ledger":2,"soroban_fee_min":50}`,
		`{"soroban_per_ledger":2,"soroban_fee_min":300,"soroban_fee_max":200}`, `{"soroban_per_ledger":2,"soroban_instructions":-5}`,
		`{"per_ledger":2,"spikes":[{"for":"1m","multiplier":2,"soroban_per_ledger":3}]}`} {
		resp, err := http.Post(e.n.URL()+"/_sim/congestion", "application/json", bytes.NewReader([]byte(body)))
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %v %v", body, err, resp)
		}
		_ = resp.Body.Close()
	}
	if err := e.n.SetCongestion(stellarsim.Congestion{SorobanPerLedger: 2}); err != nil {
		t.Fatalf("Soroban traffic on a vault host: %v", err)
	}
	// A classic profile valid before Soroban traffic existed still is, at the widest bids.
	if err := e.n.SetCongestion(stellarsim.Congestion{PerLedger: 1, FeeMax: 1<<32 - 1}); err != nil {
		t.Fatalf("classic profile with the widest bids: %v", err)
	}
}
