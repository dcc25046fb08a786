package stellarsim_test

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Core's answers to a source account that has a transaction queued
// (TransactionQueue::canAdd): an older sequence number is ERROR txBAD_SEQ,
// a later one TRY_AGAIN_LATER, through RPC and Horizon alike.
func TestQueuedSourceOlderSequenceIsBadSeq(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(100*xlm), e.funded(100*xlm)
	first := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	e.send(b64(t, first))
	e.n.CloseLedger()
	queued := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	if r := e.send(b64(t, queued)); r.Status != "PENDING" {
		t.Fatalf("queued: %+v", r)
	}
	older := e.buildSeq(a, first.SequenceNumber()-1, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "3")}, 0, 0)
	r := e.send(b64(t, older))
	if code, _ := errorCode(t, r); code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("older sequence number over RPC: %s", stellarsim.TxCodeName(code))
	}
	hr, err := e.horizon().AsyncSubmitTransactionXDR(b64(t, older))
	var res xdr.TransactionResult
	if err != nil || hr.TxStatus != "ERROR" || xdr.SafeUnmarshalBase64(hr.ErrorResultXDR, &res) != nil ||
		res.Result.Code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("older sequence number over Horizon: %v %+v", err, hr)
	}
	later := e.buildSeq(a, queued.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "4")}, 0, 0)
	if r := e.send(b64(t, later)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("later sequence number: %+v", r)
	}
	e.n.CloseLedger()
	if n := len(e.n.Applied()); n != 2 {
		t.Fatalf("applied %d, want the first and the queued one", n)
	}
	envs := e.n.Envelopes()
	var badSeq int
	for _, en := range envs {
		if en.Code == "txBAD_SEQ" {
			badSeq++
		}
	}
	if badSeq != 2 {
		t.Fatalf("recorded %d txBAD_SEQ answers, want 2 (RPC and Horizon): %+v", badSeq, envs)
	}
}

// The inner transaction of a queued fee bump, sent on its own, is the
// queued transaction's duplicate (TransactionQueue isDuplicateTx compares the
// fee bump's inner hash): DUPLICATE over RPC, 409 over Horizon, and it lands
// once, inside the fee bump.
func TestInnerOfQueuedFeeBumpIsDuplicate(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = fb.Sign(e.n.Passphrase(), payer); err != nil {
		t.Fatal(err)
	}
	if r := e.send(b64(t, fb)); r.Status != "PENDING" {
		t.Fatalf("fee bump: %+v", r)
	}
	if r := e.send(b64(t, inner)); r.Status != "DUPLICATE" {
		t.Fatalf("inner transaction over RPC: %+v, want DUPLICATE", r)
	}
	hr, err := e.horizon().AsyncSubmitTransactionXDR(b64(t, inner))
	if err != nil || hr.TxStatus != "DUPLICATE" {
		t.Fatalf("inner transaction over Horizon: %v %+v, want DUPLICATE", err, hr)
	}
	e.n.CloseLedger()
	applied := e.n.Applied()
	outer, _ := fb.HashHex(e.n.Passphrase())
	if len(applied) != 1 || applied[0].FeeBumpHash != outer {
		t.Fatalf("applied %+v, want the fee bump once", applied)
	}
}

// Core keeps classic and Soroban transactions in two queues with one transaction per source
// across both (HerderImpl::recvTransaction): a classic transaction from a source whose contract
// call is queued gets TRY_AGAIN_LATER, even with an older sequence number, before any queue check.
func TestOtherKindQueuedIsTryAgainLater(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := v.funded(10 * xlm)
	op := v.invokeOp("deposit", wallet.Address(), 5)
	sim := v.simulate(v.operator, op)
	if sim.Error != "" {
		t.Fatalf("simulate: %s", sim.Error)
	}
	call := v.assemble(op, sim)
	if r := v.send(b64(t, call)); r.Status != "PENDING" {
		t.Fatalf("contract call: %+v", r)
	}
	older := v.buildSeq(v.operator, call.SequenceNumber()-1, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	if r := v.send(b64(t, older)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("classic transaction with an older sequence number: %+v, want TRY_AGAIN_LATER", r)
	}
	sameKind := v.buildSeq(v.operator, call.SequenceNumber()-1, []txnbuild.Operation{op}, 0, 0)
	r := v.send(b64(t, sameKind))
	if code, _ := errorCode(t, r); code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("contract call with an older sequence number: %s, want txBAD_SEQ", stellarsim.TxCodeName(code))
	}
}
