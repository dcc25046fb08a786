package stellarsim_test

import (
	"crypto/sha256"
	"slices"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Fee-source accounting and inclusion as stellar-core (master, protocol 23 and later) does them;
// each test names core's file and function.

// reserve is the minimum balance of an account without subentries: 2 x the default base reserve.
const reserve = 2 * 5_000_000

func (e *env) feeBump(inner *txnbuild.Transaction, payer *keypair.Full, baseFee int64) *txnbuild.FeeBumpTransaction {
	e.t.Helper()
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: baseFee})
	if err != nil {
		e.t.Fatal(err)
	}
	if fb, err = fb.Sign(e.n.Passphrase(), payer); err != nil {
		e.t.Fatal(err)
	}
	return fb
}

func (e *env) sequence(address string) int64 {
	e.t.Helper()
	a, ok := e.n.Account(address)
	if !ok {
		e.t.Fatalf("no account %s", address)
	}
	return a.Sequence
}

// The queue refuses a transaction whose fee source cannot also pay the fees already queued for it
// (src/herder/TransactionQueue.cpp, TransactionQueue::canAdd: getAvailableBalance(feeSource) -
// newFullFee < mTotalFees of the fee source -> ADD_STATUS_ERROR, txINSUFFICIENT_BALANCE, as
// createTxErrorResult builds it: the code at the top level, feeCharged 0). A fee bump's fee
// source is its outer one. The probe: two fee bumps of 200 stroops from a payer holding its
// reserve plus 300. The first is queued and lands; the second is refused at once, so its inner
// source's sequence number is untouched and nothing of it is ever in a ledger.
func TestQueueRefusesFeeSourceThatCannotPayQueuedFees(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	payer := e.funded(reserve + 300)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	wallet := e.funded(10 * xlm)
	first := e.feeBump(e.build(a, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0), payer, 100)
	second := e.feeBump(e.build(b, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0), payer, 100)
	if first.BaseFee()*2 != 200 {
		t.Fatalf("fee bump fee %d, want 200", first.BaseFee()*2)
	}
	if r := e.send(b64(t, first)); r.Status != "PENDING" {
		t.Fatalf("first fee bump: %s", r.Status)
	}
	r := e.send(b64(t, second))
	outer, inner := errorCode(t, r)
	if outer != xdr.TransactionResultCodeTxInsufficientBalance || inner != 0 {
		t.Fatalf("second fee bump: %s / %s, want txINSUFFICIENT_BALANCE at the top level (TransactionQueue::canAdd)", outer, inner)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil || res.FeeCharged != 0 {
		t.Fatalf("errorResultXdr %v feeCharged %d, want 0 (createTxErrorResult)", err, res.FeeCharged)
	}
	seqB := e.sequence(b.Address())
	e.n.CloseLedger()
	outerHash, err := first.HashHex(e.n.Passphrase())
	if err != nil {
		t.Fatal(err)
	}
	if g := e.getTx(outerHash); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("first fee bump: %s", g.Status)
	}
	if g := e.getTx(hashOf(t, second.InnerTransaction(), e.n.Passphrase())); g.Status != protocol.TransactionStatusNotFound {
		t.Fatalf("second fee bump: %s, want NOT_FOUND (refused at submission)", g.Status)
	}
	if got := e.sequence(b.Address()); got != seqB {
		t.Fatalf("second inner source's sequence %d -> %d", seqB, got)
	}
	if got := e.balance(payer.Address(), stellarsim.Asset{}); got != reserve+100 {
		t.Fatalf("payer %d, want its reserve + 100 (one fee of 200 charged)", got)
	}
	// Once the first is out of the queue, the payer can pay one more fee of 100: a fee bump of
	// 200 is still refused (available 100), as core judges it against the ledger.
	third := e.feeBump(e.build(b, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0), payer, 100)
	if outer, _ := errorCode(t, e.send(b64(t, third))); outer != xdr.TransactionResultCodeTxInsufficientBalance {
		t.Fatalf("third fee bump: %s, want txINSUFFICIENT_BALANCE", outer)
	}
}

// A plain transaction's source is its fee source: its queued fee counts against a fee bump it pays
// for, whichever comes first (TransactionQueue::canAdd sums mTotalFees per fee source).
func TestQueueCountsPlainAndFeeBumpFeesOfOneAccount(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	payer := e.funded(reserve + 250)
	a := e.funded(10 * xlm)
	own := e.build(payer, []txnbuild.Operation{&txnbuild.SetOptions{MasterWeight: txnbuild.NewThreshold(1)}}, 100, 0)
	if r := e.send(b64(t, own)); r.Status != "PENDING" {
		t.Fatalf("payer's own transaction: %s", r.Status)
	}
	fb := e.feeBump(e.build(a, []txnbuild.Operation{&txnbuild.SetOptions{MasterWeight: txnbuild.NewThreshold(1)}}, 100, 0), payer, 100)
	if outer, _ := errorCode(t, e.send(b64(t, fb))); outer != xdr.TransactionResultCodeTxInsufficientBalance {
		t.Fatalf("fee bump: %s, want txINSUFFICIENT_BALANCE (250 available, 100 queued, 200 more)", outer)
	}
}

// Fees of the whole set are charged before any transaction applies
// (src/ledger/LedgerManagerImpl.cpp, LedgerManagerImpl::processFeesSeqNums, then
// applyTransactions). Y holds its reserve + 100 + P: its own transaction (fee 100) and, in another
// account's transaction of the same ledger, a payment of P+1 from Y. Charged first, Y's fee leaves
// P: the payment is op_underfunded, included FAILED with its fee charged and its sequence number
// consumed, whatever the order, and Y's own transaction lands. (Charging each fee as its
// transaction applies would let the payment through and leave Y short of its own fee.)
func TestFeesOfTheSetChargedBeforeAnyApplies(t *testing.T) {
	for seed := range uint64(4) {
		e := newEnv(t, stellarsim.Options{ApplyOrderSeed: seed})
		const p = 5 * xlm
		y := e.funded(reserve + 100 + p)
		x := e.funded(10 * xlm)
		wallet := e.funded(10 * xlm)
		own := e.build(y, []txnbuild.Operation{&txnbuild.SetOptions{MasterWeight: txnbuild.NewThreshold(1)}}, 100, 0)
		drain := e.build(x, []txnbuild.Operation{&txnbuild.Payment{
			Destination: wallet.Address(), Asset: txnbuild.NativeAsset{}, Amount: "5.0000001", SourceAccount: y.Address(),
		}}, 100, 0, x, y)
		for _, tx := range []*txnbuild.Transaction{own, drain} {
			if r := e.send(b64(t, tx)); r.Status != "PENDING" {
				t.Fatalf("seed %d: %s", seed, r.Status)
			}
		}
		seqX := e.sequence(x.Address())
		e.n.CloseLedger()
		if g := e.getTx(hashOf(t, own, e.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess {
			t.Fatalf("seed %d: Y's own transaction %s, want SUCCESS", seed, g.Status)
		}
		g := e.getTx(hashOf(t, drain, e.n.Passphrase()))
		if g.Status != protocol.TransactionStatusFailed {
			t.Fatalf("seed %d: payment of P+1 from Y: %s, want FAILED (Y's fee was charged first)", seed, g.Status)
		}
		checkFailed(t, e, g, 100, xdr.TransactionResultCodeTxFailed, "op_underfunded")
		if got := e.sequence(x.Address()); got != seqX+1 {
			t.Fatalf("seed %d: X's sequence %d -> %d, want consumed", seed, seqX, got)
		}
		if got := e.balance(y.Address(), stellarsim.Asset{}); got != reserve+p {
			t.Fatalf("seed %d: Y %d, want its reserve + P", seed, got)
		}
	}
}

// checkFailed asserts a FAILED transaction's fee charged, code and first operation's code.
func checkFailed(t *testing.T, e *env, g protocol.GetTransactionResponse, fee int64, code xdr.TransactionResultCode, op string) {
	t.Helper()
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(g.ResultXDR, &res); err != nil {
		t.Fatal(err)
	}
	if int64(res.FeeCharged) != fee {
		t.Fatalf("feeCharged %d, want %d", res.FeeCharged, fee)
	}
	r := res.Result
	if p := r.InnerResultPair; p != nil {
		r = xdr.TransactionResultResult{Code: p.Result.Result.Code, Results: p.Result.Result.Results}
	}
	if r.Code != code {
		t.Fatalf("code %s, want %s", r.Code, code)
	}
	if op == "" {
		return
	}
	applied, ok := e.n.Transaction(g.TransactionHash)
	if r.Results == nil || len(*r.Results) == 0 || !ok || len(applied.OpResults) == 0 || applied.OpResults[0] != op {
		t.Fatalf("operation results %v, want %s", applied.OpResults, op)
	}
}

// Operations that fail at apply leave the transaction included FAILED, its fee charged and its
// sequence number consumed (TransactionFrame::apply: commonPreApply consumes the sequence number,
// then applyOperations fails; the set's fee was charged by processFeesSeqNums). Never dropped.
// Each failure a payout meets: the source lacks the asset (op_underfunded), the destination has
// no trustline (op_no_trust), its trustline is full (op_line_full), the destination account does
// not exist (op_no_destination); with and without a fee bump.
func TestFailedAtApplyIncludedWithFeeAndSequence(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := e.funded(10 * xlm)
	usd := e.n.IssueAsset("USD", issuer)
	credit := txnbuild.CreditAsset{Code: "USD", Issuer: issuer.Address()}
	vault := e.funded(100 * xlm)
	if err := e.n.AddTrustline(vault.Address(), usd, 1_000*xlm); err != nil {
		t.Fatal(err)
	}
	if err := e.n.Mint(vault.Address(), usd, 50*xlm); err != nil {
		t.Fatal(err)
	}
	untrusted := e.funded(10 * xlm)
	full := e.funded(10 * xlm)
	if err := e.n.AddTrustline(full.Address(), usd, 1*xlm); err != nil {
		t.Fatal(err)
	}
	roomy := e.funded(10 * xlm)
	if err := e.n.AddTrustline(roomy.Address(), usd, 1_000*xlm); err != nil {
		t.Fatal(err)
	}
	missing, _ := keypair.Random()
	payer := e.funded(100 * xlm)
	cases := []struct {
		name, op string
		to       string
		asset    txnbuild.Asset
		amount   string
	}{
		{"underfunded", "op_underfunded", roomy.Address(), credit, "60"},
		{"no trust", "op_no_trust", untrusted.Address(), credit, "1"},
		{"line full", "op_line_full", full.Address(), credit, "2"},
		{"no destination", "op_no_destination", missing.Address(), txnbuild.NativeAsset{}, "1"},
	}
	for _, bump := range []bool{false, true} {
		for _, c := range cases {
			tx := e.build(vault, []txnbuild.Operation{payment(c.to, c.asset, c.amount)}, 100, 0)
			envelope, fee, feeSource := b64(t, tx), int64(100), vault.Address()
			if bump {
				envelope, fee, feeSource = b64(t, e.feeBump(tx, payer, 100)), 200, payer.Address()
			}
			seq := e.sequence(vault.Address())
			before := e.balance(feeSource, stellarsim.Asset{})
			if r := e.send(envelope); r.Status != "PENDING" {
				t.Fatalf("%s (fee bump %v): %s", c.name, bump, r.Status)
			}
			e.n.CloseLedger()
			g := e.getTx(hashOf(t, tx, e.n.Passphrase()))
			if g.Status != protocol.TransactionStatusFailed {
				t.Fatalf("%s (fee bump %v): %s, want FAILED", c.name, bump, g.Status)
			}
			checkFailed(t, e, g, fee, xdr.TransactionResultCodeTxFailed, c.op)
			if got := e.sequence(vault.Address()); got != seq+1 {
				t.Fatalf("%s (fee bump %v): sequence %d -> %d, want consumed", c.name, bump, seq, got)
			}
			if got := e.balance(feeSource, stellarsim.Asset{}); got != before-fee {
				t.Fatalf("%s (fee bump %v): fee source %d -> %d, want %d charged", c.name, bump, before, got, fee)
			}
		}
	}
}

// Classic transactions apply in a shuffled order: stellar-core sorts the set by full hash XORed
// with the transaction set's hash (src/herder/TxSetFrame.cpp, sortedForApplySequential and
// ApplyTxSorter; ApplicableTxSetFrame::getPhasesInApplyOrder). Here the set's hash is seeded by
// Options.ApplyOrderSeed: the same envelopes apply in the same order under the same seed, and in
// another order under another seed.
func TestApplyOrderShuffledAndRepeatable(t *testing.T) {
	keys := make([]*keypair.Full, 8)
	for i := range keys {
		keys[i] = mustFromRawSeed(t, sha256.Sum256([]byte{byte(i)}))
	}
	dest := mustFromRawSeed(t, sha256.Sum256([]byte("dest")))
	order := func(seed uint64) []string {
		e := newEnv(t, stellarsim.Options{ApplyOrderSeed: seed})
		for _, k := range append([]*keypair.Full{dest}, keys...) {
			if err := e.n.CreateAccount(k.Address(), 10*xlm); err != nil {
				t.Fatal(err)
			}
		}
		var submitted []string
		for _, k := range keys {
			tx := e.build(k, []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")}, 100, 1_900_000_000)
			submitted = append(submitted, hashOf(t, tx, e.n.Passphrase()))
			if r := e.send(b64(t, tx)); r.Status != "PENDING" {
				t.Fatal(r.Status)
			}
		}
		e.n.CloseLedger()
		got, err := e.rpc.GetTransactions(e.ctx, protocol.GetTransactionsRequest{StartLedger: 2})
		if err != nil || len(got.Transactions) != len(keys) {
			t.Fatalf("%v %d", err, len(got.Transactions))
		}
		var applied []string
		for i, tx := range got.Transactions {
			if tx.ApplicationOrder != int32(i+1) {
				t.Fatalf("application order %d at %d", tx.ApplicationOrder, i)
			}
			applied = append(applied, tx.TransactionHash)
		}
		if slices.Equal(applied, submitted) {
			t.Fatalf("seed %d: applied in submission order", seed)
		}
		s1, s2 := slices.Clone(applied), slices.Clone(submitted)
		slices.Sort(s1)
		slices.Sort(s2)
		if !slices.Equal(s1, s2) {
			t.Fatalf("applied %v, submitted %v", applied, submitted)
		}
		return applied
	}
	a, b, c := order(7), order(7), order(8)
	if !slices.Equal(a, b) {
		t.Fatalf("seed 7 twice: %v then %v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("seeds 7 and 8 gave one order %v", a)
	}
}

func mustFromRawSeed(t *testing.T, seed [32]byte) *keypair.Full {
	t.Helper()
	kp, err := keypair.FromRawSeed(seed)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// A fee bump that replaces a queued transaction of the same fee source counts only the difference
// (TransactionQueue::canAdd: newFullFee -= currentTx->getFullFee()): a payer holding its reserve
// plus 2,000 can replace its queued fee bump of 200 by one of 2,000 (10x the rate), though it
// could not queue both.
func TestReplaceByFeeCountsTheDifference(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	payer := e.funded(reserve + 2_000)
	src := e.funded(10 * xlm)
	wallet := e.funded(10 * xlm)
	inner := e.build(src, []txnbuild.Operation{payment(wallet.Address(), txnbuild.NativeAsset{}, "1")}, 100, 0)
	if r := e.send(b64(t, e.feeBump(inner, payer, 100))); r.Status != "PENDING" {
		t.Fatalf("fee bump of 200: %s", r.Status)
	}
	bigger := e.feeBump(inner, payer, 1_000)
	if r := e.send(b64(t, bigger)); r.Status != "PENDING" {
		outer, _ := errorCode(t, r)
		t.Fatalf("replacement of 2,000: %s %s, want PENDING (only 1,800 more is queued)", r.Status, outer)
	}
	e.n.CloseLedger()
	h, err := bigger.HashHex(e.n.Passphrase())
	if err != nil {
		t.Fatal(err)
	}
	if g := e.getTx(h); g.Status != protocol.TransactionStatusSuccess {
		t.Fatalf("replacement: %s", g.Status)
	}
}
