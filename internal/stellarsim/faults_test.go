package stellarsim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// payTx builds a fresh 1 XLM payment between two new accounts.
func (e *env) payTx() (*txnbuild.Transaction, string) {
	e.t.Helper()
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	return tx, hashOf(e.t, tx, e.n.Passphrase())
}

func TestFaultRefuse(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRefuse})
	if _, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: b64(t, tx)}); err == nil {
		t.Fatal("refused connection answered")
	}
	e.n.CloseLedger()
	if got := e.getTx(hash); got.Status != "NOT_FOUND" || len(e.n.Applied()) != 0 {
		t.Fatalf("refused envelope landed: %+v", got)
	}
	if envs := e.n.Envelopes(); len(envs) != 1 || envs[0].Status != "NO_RESPONSE" || envs[0].Accepted {
		t.Fatalf("%+v", envs)
	}
	// The fault was for one submission: the same envelope now goes through.
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
}

func TestFaultDropResponseStillLands(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	if _, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: b64(t, tx)}); err == nil {
		t.Fatal("dropped response answered")
	}
	// A re-send of the same envelope is safe: DUPLICATE while queued.
	if r := e.send(b64(t, tx)); r.Status != "DUPLICATE" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	if got := e.getTx(hash); got.Status != "SUCCESS" {
		t.Fatalf("%+v", got)
	}
	envs := e.n.Envelopes()
	if envs[0].Status != "NO_RESPONSE" || !envs[0].Accepted {
		t.Fatalf("%+v", envs[0])
	}
}

func TestFaultDelay(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelay, Delay: 150 * time.Millisecond})
	start := time.Now()
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Fatalf("answered after %v", d)
	}
	// A client that gives up first sees a timeout, but the envelope was accepted.
	tx2, hash2 := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelay, Delay: 10 * time.Second})
	// rpcclient's context does not cut the HTTP exchange short: the HTTP
	// client's own timeout does.
	impatient := rpcclient.NewClient(e.n.RPCURL(), &http.Client{Timeout: 100 * time.Millisecond})
	defer impatient.Close()
	start = time.Now()
	if _, err := impatient.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: b64(t, tx2)}); err == nil {
		t.Fatal("expected a timeout")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("timed out after %v", d)
	}
	e.n.CloseLedger()
	for _, h := range []string{hash, hash2} {
		if got := e.getTx(h); got.Status != "SUCCESS" {
			t.Fatalf("%s: %+v", h, got)
		}
	}
}

func TestFaultAnswer(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER"})
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "ERROR", Code: "txBAD_SEQ"})
	// Faults are used in order, one answer per submission.
	if r := e.send(b64(t, tx)); r.Status != "TRY_AGAIN_LATER" || r.Hash != hash {
		t.Fatalf("%+v", r)
	}
	if code, _ := errorCode(t, e.send(b64(t, tx))); code != xdr.TransactionResultCodeTxBadSeq {
		t.Fatalf("got %s", stellarsim.TxCodeName(code))
	}
	e.n.CloseLedger()
	if len(e.n.Applied()) != 0 {
		t.Fatal("answered envelope was accepted")
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	// Count: the next N submissions.
	tx2, _ := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, Status: "TRY_AGAIN_LATER", Count: 2})
	for i := 0; i < 2; i++ {
		if r := e.send(b64(t, tx2)); r.Status != "TRY_AGAIN_LATER" {
			t.Fatalf("%d: %+v", i, r)
		}
	}
	if r := e.send(b64(t, tx2)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	// An HTTP status alone makes the RPC endpoint fail at the HTTP level.
	tx3, _ := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultAnswer, HTTPStatus: 503, API: "rpc"})
	if _, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: b64(t, tx3)}); err == nil {
		t.Fatal("503 parsed as an answer")
	}
	if e.n.Queued() != 2 {
		t.Fatalf("queued %d", e.n.Queued())
	}
}

func TestFaultDropEnvelope(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	for i := 0; i < 3; i++ {
		e.n.CloseLedger()
	}
	if got := e.getTx(hash); got.Status != "NOT_FOUND" || len(e.n.Applied()) != 0 {
		t.Fatalf("%+v", got)
	}
}

func TestFaultDelayInclusion(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2})
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	e.n.CloseLedger()
	if got := e.getTx(hash); got.Status != "NOT_FOUND" {
		t.Fatalf("%+v", got)
	}
	// Still queued: the same source cannot queue another.
	l := e.n.CloseLedger()
	if got := e.getTx(hash); got.Status != "SUCCESS" || got.Ledger != l.Sequence || l.Sequence != 4 {
		t.Fatalf("%+v (ledger %d)", got, l.Sequence)
	}
}

func TestFaultStall(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.send(b64(t, tx))
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultStall, Count: 2})
	for i := 0; i < 2; i++ {
		if l := e.n.CloseLedger(); l.Sequence != 1 {
			t.Fatalf("stalled close produced ledger %d", l.Sequence)
		}
	}
	if got := e.getTx(hash); got.Status != "NOT_FOUND" {
		t.Fatalf("%+v", got)
	}
	if l := e.n.CloseLedger(); l.Sequence != 2 {
		t.Fatalf("ledger %d", l.Sequence)
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultStall}) // until cleared
	for i := 0; i < 5; i++ {
		e.n.CloseLedger()
	}
	if l := e.n.LatestLedger(); l.Sequence != 2 {
		t.Fatalf("ledger %d", l.Sequence)
	}
	e.n.ClearFaults()
	if l := e.n.CloseLedger(); l.Sequence != 3 {
		t.Fatalf("ledger %d", l.Sequence)
	}
}

func TestFaultRetention(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()
	e.send(b64(t, tx))
	e.n.CloseLedger()
	e.n.CloseLedger()
	e.n.CloseLedger()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 2})
	got := e.getTx(hash)
	if got.Status != "NOT_FOUND" || got.OldestLedger != 3 {
		t.Fatalf("%+v", got)
	}
	e.n.ClearFaults()
	if got := e.getTx(hash); got.Status != "SUCCESS" {
		t.Fatalf("%+v", got)
	}
}

func TestFaultAPIFilter(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, _ := e.payTx()
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRefuse, API: "horizon"})
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	if f := e.n.Faults(); len(f) != 1 {
		t.Fatalf("%+v", f)
	}
	if err := e.n.AddFault(stellarsim.Fault{Kind: "nope"}); err == nil {
		t.Fatal("unknown kind accepted")
	}
}

func TestConcurrentSubmissions(t *testing.T) {
	e := newEnv(t, stellarsim.Options{CloseInterval: 20 * time.Millisecond, Clock: realClockForTest{}})
	const workers = 8
	kps := make([]*keypair.Full, workers)
	for i := range kps {
		kps[i] = e.funded(10 * xlm)
	}
	dest := e.funded(10 * xlm)
	errs := make(chan error, workers)
	for _, kp := range kps {
		go func() {
			acct, err := e.rpc.LoadAccount(e.ctx, kp.Address())
			if err != nil {
				errs <- err
				return
			}
			seq, _ := acct.GetSequenceNumber()
			for j := int64(1); j <= 3; j++ {
				tx, _ := txnbuild.NewTransaction(txnbuild.TransactionParams{
					SourceAccount: &txnbuild.SimpleAccount{AccountID: kp.Address(), Sequence: seq + j},
					Operations:    []txnbuild.Operation{payment(dest.Address(), txnbuild.NativeAsset{}, "1")},
					BaseFee:       100,
					Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimeout(60)},
				})
				tx, _ = tx.Sign(e.n.Passphrase(), kp)
				s, _ := tx.Base64()
				h, _ := tx.HashHex(e.n.Passphrase())
				for {
					r, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: s})
					if err != nil {
						errs <- err
						return
					}
					if r.Status == "PENDING" || r.Status == "DUPLICATE" {
						break
					}
					time.Sleep(5 * time.Millisecond) // TRY_AGAIN_LATER: a real client backs off
				}
				for {
					g, err := e.rpc.GetTransaction(e.ctx, protocol.GetTransactionRequest{Hash: h})
					if err != nil {
						errs <- err
						return
					}
					if g.Status == "SUCCESS" {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			errs <- nil
		}()
	}
	for range kps {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if n := len(e.n.Applied()); n != workers*3 {
		t.Fatalf("applied %d", n)
	}
	if bal := e.balance(dest.Address(), stellarsim.Native); bal != 10*xlm+workers*3*xlm {
		t.Fatalf("destination %d", bal)
	}
}

type realClockForTest struct{}

func (realClockForTest) Now() time.Time { return time.Now() }

func TestDisarmFaults(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	for _, f := range []stellarsim.Fault{
		{Kind: stellarsim.FaultStall, Count: 3},
		{Kind: stellarsim.FaultReadOrder, Count: 4, Ledgers: 2},
		{Kind: stellarsim.FaultDBLag, Ledgers: 1},
		{Kind: stellarsim.FaultInstances, Delay: time.Second, API: "rpc"},
		{Kind: stellarsim.FaultRetention, Ledgers: 2},
	} {
		if err := e.n.InjectFault(f); err != nil {
			t.Fatal(err)
		}
	}
	got := e.n.DisarmFaults(stellarsim.FaultReadOrder, stellarsim.FaultDBLag, stellarsim.FaultInstances)
	if len(got) != 3 || got[0].Kind != stellarsim.FaultReadOrder || got[0].Count != 4 || got[1].Count != -1 || got[2].Instances != 3 {
		t.Fatalf("disarmed %+v", got)
	}
	if left := e.n.Faults(); len(left) != 1 || left[0].Kind != stellarsim.FaultStall || left[0].Count != 3 {
		t.Fatalf("left armed %+v", left)
	}
	// The retention window is not a fault to disarm: it stays shrunk.
	tx, hash := e.payTx()
	e.send(b64(t, tx))
	e.n.ClearFaults()
	for range 4 {
		e.n.CloseLedger()
	}
	if got := e.getTx(hash); got.Status != "SUCCESS" {
		t.Fatalf("%+v", got)
	}
	e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 2})
	e.n.DisarmFaults(stellarsim.FaultRetention)
	if got := e.getTx(hash); got.Status != "NOT_FOUND" {
		t.Fatalf("retention window undone by DisarmFaults: %+v", got)
	}
}
