package stellarsim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// hProblem is Horizon's problem JSON as horizonclient reads it.
type hProblem struct {
	Type   string `json:"type"`
	Status int    `json:"status"`
	Extras struct {
		ResultCodes hProtocol.TransactionResultCodes `json:"result_codes"`
		ResultXDR   string                           `json:"result_xdr"`
		EnvelopeXDR string                           `json:"envelope_xdr"`
	} `json:"extras"`
}

// hDo sends a Horizon request; on 2xx it decodes into out, else into the problem.
func (e *env) hDo(method, path string, form url.Values, out any) (int, hProblem) {
	e.t.Helper()
	var body *strings.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.n.URL()+path, body)
	if err != nil {
		e.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var p hProblem
	if resp.StatusCode/100 == 2 || (path == "/transactions_async" && resp.StatusCode != 429 && resp.StatusCode != 500 && resp.StatusCode != 504) {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			e.t.Fatalf("%s %s: decoding %d: %v", method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, p
	}
	if err := json.NewDecoder(resp.Body).Decode(&p); err != nil {
		e.t.Fatalf("%s %s: decoding problem %d: %v", method, path, resp.StatusCode, err)
	}
	if p.Status != resp.StatusCode || !strings.HasPrefix(p.Type, "https://stellar.org/horizon-errors/") {
		e.t.Fatalf("problem %+v for HTTP %d", p, resp.StatusCode)
	}
	return resp.StatusCode, p
}

func txForm(t *testing.T, tx interface{ Base64() (string, error) }) url.Values {
	return url.Values{"tx": {b64(t, tx)}}
}

func TestHTTPHorizonAccount(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	issuer := keypair.MustRandom()
	usd := e.n.IssueAsset("USD", issuer)
	a := e.funded(25 * xlm)
	_ = e.n.AddTrustline(a.Address(), usd, 0)
	_ = e.n.Mint(a.Address(), usd, 3*xlm)
	var acct hProtocol.Account
	if code, _ := e.hDo("GET", "/accounts/"+a.Address(), nil, &acct); code != 200 {
		t.Fatal(code)
	}
	info, _ := e.n.Account(a.Address())
	if acct.Sequence != info.Sequence || acct.SubentryCount != 1 {
		t.Fatalf("%+v", acct)
	}
	if nb, _ := acct.GetNativeBalance(); nb != "25.0000000" {
		t.Fatalf("native %s", nb)
	}
	if b := acct.GetCreditBalance("USD", issuer.Address()); b != "3.0000000" {
		t.Fatalf("USD %s", b)
	}
	if code, p := e.hDo("GET", "/accounts/"+keypair.MustRandom().Address(), nil, nil); code != 404 || !strings.HasSuffix(p.Type, "not_found") {
		t.Fatalf("%d %+v", code, p)
	}
}

func TestHTTPHorizonSyncSubmit(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	hash := hashOf(t, tx, e.n.Passphrase())
	done := make(chan struct{})
	defer close(done)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
				if e.n.Queued() > 0 {
					e.n.CloseLedger()
				}
			}
		}
	}()
	var got hProtocol.Transaction
	if code, p := e.hDo("POST", "/transactions", txForm(t, tx), &got); code != 200 {
		t.Fatalf("%d %+v", code, p)
	}
	if !got.Successful || got.Hash != hash || got.Ledger != 2 || got.FeeCharged != 100 {
		t.Fatalf("%+v", got)
	}
	// A re-send of the landed envelope is answered from history, not applied again.
	if code, _ := e.hDo("POST", "/transactions", txForm(t, tx), &got); code != 200 || got.Hash != hash {
		t.Fatalf("%d %+v", code, got)
	}
	var detail hProtocol.Transaction
	if code, _ := e.hDo("GET", "/transactions/"+hash, nil, &detail); code != 200 || detail.AccountSequence != tx.SequenceNumber() {
		t.Fatalf("%d %+v", code, detail)
	}
	if code, _ := e.hDo("GET", "/transactions/"+strings.Repeat("ab", 32), nil, nil); code != 404 {
		t.Fatal(code)
	}
	if len(e.n.Applied()) != 1 {
		t.Fatalf("applied %d", len(e.n.Applied()))
	}
	stale := e.buildSeq(a, tx.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	code, p := e.hDo("POST", "/transactions", txForm(t, stale), nil)
	if code != 400 || !strings.HasSuffix(p.Type, "transaction_failed") || p.Extras.ResultCodes.TransactionCode != "tx_bad_seq" || p.Extras.ResultXDR == "" {
		t.Fatalf("%d %+v", code, p)
	}
	failing := e.build(a, []txnbuild.Operation{payment(keypair.MustRandom().Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	code, p = e.hDo("POST", "/transactions", txForm(t, failing), nil)
	rc := p.Extras.ResultCodes
	if code != 400 || rc.TransactionCode != "tx_failed" || len(rc.OperationCodes) != 1 || rc.OperationCodes[0] != "op_no_destination" {
		t.Fatalf("%d %+v", code, p)
	}
	if code, p := e.hDo("POST", "/transactions", url.Values{"tx": {"AAAA"}}, nil); code != 400 || !strings.HasSuffix(p.Type, "transaction_malformed") {
		t.Fatalf("%d %+v", code, p)
	}
}

func TestHTTPHorizonSyncTimeout(t *testing.T) {
	e := newEnv(t, stellarsim.Options{HorizonSubmitTimeout: 50 * time.Millisecond})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	if code, p := e.hDo("POST", "/transactions", txForm(t, tx), nil); code != 504 || !strings.HasSuffix(p.Type, "timeout") {
		t.Fatalf("%d %+v", code, p)
	}
	e.n.CloseLedger() // it was accepted: it lands
	if len(e.n.Applied()) != 1 {
		t.Fatal("not applied")
	}
}

func TestHTTPHorizonAsync(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	var r hProtocol.AsyncTransactionSubmissionResponse
	steps := []struct {
		code   int
		status string
	}{{201, "PENDING"}, {409, "DUPLICATE"}}
	for _, s := range steps {
		if code, _ := e.hDo("POST", "/transactions_async", txForm(t, tx), &r); code != s.code || r.TxStatus != s.status || r.Hash != hashOf(t, tx, e.n.Passphrase()) {
			t.Fatalf("%d %+v", code, r)
		}
	}
	e.n.CloseLedger()
	if code, _ := e.hDo("POST", "/transactions_async", txForm(t, tx), &r); code != 503 || r.TxStatus != "TRY_AGAIN_LATER" {
		t.Fatalf("%d %+v", code, r)
	}
	stale := e.buildSeq(a, tx.SequenceNumber(), []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	r = hProtocol.AsyncTransactionSubmissionResponse{}
	if code, _ := e.hDo("POST", "/transactions_async", txForm(t, stale), &r); code != 400 || r.TxStatus != "ERROR" {
		t.Fatalf("%d %+v", code, r)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil || res.Result.Code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("%v %+v", err, res)
	}
}

func TestHTTPHorizonFaults(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	for _, status := range []int{429, 500, 504} {
		tx, _ := e.payTx()
		e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: status, API: "horizon"})
		if code, _ := e.hDo("POST", "/transactions", txForm(t, tx), nil); code != status {
			t.Fatalf("want %d, got %d", status, code)
		}
		e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: status})
		if code, _ := e.hDo("POST", "/transactions_async", txForm(t, tx), nil); code != status {
			t.Fatalf("async: want %d, got %d", status, code)
		}
	}
	tx, _ := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Code: "tx_insufficient_fee"})
	if code, p := e.hDo("POST", "/transactions", txForm(t, tx), nil); code != 400 || p.Extras.ResultCodes.TransactionCode != "tx_insufficient_fee" {
		t.Fatalf("%d %+v", code, p)
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 0 {
		t.Fatal("answered envelopes were accepted")
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRefuse})
	if _, err := http.PostForm(e.n.URL()+"/transactions_async", txForm(t, tx)); err == nil {
		t.Fatal("refused connection answered")
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 0 {
		t.Fatal("refused envelope landed")
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	if _, err := http.PostForm(e.n.URL()+"/transactions", txForm(t, tx)); err == nil {
		t.Fatal("dropped response answered")
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 1 {
		t.Fatal("drop_response envelope did not land")
	}
}

func TestHTTPHorizonFeeBumpLedgersFeeStats(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	inner := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: payer.Address(), BaseFee: 200})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	var r hProtocol.AsyncTransactionSubmissionResponse
	if code, _ := e.hDo("POST", "/transactions_async", txForm(t, fb), &r); code != 201 {
		t.Fatalf("%d %+v", code, r)
	}
	e.clock.Advance(time.Minute)
	l := e.n.CloseLedger()
	outer, _ := fb.HashHex(e.n.Passphrase())
	innerHash := hashOf(t, inner, e.n.Passphrase())
	var byOuter, byInner hProtocol.Transaction
	e.hDo("GET", "/transactions/"+outer, nil, &byOuter)
	e.hDo("GET", "/transactions/"+innerHash, nil, &byInner)
	if byOuter.Hash != outer || byOuter.InnerTransaction.Hash != innerHash || byOuter.FeeAccount != payer.Address() || byOuter.FeeCharged != 200 {
		t.Fatalf("%+v", byOuter)
	}
	if byInner.Hash != innerHash || byInner.FeeBumpTransaction.Hash != outer {
		t.Fatalf("%+v", byInner)
	}
	var page hProtocol.LedgersPage
	e.hDo("GET", "/ledgers?order=desc&limit=1", nil, &page)
	if len(page.Embedded.Records) != 1 || page.Embedded.Records[0].Sequence != int32(l.Sequence) ||
		!page.Embedded.Records[0].ClosedAt.Equal(l.CloseTime) || page.Embedded.Records[0].SuccessfulTransactionCount != 1 {
		t.Fatalf("%+v", page)
	}
	var fs hProtocol.FeeStats
	e.hDo("GET", "/fee_stats", nil, &fs)
	// Horizon divides a fee bump's fee by its operations plus one (history.Q.FeeStats): 200 charged
	// and a 400 bid over 2.
	if fs.LastLedger != l.Sequence || fs.LastLedgerBaseFee != 100 || fs.FeeCharged.P50 != 100 || fs.MaxFee.P50 != 200 {
		t.Fatalf("%+v", fs)
	}
}

func TestHTTPFriendbot(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	kp := keypair.MustRandom()
	var tx hProtocol.Transaction
	if code, _ := e.hDo("GET", "/friendbot?addr="+kp.Address(), nil, &tx); code != 200 || !tx.Successful {
		t.Fatalf("%d %+v", code, tx)
	}
	if bal := e.balance(kp.Address(), stellarsim.Native); bal != 10_000*xlm {
		t.Fatalf("funded %d", bal)
	}
	if code, p := e.hDo("GET", "/friendbot?addr="+kp.Address(), nil, nil); code != 400 || p.Extras.ResultCodes.OperationCodes[0] != "op_already_exists" {
		t.Fatalf("%d %+v", code, p)
	}
	if code, _ := e.hDo("GET", "/friendbot?addr=nope", nil, nil); code != 400 {
		t.Fatal(code)
	}
}
