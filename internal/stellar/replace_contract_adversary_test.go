package stellar_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A contract call fee-bumped by the fee account is replaced like a payment: the same signed inner
// transaction (its declared resource fee unchanged: it is inside the signed inner transaction) in
// a new fee bump whose inclusion fee is at least 10x the queued one's (stellar-core's
// canReplaceByFee compares inclusion fees: the fee less the declared resource fee). The inner
// transaction's own fee holds that resource fee, so it is no bound on the replacement's rate per
// slot; a replacement that could not be built would leave the call outbid until it is evicted.
// The network takes the replacement in place of the queued envelope and it lands.
func TestReplaceByFeeContractCallKeepsItsResourceFee(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 1})
	ctx := context.Background()
	req := transfer.Request{OperationType: transfer.Deposit, WalletAddress: r.wallet, Amount: "3", Asset: "USDC", Stroops: 3 * unit}
	env, err := r.ledger.Prepare(ctx, req, transfer.Terms{MaxTime: r.clock.Now().Add(2 * time.Minute), MinTime: transfer.ClaimMinTime("c1")})
	if err != nil {
		t.Fatal(err)
	}
	if !env.FeeBumped() {
		t.Fatalf("a contract call on a channel is not fee-bumped: %+v", env)
	}
	// The first send is taken and queued, and nothing closes a ledger until the replacement is
	// in: the network must take it in place of the queued one.
	if res, err := r.ledger.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
		t.Fatalf("first send: %+v %v", res, err)
	}
	stellar.NameSorobanFeeForTest(r.ledger.RPCLedger, 1_000)
	next, err := r.ledger.Replace(ctx, env)
	if err != nil {
		t.Fatalf("replacing a fee-bumped contract call: %v", err)
	}
	if next.InnerHash != env.InnerHash || next.OuterHash == "" || next.OuterHash == env.OuterHash {
		t.Fatalf("replacement %s/%s of %s/%s: want the same inner transaction in a new fee bump", next.InnerHash, next.OuterHash, env.InnerHash, env.OuterHash)
	}
	oldFee, oldRes := fees(t, env.XDR)
	newFee, newRes := fees(t, next.XDR)
	if newRes != oldRes {
		t.Errorf("declared resource fee %d, want the inner transaction's %d", newRes, oldRes)
	}
	if newFee-newRes < 10*(oldFee-oldRes) {
		t.Errorf("inclusion fee %d, want at least 10x the queued %d", newFee-newRes, oldFee-oldRes)
	}
	if next.FeeStroops != newFee {
		t.Errorf("FeeStroops %d, want the fee bump's fee %d", next.FeeStroops, newFee)
	}
	next.OuterHashes = []string{env.OuterHash, next.OuterHash}
	if res, err := r.ledger.Send(ctx, next); err != nil || res.Status != transfer.SendPending {
		t.Fatalf("sending the replacement: %+v %v", res, err)
	}
	var lk transfer.Lookup
	for range 6 {
		_ = r.clock.Sleep(ctx, 5*time.Second)
		if lk, err = r.ledger.Lookup(ctx, next); err == nil && lk.Status != transfer.LookupNotFound {
			break
		}
	}
	if lk.Status != transfer.LookupSuccess || lk.Hash != next.InnerHash && lk.Hash != next.OuterHash {
		t.Fatalf("lookup %+v %v: want the replacement SUCCESS", lk, err)
	}
	r.ledger.Done(ctx, next)
}

// fees returns a fee bump's fee and its inner transaction's declared resource fee.
func fees(t *testing.T, b64 string) (fee, resource int64) {
	t.Helper()
	var e xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &e); err != nil || !e.IsFeeBump() {
		t.Fatalf("not a fee bump: %v", err)
	}
	return e.FeeBumpFee(), int64(e.FeeBump.Tx.InnerTx.V1.Tx.Ext.SorobanData.ResourceFee)
}
