package stellarsim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
	"time"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// feeCharged decodes a getTransaction answer's feeCharged.
func feeCharged(t *testing.T, r protocol.GetTransactionResponse) int64 {
	t.Helper()
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ResultXDR, &res); err != nil {
		t.Fatalf("resultXdr %q: %v", r.ResultXDR, err)
	}
	return int64(res.FeeCharged)
}

// errorFee decodes a sendTransaction ERROR answer's code and feeCharged.
func errorFee(t *testing.T, r protocol.SendTransactionResponse) (xdr.TransactionResultCode, int64) {
	t.Helper()
	if r.Status != "ERROR" {
		t.Fatalf("status %s, want ERROR", r.Status)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil {
		t.Fatalf("errorResultXdr %q: %v", r.ErrorResultXDR, err)
	}
	return res.Result.Code, int64(res.FeeCharged)
}

// bid is a signed one-payment transaction from a new account at fee stroops per operation.
func (e *env) bid(fee int64) (*txnbuild.Transaction, string) {
	e.t.Helper()
	src, dst := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(src, []txnbuild.Operation{payment(dst.Address(), txnbuild.NativeAsset{}, "1")}, fee, 0)
	return tx, hashOf(e.t, tx, e.n.Passphrase())
}

func (e *env) mustPending(tx interface{ Base64() (string, error) }) {
	e.t.Helper()
	if r := e.send(b64(e.t, tx)); r.Status != "PENDING" {
		e.t.Fatalf("send: %+v", r)
	}
}

// A ledger takes the highest bids up to the classic lane's limit and charges each the lowest
// included rate; the rest stay queued and land in the next ledger at the base fee.
func TestLaneLimitTakesHighestBidsAtTheClearingFee(t *testing.T) {
	e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 3}})
	fees := []int64{100, 500, 200, 400, 300}
	hashes := map[int64]string{}
	for _, f := range fees {
		tx, h := e.bid(f)
		e.mustPending(tx)
		hashes[f] = h
	}
	e.clock.Advance(5 * time.Second)
	l := e.n.CloseLedger()
	for _, f := range []int64{300, 400, 500} {
		got := e.getTx(hashes[f])
		if got.Status != "SUCCESS" || got.Ledger != l.Sequence || feeCharged(t, got) != 300 {
			t.Fatalf("bid %d: %s in %d charged %d, want SUCCESS in %d charged 300 (the lowest included rate)",
				f, got.Status, got.Ledger, feeCharged(t, got), l.Sequence)
		}
	}
	for _, f := range []int64{100, 200} {
		if got := e.getTx(hashes[f]); got.Status != "NOT_FOUND" {
			t.Fatalf("bid %d left out of a full ledger: %s", f, got.Status)
		}
	}
	if e.n.Queued() != 2 {
		t.Fatalf("queued %d, want the 2 lower bids", e.n.Queued())
	}
	// Horizon reports the same fee charged.
	htx, err := e.horizon().TransactionDetail(hashes[500])
	if err != nil || htx.FeeCharged != 300 || htx.MaxFee != 500 {
		t.Fatalf("horizon: %v fee_charged %d max_fee %d", err, htx.FeeCharged, htx.MaxFee)
	}
	if c, _, ok := e.n.ClearingFee(l.Sequence); !ok || c != 300 {
		t.Fatalf("clearing fee %d %v", c, ok)
	}
	e.clock.Advance(5 * time.Second)
	l2 := e.n.CloseLedger()
	for _, f := range []int64{100, 200} {
		got := e.getTx(hashes[f])
		if got.Status != "SUCCESS" || got.Ledger != l2.Sequence || feeCharged(t, got) != 100 {
			t.Fatalf("bid %d: %s in %d charged %d, want the base fee in a ledger that is not full", f, got.Status, got.Ledger, feeCharged(t, got))
		}
	}
}

// A fee bump counts its inner operations plus one against the classic lane
// (FeeBumpTransactionFrame::getNumOperations) and its rate is its fee over that count.
func TestFeeBumpCountsOneMoreOperationInTheLane(t *testing.T) {
	e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 2}})
	src, dst, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(src, []txnbuild.Operation{payment(dst.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 1000})
	if err != nil {
		t.Fatal(err)
	}
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	plain, plainHash := e.bid(600)
	e.mustPending(fb)
	e.mustPending(plain)
	e.clock.Advance(5 * time.Second)
	l := e.n.CloseLedger()
	outer, _ := fb.HashHex(e.n.Passphrase())
	got := e.getTx(outer)
	// Two slots at 1,000 fill the lane; the lane was full, so its price is the lowest included
	// rate, 1,000 per operation, times 2.
	if got.Status != "SUCCESS" || got.Ledger != l.Sequence || feeCharged(t, got) != 2000 {
		t.Fatalf("fee bump: %s ledger %d charged %d", got.Status, got.Ledger, feeCharged(t, got))
	}
	if got := e.getTx(plainHash); got.Status != "NOT_FOUND" {
		t.Fatalf("plain transaction: %s, want it left queued", got.Status)
	}
}

// A full queue takes a higher bid by evicting the lowest (banned), refuses a lower one with
// txINSUFFICIENT_FEE carrying the fee it would need (banned), and until the next close a new
// transaction must beat the best evicted bid (TxQueueLimiter::canAddTx).
func TestFullQueueEvictsLowestBidsAndRefusesLowerOnes(t *testing.T) {
	// The queue holds one ledger's worth: 2 operations.
	e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 2}, QueueMultiplier: 1})
	a, aHash := e.bid(100)
	b, _ := e.bid(200)
	e.mustPending(a)
	e.mustPending(b)
	c, _ := e.bid(150)
	e.mustPending(c) // evicts a
	if r := e.send(b64(t, a)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("evicted transaction resent: %+v, want TRY_AGAIN_LATER (banned)", r)
	}
	d, _ := e.bid(120)
	code, fee := errorFee(t, e.send(b64(t, d)))
	if code != xdr.TransactionResultCodeTxInsufficientFee || fee != 151 {
		t.Fatalf("lower bid: %s feeCharged %d, want txINSUFFICIENT_FEE 151 (computeBetterFee over the 150 bid)", stellarsim.TxCodeName(code), fee)
	}
	if r := e.send(b64(t, d)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("refused transaction resent: %+v, want TRY_AGAIN_LATER (banned)", r)
	}
	// Equal to the evicted bid: refused even though nothing more needs evicting to compare.
	eq, _ := e.bid(100)
	hr, err := e.horizon().AsyncSubmitTransactionXDR(b64(t, eq))
	if err != nil || hr.TxStatus != "ERROR" {
		t.Fatalf("horizon async: %v %+v", err, hr)
	}
	var res xdr.TransactionResult
	if xdr.SafeUnmarshalBase64(hr.ErrorResultXDR, &res) != nil || res.Result.Code != xdr.TransactionResultCodeTxInsufficientFee || res.FeeCharged != 101 {
		t.Fatalf("bid equal to the evicted one over Horizon: %v %+v", err, hr)
	}
	// A fee bump at 300 per slot needs 2 slots and evicts both queued transactions.
	src, dst, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(src, []txnbuild.Operation{payment(dst.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 300})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	e.mustPending(fb)
	if e.n.Queued() != 1 {
		t.Fatalf("queued %d, want the fee bump alone", e.n.Queued())
	}
	evicted := 0
	for _, env := range e.n.Envelopes() {
		if env.Accepted && len(env.Outcome) > 7 && env.Outcome[:7] == "evicted" {
			evicted++
		}
	}
	if evicted != 3 {
		t.Fatalf("%d envelopes evicted, want 3 (100, then 150 and 200)", evicted)
	}
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	outer, _ := fb.HashHex(e.n.Passphrase())
	if got := e.getTx(outer); got.Status != "SUCCESS" || feeCharged(t, got) != 200 {
		t.Fatalf("fee bump: %s charged %d", got.Status, feeCharged(t, got))
	}
	if got := e.getTx(aHash); got.Status != "NOT_FOUND" {
		t.Fatalf("evicted transaction landed: %s", got.Status)
	}
	// After the close the evicted bids no longer bar a low one.
	low, lowHash := e.bid(100)
	e.mustPending(low)
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	if got := e.getTx(lowHash); got.Status != "SUCCESS" {
		t.Fatalf("low bid after the close: %s", got.Status)
	}
}

// getFeeStats and /fee_stats come from what ledgers charged: stellar-rpc per operation of the
// inner transaction over 10 ledgers, Horizon over operations plus one for a fee bump over 5.
func TestFeeStatsFromWhatLedgersCharged(t *testing.T) {
	e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 3}})
	for _, f := range []int64{100, 500, 200, 400, 300} {
		tx, _ := e.bid(f)
		e.mustPending(tx)
	}
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger() // 300, 300, 300 (surge priced)
	e.clock.Advance(5 * time.Second)
	l := e.n.CloseLedger() // 100, 100
	fs, err := e.rpc.GetFeeStats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	d := fs.InclusionFee
	if d.Min != 100 || d.Max != 300 || d.Mode != 300 || d.P50 != 300 || d.P20 != 100 || d.TransactionCount != 5 || d.LedgerCount != l.Sequence {
		t.Fatalf("rpc inclusionFee %+v", d)
	}
	if fs.SorobanInclusionFee.TransactionCount != 0 {
		t.Fatalf("soroban %+v", fs.SorobanInclusionFee)
	}
	h, err := e.horizon().FeeStats()
	if err != nil {
		t.Fatal(err)
	}
	if h.FeeCharged.Min != 100 || h.FeeCharged.P50 != 300 || h.FeeCharged.Max != 300 || h.MaxFee.P50 != 300 || h.MaxFee.Max != 500 ||
		h.LastLedgerBaseFee != 100 || h.LedgerCapacityUsage != 0.56 {
		t.Fatalf("horizon fee stats %+v", h)
	}
	// A fee bump of one payment is charged 2 x 100: stellar-rpc divides by the inner operation
	// (200), Horizon by two (100).
	src, dst, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(src, []txnbuild.Operation{payment(dst.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 100})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	e.mustPending(fb)
	for range 6 { // ledgers 4..9: the first two ledgers leave Horizon's 5-ledger window
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
	}
	if fs, _ = e.rpc.GetFeeStats(e.ctx); fs.InclusionFee.Max != 300 || fs.InclusionFee.TransactionCount != 6 {
		t.Fatalf("rpc after the fee bump: %+v", fs.InclusionFee)
	}
	for range 4 { // ledger 13: the surge-priced ledgers leave stellar-rpc's 10-ledger window (4..13)
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
	}
	if fs, _ = e.rpc.GetFeeStats(e.ctx); fs.InclusionFee.Max != 200 || fs.InclusionFee.TransactionCount != 1 {
		t.Fatalf("rpc fee bump: %+v, want 200 (charged 200 over 1 inner operation)", fs.InclusionFee)
	}
	if h, _ = e.horizon().FeeStats(); h.FeeCharged.Max != 100 || h.FeeCharged.Min != 100 {
		// The fee bump left Horizon's window with ledger 4: base fee everywhere.
		t.Fatalf("horizon %+v", h.FeeCharged)
	}
}

// The background profile is repeatable: two networks on the same timeline get the same
// ledgers, the lanes fill, and a spike raises the clearing fee tenfold.
func TestCongestionProfileIsRepeatableAndSpikes(t *testing.T) {
	run := func() []stellarsim.LedgerLanes {
		e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 10}, SurgeSeed: 7})
		body, _ := json.Marshal(map[string]any{"seed": 42, "per_ledger": 14, "fee_min": 100, "fee_max": 400,
			"spikes": []map[string]any{{"after": "50s", "for": "30s", "multiplier": 10}}})
		resp, err := http.Post(e.n.URL()+"/_sim/congestion", "application/json", bytes.NewReader(body))
		if err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /_sim/congestion: %v %v", err, resp)
		}
		_ = resp.Body.Close()
		for range 24 {
			e.clock.Advance(5 * time.Second)
			e.n.CloseLedger()
		}
		return e.n.CongestionReport(24).Ledgers
	}
	first, second := run(), run()
	if !reflect.DeepEqual(first, second) {
		t.Fatalf("two runs differ:\n%+v\n%+v", first, second)
	}
	// Ledgers newest first: 25 .. 2. Ledger 2 closes before any background transaction.
	byseq := map[uint32]stellarsim.LedgerLanes{}
	for _, l := range first {
		byseq[l.Sequence] = l
	}
	full := 0
	for s := uint32(3); s <= 25; s++ {
		if l := byseq[s]; l.ClassicFull {
			full++
			if l.ClassicOps != 10 || l.ClassicBaseFee <= 100 {
				t.Fatalf("ledger %d full but %+v", s, l)
			}
		}
	}
	if full < 15 {
		t.Fatalf("%d of 23 ledgers full under 14 bids of 10 slots", full)
	}
	// The spike runs 50 s..80 s after the profile was set, i.e. for transactions submitted
	// after the closes of ledgers 11..16, taken from ledger 12 on.
	base := byseq[11].ClassicBaseFee
	for s := uint32(13); s <= 17; s++ {
		if byseq[s].ClassicBaseFee < 10*base {
			t.Fatalf("ledger %d clearing fee %d during a 10x spike over %d", s, byseq[s].ClassicBaseFee, base)
		}
	}
	if byseq[25].ClassicBaseFee >= 10*base {
		t.Fatalf("clearing fee %d after the spike", byseq[25].ClassicBaseFee)
	}
}

func TestCongestionProfileRefusesBadInput(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	for _, body := range []string{`{"per_ledger":-1}`, `{"per_ledger":5,"fee_min":50}`, `{"per_ledger":5,"spikes":[{"for":"x"}]}`, `[`} {
		resp, err := http.Post(e.n.URL()+"/_sim/congestion", "application/json", bytes.NewReader([]byte(body)))
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("%s: %v %v", body, err, resp)
		}
		_ = resp.Body.Close()
	}
	if err := e.n.SetCongestion(stellarsim.Congestion{PerLedger: 1, FeeMin: 200, FeeMax: 100}); err == nil {
		t.Fatal("fee_max below fee_min accepted")
	}
}

// The Soroban lane is its own: a ledger that takes one Soroban transaction takes the higher
// inclusion bid and charges it that bid; getFeeStats reports Soroban inclusion fees apart.
func TestSorobanLaneAndInclusionFeeStats(t *testing.T) {
	host := stellarsim.NewVaultHost(stellarsim.VaultOptions{MinPersistentTTL: 1000})
	e := newEnv(t, stellarsim.Options{Contracts: host, Lanes: stellarsim.LaneLimits{SorobanTxs: 1}})
	wallet := e.funded(10 * xlm).Address()
	send := func(incl int64) string {
		op := e.funded(100 * xlm)
		id, err := host.DeployVault(stellarsim.VaultSpec{Operator: op.Address()})
		if err != nil {
			t.Fatal(err)
		}
		v := &vaultEnv{env: e, host: host, operator: op, vault: id}
		call := v.invokeOp("deposit", wallet, 5)
		sim := v.simulate(op, call)
		if sim.Error != "" {
			t.Fatalf("simulate: %s", sim.Error)
		}
		_ = v.assemble(call, sim) // sets the call's transaction data and auth
		tx := e.build(op, []txnbuild.Operation{call}, incl, 0)
		e.mustPending(tx)
		return hashOf(t, tx, e.n.Passphrase())
	}
	low, high := send(300), send(700)
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	gotHigh, gotLow := e.getTx(high), e.getTx(low)
	if gotHigh.Status != "SUCCESS" || gotLow.Status != "NOT_FOUND" {
		t.Fatalf("high %s low %s, want the higher bid alone", gotHigh.Status, gotLow.Status)
	}
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	if gotLow = e.getTx(low); gotLow.Status != "SUCCESS" {
		t.Fatalf("low bid in the next ledger: %s", gotLow.Status)
	}
	fs, err := e.rpc.GetFeeStats(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := fs.SorobanInclusionFee
	if s.TransactionCount != 2 || s.Max != 700 || s.Min != 100 || fs.InclusionFee.TransactionCount != 0 {
		t.Fatalf("soroban %+v classic %+v: want 700 (surge priced) and 100", s, fs.InclusionFee)
	}
}

// A transaction larger than the whole queue gets TRY_AGAIN_LATER, no fee would do
// (canFitWithEviction answers (false, 0)), and is banned.
func TestTransactionLargerThanTheQueueIsTryAgainLater(t *testing.T) {
	if got := stellarsim.PubnetLaneLimits.Scaled(0.01); got != (stellarsim.LaneLimits{ClassicOps: 10, SorobanTxs: 20,
		SorobanInstructions: 5_800_000, SorobanWriteEntries: 10, SorobanWriteBytes: 2868}) {
		t.Fatalf("Scaled(0.01) = %+v", got)
	}
	e := newEnv(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 1}, QueueMultiplier: 1})
	src, dst, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(src, []txnbuild.Operation{payment(dst.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 10_000})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	for i := range 2 {
		if r := e.send(b64(t, fb)); r.Status != "TRY_AGAIN_LATER" {
			t.Fatalf("send %d: %+v, want TRY_AGAIN_LATER", i, r)
		}
	}
	if e.n.Queued() != 0 {
		t.Fatalf("queued %d", e.n.Queued())
	}
	// The inner transaction alone fits.
	e.mustPending(inner)
}
