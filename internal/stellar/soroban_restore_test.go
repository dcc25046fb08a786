package stellar_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Archived vault balances. Since protocol 23 a call restores the archived entries its
// transaction data marks (archivedSorobanEntries), at a higher resource fee, and
// simulateTransaction answers no restorePreamble; a node that still answers one gets an explicit
// RestoreFootprint first.

// inclusionFee is what the rig's envelopes offer per operation slot (the base fee; no fee stats).
const inclusionFee = 100

// simulateCall asks the rig's RPC, through rpcclient, to simulate the vault's call fn(wallet,
// units) from the vault account, as the service's draft does.
func (r *contractRig) simulateCall(fn, wallet string, units int64) protocol.SimulateTransactionResponse {
	r.t.Helper()
	contract, err := stellarsim.ScAddress(r.contract)
	if err != nil {
		r.t.Fatal(err)
	}
	who, err := stellarsim.ScAddress(wallet)
	if err != nil {
		r.t.Fatal(err)
	}
	amount := xdr.Int128Parts{Lo: xdr.Uint64(units * unit)}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: r.vault}, IncrementSequenceNum: true,
		Operations: []txnbuild.Operation{&txnbuild.InvokeHostFunction{SourceAccount: r.vault,
			HostFunction: xdr.HostFunction{Type: xdr.HostFunctionTypeHostFunctionTypeInvokeContract, InvokeContract: &xdr.InvokeContractArgs{
				ContractAddress: contract, FunctionName: xdr.ScSymbol(fn),
				Args: xdr.ScVec{{Type: xdr.ScValTypeScvAddress, Address: &who}, {Type: xdr.ScValTypeScvI128, I128: &amount}},
			}}}},
		BaseFee:       txnbuild.MinBaseFee,
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, r.clock.Now().Unix()+60)},
	})
	if err != nil {
		r.t.Fatal(err)
	}
	txXDR, err := tx.Base64()
	if err != nil {
		r.t.Fatal(err)
	}
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer func() { _ = c.Close() }()
	sim, err := c.SimulateTransaction(context.Background(), protocol.SimulateTransactionRequest{Transaction: txXDR})
	if err != nil || sim.Error != "" {
		r.t.Fatalf("simulateTransaction: %v %s", err, sim.Error)
	}
	return sim
}

// archivedIn is the simulation's archivedSorobanEntries.
func archivedIn(t *testing.T, sim protocol.SimulateTransactionResponse) []xdr.Uint32 {
	t.Helper()
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	if data.Ext.V != 1 || data.Ext.ResourceExt == nil {
		return nil
	}
	return data.Ext.ResourceExt.ArchivedSorobanEntries
}

// landed reads, through rpcclient's getTransaction, the fee charged for the transaction hash and
// the Soroban transaction data of its envelope (base64).
func (r *contractRig) landed(hash string) (feeCharged int64, sorobanData string) {
	r.t.Helper()
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer func() { _ = c.Close() }()
	tx, err := c.GetTransaction(context.Background(), protocol.GetTransactionRequest{Hash: hash})
	if err != nil || tx.Status != protocol.TransactionStatusSuccess {
		r.t.Fatalf("getTransaction %s: %+v %v", hash, tx, err)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(tx.ResultXDR, &res); err != nil {
		r.t.Fatal(err)
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(tx.EnvelopeXDR, &env); err != nil {
		r.t.Fatalf("envelope: %v", err)
	}
	inner := env.V1
	if env.FeeBump != nil {
		inner = env.FeeBump.Tx.InnerTx.V1
	}
	if inner == nil || inner.Tx.Ext.SorobanData == nil {
		r.t.Fatalf("envelope without Soroban data: %+v", env)
	}
	data, err := xdr.MarshalBase64(*inner.Tx.Ext.SorobanData)
	if err != nil {
		r.t.Fatal(err)
	}
	return int64(res.FeeCharged), data
}

// The archived balance is restored by the withdrawal itself: one transaction, the simulation's
// transaction data as is (archived entry marked, its larger resource fee), charged the resource
// fee plus the inclusion fee; a plain call afterwards costs less.
func TestContractArchivedBalanceRestoredByTheCall(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 9)
	if err := r.host.ArchiveBalance(r.contract, r.wallet); err != nil {
		t.Fatal(err)
	}
	sim := r.simulateCall("withdraw", r.wallet, 4)
	if sim.RestorePreamble != nil || len(archivedIn(t, sim)) != 1 {
		t.Fatalf("protocol 23 simulation: preamble %+v, archived %v", sim.RestorePreamble, archivedIn(t, sim))
	}
	before, sent := len(r.net.Applied()), len(r.net.Envelopes())
	out := r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Fatalf("balance %d", got)
	}
	if b, _ := r.host.Balance(r.contract, r.wallet); b.Archived {
		t.Fatal("still archived")
	}
	applied := r.net.Applied()[before:]
	if len(r.net.Envelopes()) != sent+1 || len(applied) != 1 || applied[0].Hash != out.TransactionHash ||
		applied[0].Ops[0].Type != "invoke_host_function" || applied[0].Status != "SUCCESS" {
		t.Fatalf("want the call alone, applied %+v", applied)
	}
	restoreFee, data := r.landed(out.TransactionHash)
	if data != sim.TransactionDataXDR {
		t.Errorf("the envelope's Soroban data is not the simulation's:\n%s\n%s", data, sim.TransactionDataXDR)
	}
	// The simulation's resource fee is exact, so nothing of it is refunded.
	if restoreFee != sim.MinResourceFee+inclusionFee || applied[0].FeeCharged != restoreFee {
		t.Errorf("fee charged %d (network %d), want resource fee %d + inclusion fee %d",
			restoreFee, applied[0].FeeCharged, sim.MinResourceFee, inclusionFee)
	}
	if lk, err := r.ledger.Lookup(context.Background(), transfer.Envelope{InnerHash: out.TransactionHash}); err != nil ||
		lk.Status != transfer.LookupSuccess || lk.FeeChargedStroops != restoreFee {
		t.Errorf("the ledger's lookup: %+v %v, want fee charged %d", lk, err, restoreFee)
	}

	plainSim := r.simulateCall("withdraw", r.wallet, 4)
	if len(archivedIn(t, plainSim)) != 0 {
		t.Fatal("the restored balance is still marked archived")
	}
	out = r.mustTransfer("withdraw-0002", transfer.Withdraw, r.wallet, 4)
	plainFee, _ := r.landed(out.TransactionHash)
	if plainFee != plainSim.MinResourceFee+inclusionFee || plainFee >= restoreFee {
		t.Errorf("plain call charged %d, want %d and less than the restoring call's %d", plainFee, plainSim.MinResourceFee+inclusionFee, restoreFee)
	}
	t.Logf("fee charged: restoring call %d stroops (resource fee %d), plain call %d stroops (resource fee %d)",
		restoreFee, sim.MinResourceFee, plainFee, plainSim.MinResourceFee)
}

// Over MAX_FEE_STROOPS: the restoring call is refused before anything is sent (RESTORE_REQUIRED,
// retryable, the fee needed and the cap in the detail); at exactly the fee needed the same key
// goes through. A plain call over the cap is SIMULATION_ERROR.
func TestContractArchivedBalanceOverFeeCapRefusedBeforeSending(t *testing.T) {
	r := newContractRig(t, stellar.ContractConfig{})
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 9)
	if err := r.host.ArchiveBalance(r.contract, r.wallet); err != nil {
		t.Fatal(err)
	}
	need := r.simulateCall("withdraw", r.wallet, 4).MinResourceFee + inclusionFee
	r.orch.Ledger = r.ledgerWithCap(need - 1)
	sent := len(r.net.Envelopes())
	_, err := r.transfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	p := problemOf(t, err)
	if p.Code != transfer.CodeRestoreRequired || p.Classification != transfer.Retryable || p.Kind != transfer.KindUnavailable ||
		!strings.Contains(p.Detail, "needs a fee of "+itoa(need)+" stroops") ||
		!strings.Contains(p.Detail, "MAX_FEE_STROOPS "+itoa(need-1)) {
		t.Fatalf("problem %+v", p)
	}
	if len(r.net.Envelopes()) != sent {
		t.Fatal("something was sent")
	}
	if b, _ := r.host.Balance(r.contract, r.wallet); !b.Archived || b.Amount != 9*unit {
		t.Fatalf("balance %+v", b)
	}

	r.orch.Ledger = r.ledgerWithCap(need)
	out := r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if fee, _ := r.landed(out.TransactionHash); fee != need || len(r.net.Envelopes()) != sent+1 || r.vaultBalance(r.wallet) != 5*unit {
		t.Fatalf("fee %d (want %d), %d envelopes sent, balance %d", fee, need, len(r.net.Envelopes())-sent, r.vaultBalance(r.wallet))
	}

	plainNeed := r.simulateCall("withdraw", r.wallet, 1).MinResourceFee + inclusionFee
	r.orch.Ledger = r.ledgerWithCap(plainNeed - 1)
	_, err = r.transfer("withdraw-0002", transfer.Withdraw, r.wallet, 1)
	if p := problemOf(t, err); p.Code != transfer.CodeSimulationError || p.Classification != transfer.Retryable ||
		!strings.Contains(p.Detail, "needs a fee of "+itoa(plainNeed)+" stroops") {
		t.Fatalf("plain call over the cap: %+v", p)
	}
	if len(r.net.Envelopes()) != sent+1 {
		t.Fatal("the plain call over the cap was sent")
	}
}

// With channel accounts the restoring call is fee-bumped by the fee account: MAX_FEE_STROOPS
// covers the resource fee and two inclusion fees (the bump counts as an operation).
func TestContractArchivedBalanceRestoredByTheCallWithChannels(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 2})
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 9)
	if err := r.host.ArchiveBalance(r.contract, r.wallet); err != nil {
		t.Fatal(err)
	}
	sim := r.simulateCall("withdraw", r.wallet, 4)
	need := sim.MinResourceFee + 2*inclusionFee
	r.orch.Ledger = r.ledgerWithCap(need - 1)
	sent := len(r.net.Envelopes())
	_, err := r.transfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if p := problemOf(t, err); p.Code != transfer.CodeRestoreRequired || p.Classification != transfer.Retryable ||
		!strings.Contains(p.Detail, "needs a fee of "+itoa(need)+" stroops (resource fee "+itoa(sim.MinResourceFee)+" + inclusion fee 200)") {
		t.Fatalf("problem %+v", p)
	}
	if len(r.net.Envelopes()) != sent {
		t.Fatal("something was sent")
	}
	r.orch.Ledger = r.ledgerWithCap(need)
	before := len(r.net.Applied())
	out := r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	applied := r.net.Applied()[before:]
	if len(applied) != 1 || applied[0].FeeBumpHash == "" || applied[0].Status != "SUCCESS" || r.vaultBalance(r.wallet) != 5*unit {
		t.Fatalf("applied %+v, balance %d", applied, r.vaultBalance(r.wallet))
	}
	fee, data := r.landed(out.TransactionHash)
	if fee != need || data != sim.TransactionDataXDR {
		t.Errorf("fee charged %d, want %d; Soroban data the simulation's: %v", fee, need, data == sim.TransactionDataXDR)
	}
}

// A node that answers a restorePreamble (a network before protocol 23; stellarsim's
// Options.Protocol22Restore) gets an explicit RestoreFootprint first. A restore over MAX_FEE_STROOPS is refused
// before it is sent; when the network refuses it, the transfer is RESTORE_REQUIRED (retryable,
// nothing landed); retried, the same key restores and withdraws in one request.
func TestContractExplicitRestoreWhenTheNodeAsksForIt(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{protocol22Restore: true})
	r.mustTransfer("deposit-0001", transfer.Deposit, r.wallet, 9)
	if err := r.host.ArchiveBalance(r.contract, r.wallet); err != nil {
		t.Fatal(err)
	}
	pre := r.simulateCall("withdraw", r.wallet, 4).RestorePreamble
	if pre == nil {
		t.Fatal("no restorePreamble from the protocol 22 node")
	}
	need := pre.MinResourceFee + inclusionFee
	r.orch.Ledger = r.ledgerWithCap(need - 1)
	sent := len(r.net.Envelopes())
	_, err := r.transfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if p := problemOf(t, err); p.Code != transfer.CodeRestoreRequired || p.Classification != transfer.Retryable ||
		!strings.Contains(p.Detail, "needs a fee of "+itoa(need)+" stroops") || len(r.net.Envelopes()) != sent {
		t.Fatalf("restore over the cap: %+v, %d envelopes sent", p, len(r.net.Envelopes())-sent)
	}
	r.orch.Ledger = r.ledger
	if err := r.net.AddFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER"}); err != nil {
		t.Fatal(err)
	}
	before := len(r.net.Applied())
	_, err = r.transfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if p := problemOf(t, err); p.Code != transfer.CodeRestoreRequired || p.Classification != transfer.Retryable || p.Kind != transfer.KindUnavailable {
		t.Fatalf("problem %+v", p)
	}
	if len(r.net.Applied()) != before || r.vaultBalance(r.wallet) != 9*unit {
		t.Fatal("something landed")
	}
	r.mustTransfer("withdraw-0001", transfer.Withdraw, r.wallet, 4)
	if got := r.vaultBalance(r.wallet); got != 5*unit {
		t.Fatalf("balance %d", got)
	}
	applied := r.net.Applied()[before:]
	if len(applied) != 2 || applied[0].Ops[0].Type != "restore_footprint" || applied[0].Status != "SUCCESS" ||
		applied[1].Ops[0].Type != "invoke_host_function" || applied[1].Status != "SUCCESS" {
		t.Fatalf("applied %+v", applied)
	}
	if b, _ := r.host.Balance(r.contract, r.wallet); b.Archived {
		t.Fatal("still archived")
	}
}
