package stellar_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Contract calls paying through a congested Soroban lane: the contract rig (the service's own
// stellar package over rpcclient, the vault contract, minidyn, one virtual clock) with channel
// accounts fee-bumped by the fee account, on a network whose Soroban lane takes sorobanLane
// transactions a ledger (a fee bump counts two) while the network's background accounts submit
// contract calls of their own (stellarsim.Congestion.SorobanPerLedger).

// sorobanLane is the congested rig's Soroban lane: transactions per ledger (its queue holds
// twice that). Others submit one more call than that a ledger, so every ledger leaves one out
// (surge priced) and the queue, whose leftovers age out after 4 ledgers, is not always full.
const sorobanLane = 7

// sorobanSurged is a contract rig whose Soroban lane has been surge priced for 12 ledgers by
// others' contract calls, sorobanLane+1 a ledger bidding 200 to 2,000 stroops of inclusion fee, so
// getFeeStats's sorobanInclusionFee shows it. The service bids that window's p90.
func sorobanSurged(t *testing.T) *contractRig {
	t.Helper()
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 1, lanes: stellarsim.LaneLimits{SorobanTxs: sorobanLane}})
	r.inner.FeePercentile = 90
	r.ledger = r.ledgerWithCap(r.inner.MaxFeeStroops)
	r.orch.Ledger = r.ledger
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 21, SorobanPerLedger: sorobanLane + 1, SorobanFeeMin: 200, SorobanFeeMax: 2_000}); err != nil {
		t.Fatal(err)
	}
	for range 12 {
		_ = r.clock.Sleep(context.Background(), 5*time.Second)
	}
	_ = r.clock.Sleep(context.Background(), contractLagMax)
	surged := 0
	for _, l := range r.net.CongestionReport(12).Ledgers {
		if l.SorobanFull && l.SorobanBaseFee > 100 {
			surged++
		}
	}
	if surged < 8 {
		t.Fatalf("%d of 12 ledgers surge priced in the Soroban lane: %+v", surged, r.net.CongestionReport(12).Ledgers)
	}
	return r
}

// foreignCalls are contract calls the test submits as other users would, through rpcclient:
// hashes, to leave out of the service's envelopes.
type foreignCalls struct {
	mu     sync.Mutex
	hashes map[string]bool
}

// sorobanSpikeNow starts a Soroban fee spike at once: k contract calls from new accounts (each
// the operator of a vault of its own, simulated and sent through rpcclient), each bidding mult x
// the Soroban clearing fee of the last ledger, enter the queue now (evicting the lowest bids if
// it is full); and for two minutes from the next close the background calls, perLedger a
// ledger, bid at least the Soroban clearing fee of that next ledger, which those calls raise.
func (r *contractRig) sorobanSpikeNow(f *foreignCalls, mult int64, k, perLedger int) {
	r.t.Helper()
	_, soroban, _ := r.net.ClearingFee(r.net.LatestLedger().Sequence)
	bid := mult * max(soroban, 100)
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer func() { _ = c.Close() }()
	ctx := context.Background()
	for range k {
		h, err := r.foreignCall(ctx, c, bid)
		if err != nil {
			r.t.Error(err)
			return
		}
		f.mu.Lock()
		f.hashes[h] = true
		f.mu.Unlock()
	}
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 22, SorobanPerLedger: sorobanLane + 1, SorobanFeeMin: 200, SorobanFeeMax: 2_000,
		Spikes: []stellarsim.Spike{{For: 2 * time.Minute, Multiplier: 1, SorobanPerLedger: perLedger}}}); err != nil {
		r.t.Error(err)
	}
}

// foreignCall deploys a vault for a new account and sends its deposit, simulated through c,
// bidding inclusion stroops on top of the resource fee; it returns the hash.
func (r *contractRig) foreignCall(ctx context.Context, c *rpcclient.Client, inclusion int64) (string, error) {
	kp, err := r.net.CreateKeypair(1_000 * unit)
	if err != nil {
		return "", err
	}
	vault, err := r.host.DeployVault(stellarsim.VaultSpec{Operator: kp.Address()})
	if err != nil {
		return "", err
	}
	contract, err := stellarsim.ScAddress(vault)
	if err != nil {
		return "", err
	}
	who, err := stellarsim.ScAddress(kp.Address())
	if err != nil {
		return "", err
	}
	amount := xdr.Int128Parts{Lo: 1}
	op := &txnbuild.InvokeHostFunction{HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract,
		InvokeContract: &xdr.InvokeContractArgs{ContractAddress: contract, FunctionName: "deposit",
			Args: xdr.ScVec{{Type: xdr.ScValTypeScvAddress, Address: &who}, {Type: xdr.ScValTypeScvI128, I128: &amount}}}}}
	acct, err := c.LoadAccount(ctx, kp.Address())
	if err != nil {
		return "", err
	}
	params := txnbuild.TransactionParams{SourceAccount: acct, IncrementSequenceNum: true, Operations: []txnbuild.Operation{op},
		BaseFee: txnbuild.MinBaseFee, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, r.clock.Now().Add(5*time.Minute).Unix())}}
	draft, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", err
	}
	draftXDR, err := draft.Base64()
	if err != nil {
		return "", err
	}
	sim, err := c.SimulateTransaction(ctx, protocol.SimulateTransactionRequest{Transaction: draftXDR})
	if err != nil || sim.Error != "" || len(sim.Results) != 1 || sim.Results[0].AuthXDR == nil {
		r.t.Fatalf("simulate a foreign call: %v %s", err, sim.Error)
	}
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		return "", err
	}
	for _, a := range *sim.Results[0].AuthXDR {
		var entry xdr.SorobanAuthorizationEntry
		if err := xdr.SafeUnmarshalBase64(a, &entry); err != nil {
			return "", err
		}
		op.Auth = append(op.Auth, entry)
	}
	op.Ext = xdr.TransactionExt{V: 1, SorobanData: &data}
	if params.SourceAccount, err = c.LoadAccount(ctx, kp.Address()); err != nil {
		return "", err
	}
	params.BaseFee = inclusion
	tx, err := txnbuild.NewTransaction(params)
	if err != nil {
		return "", err
	}
	if tx, err = tx.Sign(r.net.Passphrase(), kp); err != nil {
		return "", err
	}
	b64, err := tx.Base64()
	if err != nil {
		return "", err
	}
	if _, err := c.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: b64}); err != nil {
		return "", err
	}
	return tx.HashHex(r.net.Passphrase())
}

// serviceSent is every envelope the rig's service sent: background traffic and the foreign
// calls left out, by hash.
func (r *contractRig) serviceSent(f *foreignCalls) map[string]stellarsim.ReceivedEnvelope {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]stellarsim.ReceivedEnvelope{}
	for _, e := range r.ours() {
		if !f.hashes[e.Hash] {
			out[e.Hash] = e
		}
	}
	return out
}

// logSent logs what the service sent and the last ledgers' Soroban lanes.
func (r *contractRig) logSent(f *foreignCalls) {
	for _, e := range r.serviceSent(f) {
		var env xdr.TransactionEnvelope
		fee, res := int64(0), int64(0)
		if xdr.SafeUnmarshalBase64(e.EnvelopeXDR, &env) == nil && env.IsFeeBump() && env.FeeBump.Tx.InnerTx.V1.Tx.Ext.SorobanData != nil {
			fee, res = env.FeeBumpFee(), int64(env.FeeBump.Tx.InnerTx.V1.Tx.Ext.SorobanData.ResourceFee)
		}
		r.t.Logf("sent at %s (ledger %d): %s %s %s, fee %d (resource %d): %s", e.At.Format("15:04:05.0"), e.LatestLedger, e.Hash[:8], e.Status, e.Code, fee, res, e.Outcome)
	}
	for _, l := range r.net.CongestionReport(10).Ledgers {
		r.t.Logf("ledger %d: Soroban clearing %d, %d transactions, full %v", l.Sequence, l.SorobanBaseFee, l.SorobanTxs, l.SorobanFull)
	}
}

// item reads the transfer's item from the store.
func (r *contractRig) item(key string) transfer.Record {
	r.t.Helper()
	rec, err := r.orch.Store.Get(context.Background(), transfer.StoreKey(r.wallet, key))
	if err != nil {
		r.t.Fatalf("item %s: %v", key, err)
	}
	return rec
}

// A Soroban fee spike right after the first send outbids a contract call's fee bump: three calls
// of others bid 10x the Soroban clearing fee at once, and from the next close others' calls, 6 a
// ledger into a lane of 7, bid at least the clearing fee those raised. The fee bump (two of the
// lane's transactions) stays queued, left out of every surge-priced ledger, and two ledgers on
// the service wraps the same signed inner transaction (its declared resource fee inside it,
// unchanged) in a new fee bump at 10x its inclusion fee, records the new outer hash and sends it;
// the network takes it in place of the queued one (canReplaceByFee) and it lands within the
// budget, charged the Soroban clearing fee of its ledger for its two slots plus its resource fee
// less the refund.
func TestReplaceByFeeContractCallThroughACongestedSorobanLane(t *testing.T) {
	r := sorobanSurged(t)
	f := &foreignCalls{hashes: map[string]bool{}}
	var once sync.Once
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			once.Do(func() { r.sorobanSpikeNow(f, 10, 3, sorobanLane-1) })
		}
		return nil
	}
	start := r.clock.Now()
	out, err := r.transfer("soroban-spiked-1", transfer.Deposit, r.wallet, 5)
	if err != nil {
		r.logSent(f)
		t.Fatalf("transfer: %v", err)
	}
	if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
		t.Errorf("landed after %v, past the budget", took)
	}
	rec := r.item("soroban-spiked-1")
	r.logSent(f)
	outers := rec.Envelope.Outers()
	if len(outers) < 2 || rec.Status != transfer.StatusReplayable || rec.Envelope.InnerHash != out.TransactionHash {
		t.Fatalf("item %s with outer hashes %v (inner %s), want replayable with the first and its replacement, answered with the inner hash %s",
			rec.Status, outers, rec.Envelope.InnerHash, out.TransactionHash)
	}
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[len(outers)-1] {
		t.Fatalf("applied %+v (%v), want the replacement %s", a, ok, outers[len(outers)-1])
	}
	sent := r.serviceSent(f)
	for i, h := range outers {
		if _, ok := sent[h]; !ok {
			t.Errorf("outer hash %d (%s) on the item was never sent", i, h)
		}
	}
	first := sent[outers[0]]
	if !first.Accepted || !strings.Contains(first.Outcome, "replaced in queue") {
		t.Errorf("first fee bump %s: %q, want queued and then replaced in the queue by fee", outers[0], first.Outcome)
	}
	for _, l := range r.net.CongestionReport(20).Ledgers {
		if l.Sequence > first.LatestLedger && l.Sequence < a.Ledger && !l.SorobanFull {
			t.Errorf("ledger %d left the first fee bump out without being full: %+v", l.Sequence, l)
		}
	}
	firstFee, firstRes := fees(t, first.EnvelopeXDR)
	lastFee, lastRes := fees(t, sent[outers[len(outers)-1]].EnvelopeXDR)
	if lastRes != firstRes {
		t.Errorf("replacement declares a resource fee of %d, the first %d: want the inner transaction's, unchanged", lastRes, firstRes)
	}
	if lastFee-lastRes < 10*(firstFee-firstRes) {
		t.Errorf("replacement's inclusion fee %d, want at least 10 x the first's %d", lastFee-lastRes, firstFee-firstRes)
	}
	_, clearing, _ := r.net.ClearingFee(a.Ledger)
	if a.FeeCharged < 2*clearing || a.FeeCharged > 2*clearing+lastRes {
		t.Errorf("charged %d in ledger %d: want the Soroban clearing fee %d for two slots plus at most the resource fee %d", a.FeeCharged, a.Ledger, clearing, lastRes)
	}
	if rec.Result.FeeChargedStroops != a.FeeCharged {
		t.Errorf("stored fee %d, the network charged %d", rec.Result.FeeChargedStroops, a.FeeCharged)
	}
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Errorf("vault balance %d, want the one deposit of %d", got, 5*unit)
	}
	t.Logf("landed at ledger %d after %v: inclusion fee %d then %d (resource fee %d), charged %d (Soroban clearing %d per slot); %d outer envelopes",
		a.Ledger, r.clock.Now().Sub(start), firstFee-firstRes, lastFee-lastRes, lastRes, a.FeeCharged, clearing, len(outers))
}

// A contract call's replace-by-fee whose FIRST outer envelope lands after all: the replacement
// is recorded and sent, but the network does not take it (TRY_AGAIN_LATER, as a node that never
// saw it), and the first fee bump, held back two ledgers, is included. The item is settled
// replayable with the inner hash and the first envelope's ledger and fee, both outer hashes stay
// on it, the vault is credited once, and the same key replays it.
func TestReplaceByFeeContractCallFirstEnvelopeLandsAfterAll(t *testing.T) {
	r := sorobanSurged(t)
	f := &foreignCalls{hashes: map[string]bool{}}
	if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2}); err != nil {
		t.Fatal(err)
	}
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepReplacing {
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER", Count: 20}); err != nil {
				t.Error(err)
			}
		}
		return nil
	}
	out, err := r.transfer("soroban-first-wins-1", transfer.Deposit, r.wallet, 5)
	if err != nil {
		r.logSent(f)
		t.Fatalf("transfer: %v", err)
	}
	rec := r.item("soroban-first-wins-1")
	outers := rec.Envelope.Outers()
	if len(outers) < 2 || rec.Status != transfer.StatusReplayable {
		r.logSent(f)
		t.Fatalf("item %s with outer hashes %v, want replayable holding the first and its replacement", rec.Status, outers)
	}
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != outers[0] {
		t.Fatalf("applied %+v (%v), want the FIRST fee bump %s", a, ok, outers[0])
	}
	if out.TransactionHash != rec.Envelope.InnerHash || rec.Result.TransactionHash != rec.Envelope.InnerHash ||
		rec.Result.Ledger != a.Ledger || rec.Result.FeeChargedStroops != a.FeeCharged {
		t.Errorf("answered %s, stored %+v; want the inner hash %s, ledger %d, fee %d", out.TransactionHash, rec.Result, rec.Envelope.InnerHash, a.Ledger, a.FeeCharged)
	}
	sent := r.serviceSent(f)
	if e, ok := sent[outers[1]]; !ok || e.Accepted {
		t.Errorf("replacement %s: %+v, want sent and not taken", outers[1], e)
	}
	firstFee, firstRes := fees(t, sent[outers[0]].EnvelopeXDR)
	if nextFee, nextRes := fees(t, sent[outers[1]].EnvelopeXDR); nextRes != firstRes || nextFee-nextRes < 10*(firstFee-firstRes) {
		t.Errorf("replacement fee %d (resource %d) of the first %d (resource %d): want the same resource fee and 10x the inclusion fee", nextFee, nextRes, firstFee, firstRes)
	}
	again, err := r.transfer("soroban-first-wins-1", transfer.Deposit, r.wallet, 5)
	if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash || again.Ledger != a.Ledger {
		t.Fatalf("replay: %+v, %v; want %s at ledger %d, replayed", again, err, out.TransactionHash, a.Ledger)
	}
	paid := 0
	for _, ap := range r.net.Applied() {
		if ap.Hash == rec.Envelope.InnerHash {
			paid++
		}
	}
	if paid != 1 {
		t.Errorf("the transfer applied %d times", paid)
	}
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Errorf("vault balance %d, want the one deposit of %d", got, 5*unit)
	}
	_, clearing, _ := r.net.ClearingFee(a.Ledger)
	t.Logf("the first fee bump landed at ledger %d: inclusion fee %d, charged %d (Soroban clearing %d per slot)", a.Ledger, firstFee-firstRes, a.FeeCharged, clearing)
}
