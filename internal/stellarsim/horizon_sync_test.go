package stellarsim_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// movingClock is a test clock that a driver moves on: the settable fakeClock (which does not
// report its moves: the network looks at it again every few milliseconds) or internal/vclock's
// Clock (which reports them: the network wakes at each move).
type movingClock interface {
	stellarsim.Clock
	Advance(d time.Duration)
}

// submitDriven runs submit (a synchronous POST /transactions to Horizon) while this goroutine
// plays the network's time: it closes a ledger while something is queued and moves the clock on
// by step otherwise, until the answer comes. Nothing here waits for real time to pass except the
// driver's pause between steps.
func submitDriven(t *testing.T, n *stellarsim.Network, clock movingClock, submit func() (hProtocol.Transaction, error)) (hProtocol.Transaction, error) {
	t.Helper()
	type answer struct {
		tx  hProtocol.Transaction
		err error
	}
	done := make(chan answer, 1)
	go func() {
		got, err := submit()
		done <- answer{got, err}
	}()
	for {
		select {
		case a := <-done:
			return a.tx, a.err
		case <-time.After(time.Millisecond):
		}
		if n.Queued() > 0 {
			n.CloseLedger()
		} else {
			clock.Advance(100 * time.Millisecond)
		}
	}
}

// The ordinary client pattern against Horizon alone, with RPC and Horizon showing a ledger 1-3 s
// after it closes: load the account, submit synchronously, read the transaction and the account
// back at once, and again; then a fee bump around a payment of the same account. Each 200 comes
// only once the same Horizon shows the transaction (stellar-horizon txsub: the answer is read from
// its own history), so every read right after it finds the transaction and the new sequence
// number, and the next submission is never refused txBAD_SEQ.
func TestHorizonSyncSubmitAnswersFromHistory(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		clock movingClock
	}{
		{"polled clock", &fakeClock{t: start}},
		{"reporting clock", vclock.New(start)},
	} {
		clock := tc.clock
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, stellarsim.Options{Clock: clock, VisibilityLagMin: time.Second, VisibilityLagMax: 3 * time.Second})
			hc := &horizonclient.Client{HorizonURL: e.n.URL(), HTTP: &http.Client{}}
			a, b := e.funded(100*xlm), e.funded(100*xlm)
			clock.Advance(3 * time.Second)
			payFrom := func(src *keypair.Full) *txnbuild.Transaction {
				acct, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: src.Address()})
				if err != nil {
					t.Fatal(err)
				}
				tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
					SourceAccount: &acct, IncrementSequenceNum: true, BaseFee: 100,
					Operations:    []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")},
					Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, clock.Now().Add(5*time.Minute).Unix())},
				})
				if err != nil {
					t.Fatal(err)
				}
				if tx, err = tx.Sign(e.n.Passphrase(), src); err != nil {
					t.Fatal(err)
				}
				return tx
			}
			readBack := func(step string, hashes []string, seq int64) {
				for _, h := range hashes {
					if got, err := hc.TransactionDetail(h); err != nil || !got.Successful {
						t.Fatalf("%s: GET /transactions/%s right after the 200: %v", step, h, err)
					}
				}
				acct, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()})
				if err != nil || acct.Sequence != seq {
					t.Fatalf("%s: /accounts shows sequence %d, want %d (%v)", step, acct.Sequence, seq, err)
				}
			}
			for i := range 10 {
				tx := payFrom(a)
				got, err := submitDriven(t, e.n, clock, func() (hProtocol.Transaction, error) { return hc.SubmitTransaction(tx) })
				if err != nil || !got.Successful {
					t.Fatalf("payment %d: %v", i, err)
				}
				readBack("payment", []string{got.Hash}, tx.SequenceNumber())
			}
			inner := payFrom(a)
			fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: inner, FeeAccount: b.Address(), BaseFee: 1000})
			if err != nil {
				t.Fatal(err)
			}
			if fb, err = fb.Sign(e.n.Passphrase(), b); err != nil {
				t.Fatal(err)
			}
			got, err := submitDriven(t, e.n, clock, func() (hProtocol.Transaction, error) { return hc.SubmitFeeBumpTransaction(fb) })
			if err != nil || !got.Successful {
				t.Fatalf("fee bump: %v", err)
			}
			outer, _ := fb.HashHex(e.n.Passphrase())
			readBack("fee bump", []string{outer, hashOf(t, inner, e.n.Passphrase())}, inner.SequenceNumber())
			if n := len(e.n.Applied()); n != 11 {
				t.Fatalf("applied %d, want 11", n)
			}
		})
	}
}

// A synchronous submission refused txBAD_SEQ while Horizon trails core: Horizon waits until its
// history shows the account at that sequence number, then answers from history, so a re-send
// of the applied envelope is its 200, not a 400.
func TestHorizonSyncBadSeqWaitsForHistory(t *testing.T) {
	clock := vclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e := newEnv(t, stellarsim.Options{Clock: clock, VisibilityLagMin: 2 * time.Second, VisibilityLagMax: 2 * time.Second})
	hc := &horizonclient.Client{HorizonURL: e.n.URL(), HTTP: &http.Client{}}
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.n.CloseLedger()
	// Core has applied it; stay past its ban (N..N+8), inside the visibility lag: core answers
	// txBAD_SEQ to the re-send, while Horizon does not show the ledger yet.
	for range 9 {
		e.n.CloseLedger()
	}
	var wg sync.WaitGroup
	var got hProtocol.Transaction
	var err error
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, err = hc.SubmitTransaction(tx)
	}()
	for e.n.Envelopes()[len(e.n.Envelopes())-1].Code != "txBAD_SEQ" {
		<-time.After(time.Millisecond)
	}
	clock.Advance(2 * time.Second)
	wg.Wait()
	if err != nil || !got.Successful || got.Hash != hashOf(t, tx, e.n.Passphrase()) {
		t.Fatalf("re-send: %v %+v", err, got)
	}
}

// When Horizon's history does not reach the account's sequence number before the submission
// timeout, the answer is Horizon's 504, not the txBAD_SEQ its history cannot confirm yet.
func TestHorizonSyncBadSeqTimesOut(t *testing.T) {
	e := newEnv(t, stellarsim.Options{HorizonSubmitTimeout: 50 * time.Millisecond,
		VisibilityLagMin: 2 * time.Second, VisibilityLagMax: 2 * time.Second})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	e.send(b64(t, tx))
	for range 10 {
		e.n.CloseLedger()
	}
	_, err := e.horizon().SubmitTransaction(tx)
	if herr := horizonErr(t, err); herr.Problem.Status != 504 {
		t.Fatalf("%+v", herr.Problem)
	}
}
