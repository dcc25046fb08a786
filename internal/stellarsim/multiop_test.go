package stellarsim_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Transactions of many payments as stellar-core applies them (src/transactions/
// TransactionFrame.cpp, TransactionFrame::applyOperations; PaymentOpFrame::doApply;
// PathPaymentOpFrameBase::updateDestBalance and updateSourceBalance; FeeBumpTransactionFrame):
// the shape of a payout batch, one channel account as the transaction's source, the vault as
// every operation's source, a fee account's fee bump around it.

// batchRig is a vault holding USD, a channel, a fee account and an issuer.
type batchRig struct {
	*env
	issuer, vault, channel, fee *keypair.Full
	usd                         stellarsim.Asset
	credit                      txnbuild.CreditAsset
}

func newBatchRig(t *testing.T, opts stellarsim.Options) *batchRig {
	e := newEnv(t, opts)
	r := &batchRig{env: e, issuer: e.funded(10 * xlm), vault: e.funded(100 * xlm), channel: e.funded(10 * xlm), fee: e.funded(100 * xlm)}
	r.usd = e.n.IssueAsset("USD", r.issuer)
	r.credit = txnbuild.CreditAsset{Code: "USD", Issuer: r.issuer.Address()}
	if err := e.n.AddTrustline(r.vault.Address(), r.usd, 0); err != nil {
		t.Fatal(err)
	}
	if err := e.n.Mint(r.vault.Address(), r.usd, 1_000*xlm); err != nil {
		t.Fatal(err)
	}
	return r
}

// wallet is an account with a USD trustline of limit stroops (0: the maximum).
func (r *batchRig) wallet(limit int64) *keypair.Full {
	r.t.Helper()
	w := r.funded(2 * xlm)
	if err := r.n.AddTrustline(w.Address(), r.usd, limit); err != nil {
		r.t.Fatal(err)
	}
	return w
}

// pay is a payment of stroops from the vault (the operation's source) to to.
func (r *batchRig) pay(to string, asset txnbuild.Asset, stroops int64) txnbuild.Operation {
	return &txnbuild.Payment{Destination: to, Asset: asset, Amount: amount.StringFromInt64(stroops), SourceAccount: r.vault.Address()}
}

// batch is ops from the channel, signed by the channel and the vault, fee-bumped by the fee
// account at rate stroops per operation slot; it returns the envelope and the inner hash.
func (r *batchRig) batch(ops []txnbuild.Operation, rate int64) (string, string) {
	r.t.Helper()
	inner := r.build(r.channel, ops, 100, 0, r.channel, r.vault)
	return b64(r.t, r.feeBump(inner, r.fee, rate)), hashOf(r.t, inner, r.n.Passphrase())
}

// landed closes a ledger and returns the applied transaction of hash.
func (r *batchRig) landed(hash string) stellarsim.AppliedTx {
	r.t.Helper()
	r.clock.Advance(5 * time.Second)
	r.n.CloseLedger()
	a, ok := r.n.Transaction(hash)
	if !ok {
		r.t.Fatalf("%s not applied", hash)
	}
	return a
}

// innerResult decodes a fee bump's result: its outer code, fee charged, and the inner code with
// each operation's payment code.
func innerResult(t *testing.T, resultXDR string) (outer xdr.TransactionResultCode, fee int64, inner xdr.TransactionResultCode, ops []xdr.PaymentResultCode) {
	t.Helper()
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resultXDR, &res); err != nil {
		t.Fatal(err)
	}
	p := res.Result.InnerResultPair
	if p == nil {
		t.Fatalf("result %s has no inner result pair", res.Result.Code)
	}
	var results []xdr.OperationResult
	if rs := p.Result.Result.Results; rs != nil {
		results = *rs
	}
	for _, op := range results {
		if op.Tr == nil || op.Tr.PaymentResult == nil {
			t.Fatalf("operation result %v is not a payment's", op)
		}
		ops = append(ops, op.Tr.PaymentResult.Code)
	}
	return res.Result.Code, int64(res.FeeCharged), p.Result.Result.Code, ops
}

// A batch whose operations all succeed moves every payment and is charged (n+1) base fees
// (FeeBumpTransactionFrame::getNumOperations: the inner operations plus one).
func TestBatchLandsEveryPaymentAtNPlusOneFees(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	w := []*keypair.Full{r.wallet(0), r.wallet(0), r.wallet(0)}
	ops := []txnbuild.Operation{r.pay(w[0].Address(), r.credit, 1*xlm), r.pay(w[1].Address(), r.credit, 2*xlm), r.pay(w[2].Address(), r.credit, 3*xlm)}
	envXDR, hash := r.batch(ops, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	a := r.landed(hash)
	outer, fee, inner, codes := innerResult(t, a.ResultXDR)
	if outer != xdr.TransactionResultCodeTxFeeBumpInnerSuccess || inner != xdr.TransactionResultCodeTxSuccess || fee != 400 {
		t.Fatalf("result %s / %s fee %d, want txFEE_BUMP_INNER_SUCCESS / txSUCCESS fee 400", outer, inner, fee)
	}
	if !slices.Equal(codes, []xdr.PaymentResultCode{0, 0, 0}) || !slices.Equal(a.OpResults, []string{"op_success", "op_success", "op_success"}) {
		t.Fatalf("operation results %v %v", codes, a.OpResults)
	}
	// Each operation's meta lists its own changes: the wallet's line and the vault's.
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(a.ResultMetaXDR, &meta); err != nil || meta.V4 == nil || len(meta.V4.Operations) != 3 {
		t.Fatalf("meta: %v", err)
	}
	for i, op := range meta.V4.Operations {
		if len(op.Changes) != 4 || op.Changes[1].Updated.Data.TrustLine.AccountId.Address() != w[i].Address() ||
			int64(op.Changes[1].Updated.Data.TrustLine.Balance) != int64(i+1)*xlm {
			t.Fatalf("operation %d's meta: %d changes", i, len(op.Changes))
		}
	}
	for i, want := range []int64{1 * xlm, 2 * xlm, 3 * xlm} {
		if got := r.balance(w[i].Address(), r.usd); got != want {
			t.Fatalf("wallet %d holds %d, want %d", i, got, want)
		}
	}
	if got := r.balance(r.vault.Address(), r.usd); got != 994*xlm {
		t.Fatalf("vault holds %d, want %d", got, 994*xlm)
	}
}

// One destination without a trustline fails the whole batch: txFEE_BUMP_INNER_FAILED with the
// inner txFAILED, every operation's result (the ones around it PAYMENT_SUCCESS: each was applied
// in its own scope and would have succeeded), nothing moved, the fee charged and the channel's
// sequence number consumed.
func TestBatchWithOneUntrustedDestinationMovesNothing(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	a, b := r.wallet(0), r.wallet(0)
	untrusted := r.funded(2 * xlm)
	ops := []txnbuild.Operation{r.pay(a.Address(), r.credit, 1*xlm), r.pay(untrusted.Address(), r.credit, 2*xlm), r.pay(b.Address(), r.credit, 3*xlm)}
	envXDR, hash := r.batch(ops, 100)
	seq := r.sequence(r.channel.Address())
	feeBefore := r.balance(r.fee.Address(), stellarsim.Asset{})
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	ap := r.landed(hash)
	outer, fee, inner, codes := innerResult(t, ap.ResultXDR)
	if outer != xdr.TransactionResultCodeTxFeeBumpInnerFailed || inner != xdr.TransactionResultCodeTxFailed || fee != 400 {
		t.Fatalf("result %s / %s fee %d, want txFEE_BUMP_INNER_FAILED / txFAILED fee 400", outer, inner, fee)
	}
	want := []xdr.PaymentResultCode{xdr.PaymentResultCodePaymentSuccess, xdr.PaymentResultCodePaymentNoTrust, xdr.PaymentResultCodePaymentSuccess}
	if !slices.Equal(codes, want) || !slices.Equal(ap.OpResults, []string{"op_success", "op_no_trust", "op_success"}) || ap.Status != "FAILED" {
		t.Fatalf("operation results %v %v %s, want %v", codes, ap.OpResults, ap.Status, want)
	}
	for _, w := range []*keypair.Full{a, b} {
		if got := r.balance(w.Address(), r.usd); got != 0 {
			t.Fatalf("wallet holds %d after a failed batch", got)
		}
	}
	if got := r.balance(r.vault.Address(), r.usd); got != 1_000*xlm {
		t.Fatalf("vault holds %d after a failed batch, want %d", got, 1_000*xlm)
	}
	if got := r.sequence(r.channel.Address()); got != seq+1 {
		t.Fatalf("channel sequence %d, want %d (consumed)", got, seq+1)
	}
	if got := r.balance(r.fee.Address(), stellarsim.Asset{}); got != feeBefore-400 {
		t.Fatalf("fee account %d, want %d", got, feeBefore-400)
	}
	g := r.getTx(hash)
	if g.Status != protocol.TransactionStatusFailed {
		t.Fatalf("getTransaction: %s", g.Status)
	}
	if _, _, _, c := innerResult(t, g.ResultXDR); !slices.Equal(c, want) {
		t.Fatalf("getTransaction's operation results %v, want %v", c, want)
	}
}

// Every payment code a payout meets, each in its place in one batch, with the operations before
// and after it judged on their own: op_no_destination, op_no_trust, op_not_authorized (a line
// only authorized to maintain liabilities is not authorized, TrustLineWrapper::isAuthorized),
// op_line_full from the limit and from buying liabilities (addBalanceSkipAuthorization: the
// balance may not pass limit - buying), and a native payment's op_line_full from buying
// liabilities (addBalance: INT64_MAX - buying).
func TestBatchGivesEachOperationItsOwnCode(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	ok1 := r.wallet(0)
	missing, err := keypair.Random()
	if err != nil {
		t.Fatal(err)
	}
	noTrust := r.funded(2 * xlm)
	maintain := r.wallet(0)
	if err := r.n.SetTrustlineAuth(maintain.Address(), r.usd, stellarsim.AuthorizedToMaintainLiabilities); err != nil {
		t.Fatal(err)
	}
	unauth := r.wallet(0)
	if err := r.n.SetTrustlineAuth(unauth.Address(), r.usd, stellarsim.Unauthorized); err != nil {
		t.Fatal(err)
	}
	full := r.wallet(10 * xlm)
	if err := r.n.Mint(full.Address(), r.usd, 9*xlm); err != nil {
		t.Fatal(err)
	}
	liab := r.wallet(10 * xlm)
	if err := r.n.SetLiabilities(liab.Address(), r.usd, 9*xlm+1, 0); err != nil {
		t.Fatal(err)
	}
	exact := r.wallet(10 * xlm) // room for exactly 1 USD after 9 USD of buying liabilities
	if err := r.n.SetLiabilities(exact.Address(), r.usd, 9*xlm, 0); err != nil {
		t.Fatal(err)
	}
	native := r.funded(2 * xlm)
	if err := r.n.SetLiabilities(native.Address(), stellarsim.Asset{}, 1<<62, 0); err != nil {
		t.Fatal(err)
	}
	ops := []txnbuild.Operation{
		r.pay(ok1.Address(), r.credit, xlm),
		r.pay(missing.Address(), r.credit, xlm),
		r.pay(noTrust.Address(), r.credit, xlm),
		r.pay(maintain.Address(), r.credit, xlm),
		r.pay(unauth.Address(), r.credit, xlm),
		r.pay(full.Address(), r.credit, xlm+1),
		r.pay(liab.Address(), r.credit, xlm),
		r.pay(exact.Address(), r.credit, xlm),
		r.pay(native.Address(), txnbuild.NativeAsset{}, 1<<62),
	}
	envXDR, hash := r.batch(ops, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	ap := r.landed(hash)
	_, fee, inner, _ := innerResult(t, ap.ResultXDR)
	want := []string{"op_success", "op_no_destination", "op_no_trust", "op_not_authorized", "op_not_authorized",
		"op_line_full", "op_line_full", "op_success", "op_line_full"}
	if inner != xdr.TransactionResultCodeTxFailed || fee != 1_000 || !slices.Equal(ap.OpResults, want) {
		t.Fatalf("%s fee %d results %v, want txFAILED fee 1000 %v", inner, fee, ap.OpResults, want)
	}
}

// The source's side after the destination's, and later operations judged after the earlier ones
// applied: two payments filling one line (the second op_line_full), a vault that can pay the
// first and not the second (op_underfunded), a vault's line its issuer stopped authorizing
// (op_src_not_authorized) and an asset the vault holds no line for (op_src_no_trust), each
// behind a destination that would take it.
func TestBatchJudgesLaterOperationsAfterEarlierOnes(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	shared := r.wallet(5 * xlm)
	a, b := r.wallet(0), r.wallet(0)
	envXDR, hash := r.batch([]txnbuild.Operation{
		r.pay(shared.Address(), r.credit, 3*xlm),
		r.pay(shared.Address(), r.credit, 3*xlm),
		r.pay(a.Address(), r.credit, 900*xlm),
		r.pay(b.Address(), r.credit, 97*xlm+1),
	}, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	ap := r.landed(hash)
	// The first paid 3, the second would pass the limit of 5; the third leaves 97 of 1,000
	// (the second's 3 was rolled back with its scope), so the fourth's 97 + 1 stroop is short.
	if want := []string{"op_success", "op_line_full", "op_success", "op_underfunded"}; !slices.Equal(ap.OpResults, want) {
		t.Fatalf("results %v, want %v", ap.OpResults, want)
	}

	// A failed operation's own writes go with its scope: the first credits the wallet 1,200 and
	// then finds the vault short, so the second finds the line empty and room for its 400 under
	// the limit of 1,500 (kept, the credit would have left 300).
	c := r.wallet(1_500 * xlm)
	envXDR, hash = r.batch([]txnbuild.Operation{
		r.pay(c.Address(), r.credit, 1_200*xlm),
		r.pay(c.Address(), r.credit, 400*xlm),
	}, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	ap = r.landed(hash)
	if want := []string{"op_underfunded", "op_success"}; !slices.Equal(ap.OpResults, want) {
		t.Fatalf("results %v, want %v (the failed operation's credit rolled back)", ap.OpResults, want)
	}

	eur := r.n.IssueAsset("EUR", r.issuer)
	if err := r.n.AddTrustline(a.Address(), eur, 0); err != nil {
		t.Fatal(err)
	}
	if err := r.n.SetTrustlineAuth(r.vault.Address(), r.usd, stellarsim.Unauthorized); err != nil {
		t.Fatal(err)
	}
	envXDR, hash = r.batch([]txnbuild.Operation{
		r.pay(a.Address(), r.credit, xlm),
		r.pay(a.Address(), txnbuild.CreditAsset{Code: "EUR", Issuer: r.issuer.Address()}, xlm),
		r.pay(noSuchAccount(t), r.credit, xlm),
	}, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	ap = r.landed(hash)
	if want := []string{"op_src_not_authorized", "op_src_no_trust", "op_no_destination"}; !slices.Equal(ap.OpResults, want) {
		t.Fatalf("results %v, want %v (the destination's side first)", ap.OpResults, want)
	}
}

func noSuchAccount(t *testing.T) string {
	kp, err := keypair.Random()
	if err != nil {
		t.Fatal(err)
	}
	return kp.Address()
}

// A payment to its own source: native succeeds at once (PaymentOpFrame::doApply, instantSuccess);
// a credit one is credited then debited in its scope, so a vault holding less than the amount
// still succeeds when its line has room for it, and fails op_line_full when it has not.
func TestPaymentToItsOwnSource(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	if err := r.n.SetLiabilities(r.vault.Address(), stellarsim.Asset{}, 0, 0); err != nil {
		t.Fatal(err)
	}
	envXDR, hash := r.batch([]txnbuild.Operation{
		r.pay(r.vault.Address(), txnbuild.NativeAsset{}, 1_000*xlm),
		r.pay(r.vault.Address(), r.credit, 2_000*xlm),
	}, 100)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("send: %s", s.Status)
	}
	if ap := r.landed(hash); !slices.Equal(ap.OpResults, []string{"op_success", "op_success"}) || ap.Status != "SUCCESS" {
		t.Fatalf("results %v %s", ap.OpResults, ap.Status)
	}
	if got := r.balance(r.vault.Address(), r.usd); got != 1_000*xlm {
		t.Fatalf("vault holds %d", got)
	}
}

// A fee bump's minimum fee counts the inner operations plus one (FeeBumpTransactionFrame::
// getNumOperations, commonValid's getMinInclusionFee): 10 payments need 1,100 stroops, 1,099 is
// txINSUFFICIENT_FEE at submission.
func TestBatchFeeBumpMinimumIsNPlusOneBaseFees(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	var ops []txnbuild.Operation
	for range 10 {
		ops = append(ops, r.pay(r.wallet(0).Address(), r.credit, xlm))
	}
	inner := r.build(r.channel, ops, 100, 0, r.channel, r.vault)
	fb := r.feeBump(inner, r.fee, 100)
	if fb.BaseFee()*11 != 1_100 {
		t.Fatalf("fee bump fee %d", fb.BaseFee()*11)
	}
	short, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: r.fee.Address(), BaseFee: 100})
	if err != nil {
		t.Fatal(err)
	}
	// txnbuild will not build below the minimum: lower the outer fee in the XDR.
	raw := short.ToXDR()
	raw.FeeBump.Tx.Fee = 1_099
	shortTx, err := txnbuild.TransactionFromXDR(envB64(t, raw))
	if err != nil {
		t.Fatal(err)
	}
	gfb, _ := shortTx.FeeBump()
	if gfb, err = gfb.Sign(r.n.Passphrase(), r.fee); err != nil {
		t.Fatal(err)
	}
	if outer, _ := errorCode(t, r.send(b64(t, gfb))); outer != xdr.TransactionResultCodeTxInsufficientFee {
		t.Fatalf("1,099 stroops for 10 operations: %s, want txINSUFFICIENT_FEE", outer)
	}
	if s := r.send(b64(t, fb)); s.Status != "PENDING" {
		t.Fatalf("1,100 stroops: %s", s.Status)
	}
}

func envB64(t *testing.T, v xdr.TransactionEnvelope) string {
	t.Helper()
	s, err := xdr.MarshalBase64(v)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The ledger's classic capacity counts operations, a fee bump one more than it carries
// (FeeBumpTransactionFrame::getNumOperations; the classic lane's Resource is getNumOperations):
// a fee-bumped batch of 100 payments is 101. With a capacity of 101 it lands alone; beside a
// one-payment transaction bidding more per operation it does not fit (1 + 101 > 101) and waits,
// though 1 + 100 would have fitted. Surge pricing ranks by fee per operation
// (feeRate3WayCompare): the batch bids 100 x 101 = 10,100 stroops in all against the single
// payment's 101, and loses.
func TestBatchOf100CountsAs101Operations(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{Lanes: stellarsim.LaneLimits{ClassicOps: 101}})
	var ops []txnbuild.Operation
	for range 100 {
		ops = append(ops, r.pay(r.funded(2*xlm).Address(), txnbuild.NativeAsset{}, 1))
	}
	envXDR, hash := r.batch(ops, 100)
	other := r.funded(10 * xlm)
	single := r.build(other, []txnbuild.Operation{payment(r.issuer.Address(), txnbuild.NativeAsset{}, "1")}, 101, 0)
	if s := r.send(envXDR); s.Status != "PENDING" {
		t.Fatalf("batch: %s %s", s.Status, s.ErrorResultXDR)
	}
	if s := r.send(b64(t, single)); s.Status != "PENDING" {
		t.Fatalf("single: %s", s.Status)
	}
	r.clock.Advance(5 * time.Second)
	l := r.n.CloseLedger()
	if g := r.getTx(hashOf(t, single, r.n.Passphrase())); g.Status != protocol.TransactionStatusSuccess || feeCharged(t, g) != 101 {
		t.Fatalf("single: %s charged %d, want SUCCESS at its own rate 101 (the lane was full)", g.Status, feeCharged(t, g))
	}
	if g := r.getTx(hash); g.Status != protocol.TransactionStatusNotFound {
		t.Fatalf("batch: %s, want left queued", g.Status)
	}
	rep := r.n.CongestionReport(1)
	if got := rep.Ledgers[0]; got.Sequence != l.Sequence || got.ClassicOps != 1 || !got.ClassicFull {
		t.Fatalf("ledger lanes %+v, want 1 operation taken and the lane full", got)
	}
	ap := r.landed(hash)
	_, fee, inner, _ := innerResult(t, ap.ResultXDR)
	if inner != xdr.TransactionResultCodeTxSuccess || fee != 10_100 {
		t.Fatalf("batch %s charged %d, want txSUCCESS at 101 x 100", inner, fee)
	}
	if got := r.n.CongestionReport(1).Ledgers[0].ClassicOps; got != 101 {
		t.Fatalf("the batch's ledger took %d operations, want 101", got)
	}
}

// A transaction holds at most 100 operations (stellar-xdr: Operation operations<MAX_OPS_PER_TX>),
// so 101 do not decode: stellar-rpc answers sendTransaction invalid params (invalid_xdr), Horizon
// 400 transaction_malformed, and nothing is queued.
func TestBatchOf101OperationsDoesNotDecode(t *testing.T) {
	r := newBatchRig(t, stellarsim.Options{})
	to := r.funded(2 * xlm).Address()
	var ops []txnbuild.Operation
	for range 101 {
		ops = append(ops, r.pay(to, txnbuild.NativeAsset{}, 1))
	}
	envXDR, _ := r.batch(ops, 100)
	_, err := r.rpc.SendTransaction(r.ctx, protocol.SendTransactionRequest{Transaction: envXDR})
	if err == nil || !strings.Contains(err.Error(), "invalid_xdr") {
		t.Fatalf("101 operations: %v, want invalid_xdr", err)
	}
	if code, p := r.hDo("POST", "/transactions", url.Values{"tx": {envXDR}}, nil); code != 400 || !strings.HasSuffix(p.Type, "transaction_malformed") {
		t.Fatalf("Horizon: %d %s, want 400 transaction_malformed", code, p.Type)
	}
	if r.n.Queued() != 0 {
		t.Fatalf("queued %d", r.n.Queued())
	}
}
