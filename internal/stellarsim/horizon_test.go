// These tests drive Horizon through the official horizonclient;
// horizon_http_test.go covers the same ground over plain HTTP with the
// protocols/horizon types.

package stellarsim_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func (e *env) horizon() *horizonclient.Client {
	return &horizonclient.Client{HorizonURL: e.n.URL(), HTTP: &http.Client{Timeout: 10 * time.Second}}
}

// closeUntilQueueEmpty closes ledgers from a goroutine while a synchronous
// Horizon submission waits for inclusion.
func (e *env) closeSoon(done <-chan struct{}) {
	go func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if e.n.Queued() > 0 {
				e.n.CloseLedger()
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

func horizonErr(t *testing.T, err error) *horizonclient.Error {
	t.Helper()
	var herr *horizonclient.Error
	if errors.As(err, &herr) {
		return herr
	}
	var v horizonclient.Error
	if errors.As(err, &v) {
		return &v
	}
	t.Fatalf("not a horizon error: %v", err)
	return nil
}

func TestHorizonAccountAndRoot(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USD", issuer)
	a := e.funded(25 * xlm)
	_ = e.n.AddTrustline(a.Address(), usd, 0)
	_ = e.n.Mint(a.Address(), usd, 3*xlm)
	acct, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()})
	if err != nil {
		t.Fatal(err)
	}
	seq, _ := acct.GetSequenceNumber()
	info, _ := e.n.Account(a.Address())
	if seq != info.Sequence || acct.SubentryCount != 1 {
		t.Fatalf("%+v", acct)
	}
	if nb, _ := acct.GetNativeBalance(); nb != "25.0000000" {
		t.Fatalf("native %s", nb)
	}
	if b := acct.GetCreditBalance("USD", issuer.Address()); b != "3.0000000" {
		t.Fatalf("USD %s", b)
	}
	_, err = hc.AccountDetail(horizonclient.AccountRequest{AccountID: keypair.MustRandom().Address()})
	if !horizonclient.IsNotFoundError(err) {
		t.Fatalf("missing account: %v", err)
	}
	root, err := hc.Root()
	if err != nil || root.NetworkPassphrase != e.n.Passphrase() {
		t.Fatalf("%v %+v", err, root)
	}
}

func TestHorizonSyncSubmit(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	done := make(chan struct{})
	defer close(done)
	e.closeSoon(done)
	got, err := hc.SubmitTransaction(tx)
	if err != nil {
		t.Fatal(err)
	}
	hash := hashOf(t, tx, e.n.Passphrase())
	if !got.Successful || got.Hash != hash || got.Ledger != 2 || got.FeeCharged != 100 {
		t.Fatalf("%+v", got)
	}
	// Re-sending a landed envelope is answered from history.
	again, err := hc.SubmitTransaction(tx)
	if err != nil || again.Hash != hash {
		t.Fatalf("%v %+v", err, again)
	}
	detail, err := hc.TransactionDetail(hash)
	if err != nil || detail.Hash != hash || detail.AccountSequence != tx.SequenceNumber() {
		t.Fatalf("%v %+v", err, detail)
	}
	if _, err := hc.TransactionDetail("00000000000000000000000000000000000000000000000000000000000000aa"); !horizonclient.IsNotFoundError(err) {
		t.Fatalf("%v", err)
	}
	if n := len(e.n.Applied()); n != 1 {
		t.Fatalf("applied %d", n)
	}

	// tx-level refusal: 400 transaction_failed with result codes.
	stale := e.buildSeq(a, tx.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	_, err = hc.SubmitTransaction(stale)
	herr := horizonErr(t, err)
	codes, cerr := herr.ResultCodes()
	if herr.Problem.Status != 400 || cerr != nil || codes.TransactionCode != "tx_bad_seq" {
		t.Fatalf("%+v %v %+v", herr.Problem, cerr, codes)
	}
	if _, rerr := herr.ResultString(); rerr != nil {
		t.Fatal(rerr)
	}

	// Included but failed: 400 with operation codes.
	_, err = hc.SubmitTransaction(e.build(a, []txnbuild.Operation{payment(keypair.MustRandom().Address(), txnbuild.NativeAsset{}, "1")}, 0, 0))
	herr = horizonErr(t, err)
	codes, _ = herr.ResultCodes()
	if codes.TransactionCode != "tx_failed" || len(codes.OperationCodes) != 1 || codes.OperationCodes[0] != "op_no_destination" {
		t.Fatalf("%+v", codes)
	}
}

func TestHorizonSyncSubmitTimeout(t *testing.T) {
	e := newEnv(t, stellarsim.Options{HorizonSubmitTimeout: 50 * time.Millisecond})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	_, err := e.horizon().SubmitTransaction(tx)
	if herr := horizonErr(t, err); herr.Problem.Status != 504 {
		t.Fatalf("%+v", herr.Problem)
	}
	// Still queued: it lands at the next close.
	e.n.CloseLedger()
	if len(e.n.Applied()) != 1 {
		t.Fatal("not applied")
	}
}

func TestHorizonAsyncSubmit(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	s := b64(t, tx)
	r, err := hc.AsyncSubmitTransactionXDR(s)
	if err != nil || r.TxStatus != "PENDING" || r.Hash != hashOf(t, tx, e.n.Passphrase()) {
		t.Fatalf("%v %+v", err, r)
	}
	r, err = hc.AsyncSubmitTransactionXDR(s)
	if err != nil || r.TxStatus != "DUPLICATE" {
		t.Fatalf("%v %+v", err, r)
	}
	e.n.CloseLedger()
	r, err = hc.AsyncSubmitTransactionXDR(s)
	if err != nil || r.TxStatus != "TRY_AGAIN_LATER" {
		t.Fatalf("%v %+v", err, r)
	}
	stale := e.buildSeq(a, tx.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	r, err = hc.AsyncSubmitTransactionXDR(b64(t, stale))
	if err != nil || r.TxStatus != "ERROR" {
		t.Fatalf("%v %+v", err, r)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil || res.Result.Code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("%v %+v", err, res)
	}
	envs := e.n.Envelopes()
	want := []int{201, 409, 503, 400}
	for i, w := range want {
		if envs[i].HTTPStatus != w || envs[i].API != "horizon_async" {
			t.Fatalf("envelope %d: %+v", i, envs[i])
		}
	}
	if _, err := hc.AsyncSubmitTransactionXDR("garbage"); err == nil {
		t.Fatal("garbage accepted")
	}
}

func TestHorizonFaults(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	for _, status := range []int{429, 500, 504} {
		a, b := e.funded(10*xlm), e.funded(10*xlm)
		tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
		e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: status})
		_, err := hc.SubmitTransaction(tx)
		if herr := horizonErr(t, err); herr.Problem.Status != status {
			t.Fatalf("want %d: %+v", status, herr.Problem)
		}
	}
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "ERROR", Code: "tx_insufficient_fee"})
	_, err := hc.SubmitTransaction(tx)
	codes, _ := horizonErr(t, err).ResultCodes()
	if codes == nil || codes.TransactionCode != "tx_insufficient_fee" {
		t.Fatalf("%+v", codes)
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRefuse})
	if _, err := hc.AsyncSubmitTransactionXDR(b64(t, tx)); err == nil {
		t.Fatal("refused but answered")
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 0 {
		t.Fatalf("%+v", e.n.Applied())
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	if _, err := hc.AsyncSubmitTransactionXDR(b64(t, tx)); err == nil {
		t.Fatal("dropped but answered")
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 1 {
		t.Fatal("drop_response envelope did not land")
	}
}

func TestHorizonFeeBumpByBothHashes(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	r, err := hc.AsyncSubmitTransactionXDR(b64(t, fb))
	if err != nil || r.TxStatus != "PENDING" {
		t.Fatalf("%v %+v", err, r)
	}
	e.n.CloseLedger()
	outer, _ := fb.HashHex(e.n.Passphrase())
	innerHash := hashOf(t, inner, e.n.Passphrase())
	byOuter, err := hc.TransactionDetail(outer)
	if err != nil || byOuter.Hash != outer || byOuter.InnerTransaction == nil || byOuter.InnerTransaction.Hash != innerHash || byOuter.FeeAccount != payer.Address() {
		t.Fatalf("%v %+v", err, byOuter)
	}
	byInner, err := hc.TransactionDetail(innerHash)
	if err != nil || byInner.Hash != innerHash || byInner.FeeBumpTransaction.Hash != outer {
		t.Fatalf("%v %+v", err, byInner)
	}
}

func TestHorizonLedgersAndFeeStats(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	e.clock.Advance(time.Minute)
	l := e.n.CloseLedger()
	page, err := hc.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
	if err != nil || len(page.Embedded.Records) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	rec := page.Embedded.Records[0]
	if rec.Sequence != int32(l.Sequence) || !rec.ClosedAt.Equal(l.CloseTime) {
		t.Fatalf("%+v", rec)
	}
	asc, err := hc.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderAsc, Limit: 5})
	if err != nil || len(asc.Embedded.Records) != 2 || asc.Embedded.Records[0].Sequence != 1 {
		t.Fatalf("%v %+v", err, asc)
	}
	fs, err := hc.FeeStats()
	if err != nil || fs.LastLedger != l.Sequence || fs.LastLedgerBaseFee != 100 || fs.MaxFee.P50 != 100 {
		t.Fatalf("%v %+v", err, fs)
	}
}

func TestFriendbot(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	kp := keypair.MustRandom()
	tx, err := hc.Fund(kp.Address())
	if err != nil || !tx.Successful {
		t.Fatalf("%v %+v", err, tx)
	}
	if bal := e.balance(kp.Address(), stellarsim.Native); bal != 10_000*xlm {
		t.Fatalf("funded %d", bal)
	}
	_, err = hc.Fund(kp.Address())
	if herr := horizonErr(t, err); herr.Problem.Status != 400 {
		t.Fatalf("%+v", herr.Problem)
	}
	var _ hProtocol.Transaction = tx
}
