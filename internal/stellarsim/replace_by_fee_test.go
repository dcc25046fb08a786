package stellarsim_test

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Replace-by-fee as stellar-core's transaction queue does it (src/herder/TransactionQueue.cpp),
// through the official RPC client.

// A replacement keeps the age of the transaction it replaced: core's age is the source
// account's (AccountState.mAge), and TransactionQueue::tryAdd puts the replacement in the
// account's slot without touching it. So a fee bump queued two ledgers ago and replaced now is
// evicted and banned at the same close the first one would have been, TRANSACTION_QUEUE_TIMEOUT_LEDGERS
// (4) after the first was queued, not 4 after the replacement. Both are kept out of the ledgers
// by a delay_inclusion fault.
func TestReplacementKeepsTheQueuedAge(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Count: 2, Ledgers: 20}); err != nil {
		t.Fatal(err)
	}
	first := e.feeBump(inner, payer, 100)
	if r := e.send(b64(t, first)); r.Status != "PENDING" {
		t.Fatalf("first: %+v", r)
	}
	e.n.CloseLedger()
	e.n.CloseLedger()
	second := e.feeBump(inner, payer, 1_000)
	if r := e.send(b64(t, second)); r.Status != "PENDING" {
		t.Fatalf("replacement: %+v", r)
	}
	e.n.CloseLedger()
	if e.n.Queued() != 1 {
		t.Fatalf("after the third close: %d queued, want the replacement", e.n.Queued())
	}
	e.n.CloseLedger()
	if e.n.Queued() != 0 {
		t.Fatalf("after the fourth close since the first was queued: %d queued, want the replacement evicted with the age it inherited", e.n.Queued())
	}
	// Evicted means banned: the replacement itself is refused TRY_AGAIN_LATER.
	if r := e.send(b64(t, second)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("re-send of the evicted replacement: %+v, want TRY_AGAIN_LATER (banned)", r)
	}
}

// The replaced fee bump is dropped from the queue, not banned (TransactionQueue::tryAdd ->
// prepareDropTransaction; only TransactionQueue::ban and shift ban). While the replacement is
// queued, sending the replaced one again is a fee bump of the same sequence number below 10x the
// queued rate: ERROR txINSUFFICIENT_FEE with the fee it would need (canReplaceByFee). Once the
// replacement is gone (here: evicted), the replaced one is accepted again and lands, and both
// hashes find the one transaction that applied.
func TestReplacedFeeBumpIsNotBanned(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	first := e.feeBump(inner, payer, 100)
	if r := e.send(b64(t, first)); r.Status != "PENDING" {
		t.Fatalf("first: %+v", r)
	}
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 20}); err != nil {
		t.Fatal(err)
	}
	second := e.feeBump(inner, payer, 1_000)
	if r := e.send(b64(t, second)); r.Status != "PENDING" {
		t.Fatalf("replacement: %+v", r)
	}
	r := e.send(b64(t, first))
	code, _ := errorCode(t, r)
	if code != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("replaced one sent again: %s %s, want ERROR txINSUFFICIENT_FEE", r.Status, stellarsim.TxCodeName(code))
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	// 10 x 1,000 per slot x 2 slots: the least full fee that would replace the replacement.
	if res.FeeCharged != 20_000 {
		t.Errorf("feeCharged %d, want 20,000", res.FeeCharged)
	}
	for range 4 {
		e.n.CloseLedger() // the replacement (age 0 when queued) is evicted at the fourth close
	}
	if e.n.Queued() != 0 {
		t.Fatalf("%d queued, want the replacement evicted", e.n.Queued())
	}
	if r := e.send(b64(t, first)); r.Status != "PENDING" {
		t.Fatalf("the replaced one once the slot is free: %+v, want PENDING (it was never banned)", r)
	}
	e.n.CloseLedger()
	outer1, outer2 := feeBumpHash(t, e, first), feeBumpHash(t, e, second)
	innerHash := hashOf(t, inner, e.n.Passphrase())
	if g := e.getTx(outer1); g.Status != "SUCCESS" {
		t.Fatalf("first outer: %s", g.Status)
	}
	if g := e.getTx(innerHash); g.Status != "SUCCESS" {
		t.Fatalf("inner hash: %s", g.Status)
	}
	if g := e.getTx(outer2); g.Status != "NOT_FOUND" {
		t.Fatalf("replacement outer: %s, want NOT_FOUND (it never applied)", g.Status)
	}
}

// The replacement rule is exact integer arithmetic on inclusion fees per operation: a fee bump of
// one payment (2 slots) queued at 201 stroops replaces only at 2,010 (10 x 100.5 per slot), and is
// refused at 2,009 naming 2,010.
func TestReplaceByFeeExactRate(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	bumpTo := func(total int64) string {
		// txnbuild sets the fee bump's fee to BaseFee x slots; build 2 x 100 and patch the total.
		fb := e.feeBump(inner, payer, 100)
		env := fb.ToXDR()
		env.FeeBump.Tx.Fee = xdr.Int64(total)
		env.FeeBump.Signatures = nil
		h, err := network.HashTransactionInEnvelope(env, e.n.Passphrase())
		if err != nil {
			t.Fatal(err)
		}
		sig, err := payer.SignDecorated(h[:])
		if err != nil {
			t.Fatal(err)
		}
		env.FeeBump.Signatures = []xdr.DecoratedSignature{sig}
		s, err := xdr.MarshalBase64(env)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	first201 := bumpTo(201)
	if r := e.send(first201); r.Status != "PENDING" {
		t.Fatalf("first at 201: %+v", r)
	}
	r := e.send(bumpTo(2_009))
	if code, _ := errorCode(t, r); code != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("2,009: %s %s, want txINSUFFICIENT_FEE", r.Status, stellarsim.TxCodeName(code))
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil || res.FeeCharged != 2_010 {
		t.Fatalf("feeCharged %d (%v), want 2,010", res.FeeCharged, err)
	}
	if r := e.send(bumpTo(2_010)); r.Status != "PENDING" {
		t.Fatalf("2,010: %+v, want PENDING", r)
	}
}

func feeBumpHash(t *testing.T, e *env, fb *txnbuild.FeeBumpTransaction) string {
	t.Helper()
	h, err := fb.HashHex(e.n.Passphrase())
	if err != nil {
		t.Fatal(err)
	}
	return h
}
