package stellarsim_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

const xlm = int64(10_000_000)

// fakeClock is a settable clock; tests move it, never sleep for it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type env struct {
	t     *testing.T
	n     *stellarsim.Network
	clock *fakeClock
	rpc   *rpcclient.Client
	ctx   context.Context
}

func newEnv(t *testing.T, opts stellarsim.Options) *env {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	if opts.Clock == nil {
		opts.Clock = clock
	}
	if opts.VisibilityLagMin == 0 && opts.VisibilityLagMax == 0 {
		// Most tests read a ledger as soon as they close it; the lag has its
		// own tests (realism_test.go), which set it explicitly.
		opts.NoVisibilityLag = true
	}
	n, err := stellarsim.Start(opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = n.Close() })
	c := rpcclient.NewClient(n.RPCURL(), nil)
	t.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return &env{t: t, n: n, clock: clock, rpc: c, ctx: ctx}
}

// funded creates an account holding amount lumens.
func (e *env) funded(amount int64) *keypair.Full {
	e.t.Helper()
	kp, err := e.n.CreateKeypair(amount)
	if err != nil {
		e.t.Fatalf("CreateKeypair: %v", err)
	}
	return kp
}

// build makes a signed transaction from src with its next sequence number
// (read over RPC), valid until maxTime (0: now + 5 minutes).
func (e *env) build(src *keypair.Full, ops []txnbuild.Operation, fee int64, maxTime int64, signers ...*keypair.Full) *txnbuild.Transaction {
	e.t.Helper()
	acct, err := e.rpc.LoadAccount(e.ctx, src.Address())
	if err != nil {
		e.t.Fatalf("LoadAccount %s: %v", src.Address(), err)
	}
	seq, _ := acct.GetSequenceNumber()
	return e.buildSeq(src, seq+1, ops, fee, maxTime, signers...)
}

func (e *env) buildSeq(src *keypair.Full, seq int64, ops []txnbuild.Operation, fee int64, maxTime int64, signers ...*keypair.Full) *txnbuild.Transaction {
	e.t.Helper()
	if maxTime == 0 {
		maxTime = e.clock.Now().Add(5 * time.Minute).Unix()
	}
	if fee == 0 {
		fee = 100
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: src.Address(), Sequence: seq},
		Operations:    ops,
		BaseFee:       fee,
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime)},
	})
	if err != nil {
		e.t.Fatalf("NewTransaction: %v", err)
	}
	if len(signers) == 0 {
		signers = []*keypair.Full{src}
	}
	tx, err = tx.Sign(e.n.Passphrase(), signers...)
	if err != nil {
		e.t.Fatalf("Sign: %v", err)
	}
	return tx
}

func b64(t *testing.T, tx interface{ Base64() (string, error) }) string {
	t.Helper()
	s, err := tx.Base64()
	if err != nil {
		t.Fatalf("Base64: %v", err)
	}
	return s
}

func hashOf(t *testing.T, tx *txnbuild.Transaction, passphrase string) string {
	t.Helper()
	h, err := tx.HashHex(passphrase)
	if err != nil {
		t.Fatalf("HashHex: %v", err)
	}
	return h
}

func (e *env) send(envelope string) protocol.SendTransactionResponse {
	e.t.Helper()
	r, err := e.rpc.SendTransaction(e.ctx, protocol.SendTransactionRequest{Transaction: envelope})
	if err != nil {
		e.t.Fatalf("SendTransaction: %v", err)
	}
	if r.LatestLedger == 0 || r.LatestLedgerCloseTime == 0 {
		e.t.Fatalf("sendTransaction without latestLedger / close time: %+v", r)
	}
	return r
}

func (e *env) getTx(hash string) protocol.GetTransactionResponse {
	e.t.Helper()
	r, err := e.rpc.GetTransaction(e.ctx, protocol.GetTransactionRequest{Hash: hash})
	if err != nil {
		e.t.Fatalf("GetTransaction: %v", err)
	}
	return r
}

// errorCode decodes errorResultXdr; for fee bumps it returns outer and inner codes.
func errorCode(t *testing.T, r protocol.SendTransactionResponse) (xdr.TransactionResultCode, xdr.TransactionResultCode) {
	t.Helper()
	if r.Status != "ERROR" {
		t.Fatalf("status %s, want ERROR", r.Status)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil {
		t.Fatalf("errorResultXdr %q: %v", r.ErrorResultXDR, err)
	}
	inner := xdr.TransactionResultCode(0)
	if p := res.Result.InnerResultPair; p != nil {
		inner = p.Result.Result.Code
	}
	return res.Result.Code, inner
}

func payment(to string, asset txnbuild.Asset, amount string) *txnbuild.Payment {
	return &txnbuild.Payment{Destination: to, Asset: asset, Amount: amount}
}

func (e *env) balance(address string, asset stellarsim.Asset) int64 {
	e.t.Helper()
	b, err := e.n.Balance(address, asset)
	if err != nil {
		e.t.Fatalf("Balance: %v", err)
	}
	return b
}
