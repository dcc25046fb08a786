package stellarsim

import (
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// The apply half of stellar-core's fee accounting, on a set this node did not trim: on one node
// the nomination's ACCOUNT_CANT_PAY_FEE check (TxSetUtils::getInvalidTxListWithErrors) keeps every
// fee source able to pay, so these states are reached here by hand, as a set nominated against
// another view of the ledger would reach them.

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

func internalNet(t *testing.T) *Network {
	t.Helper()
	n, err := newNetwork(Options{Clock: fixedClock{time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n *Network) testAccount(t *testing.T, stroops int64) *keypair.Full {
	t.Helper()
	kp, err := n.CreateKeypair(stroops)
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

func (n *Network) testPayment(t *testing.T, src, to *keypair.Full) *txnbuild.Transaction {
	t.Helper()
	a, _ := n.Account(src.Address())
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: src.Address(), Sequence: a.Sequence + 1},
		Operations:    []txnbuild.Operation{&txnbuild.Payment{Destination: to.Address(), Asset: txnbuild.NativeAsset{}, Amount: "1"}},
		BaseFee:       100,
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, n.clock.Now().Add(time.Hour).Unix())},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(n.passphrase, src); err != nil {
		t.Fatal(err)
	}
	return tx
}

// applyQueued applies the queued transaction of source as ledger 2's whole set, after set has
// changed the ledger (the nominated set skipped this node's trim).
func (n *Network) applyQueued(t *testing.T, source string, set func()) *AppliedTx {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	p := n.queue[source]
	if p == nil {
		t.Fatal("nothing queued")
	}
	set()
	seq := uint32(len(n.closeTimes)) + 1
	n.applySetLocked([]*pendingTx{p}, seq, n.nextCloseTime())
	return n.byHash[p.tx.innerHash]
}

// LedgerManagerImpl::processFeesSeqNums -> FeeBumpTransactionFrame::processFeeSeqNum charges the
// fee source min(balance, fee), even below its reserve; FeeBumpTransactionFrame::apply then runs
// the inner transaction without judging the fee source again (mInnerTx->apply with chargeFee
// false). A fee bump of 200 whose fee source holds 50 is charged 50 and its payment is made.
func TestFeeBumpChargedShortInnerStillRuns(t *testing.T) {
	n := internalNet(t)
	payer, src, wallet := n.testAccount(t, 100*10_000_000), n.testAccount(t, 10*10_000_000), n.testAccount(t, 10*10_000_000)
	fb, err := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: n.testPayment(t, src, wallet), FeeAccount: payer.Address(), BaseFee: 100})
	if err != nil {
		t.Fatal(err)
	}
	if fb, err = fb.Sign(n.passphrase, payer); err != nil {
		t.Fatal(err)
	}
	s, err := n.submit("rpc", mustB64(t, fb))
	if err != nil || s.status != StatusPending {
		t.Fatalf("%v %+v", err, s)
	}
	before, _ := n.Balance(wallet.Address(), Asset{})
	rec := n.applyQueued(t, src.Address(), func() { n.state.accounts[payer.Address()].balance = 50 })
	if rec == nil || rec.Status != "SUCCESS" || rec.FeeCharged != 50 {
		t.Fatalf("applied %+v, want SUCCESS with 50 charged", rec)
	}
	if got, _ := n.Balance(payer.Address(), Asset{}); got != 0 {
		t.Fatalf("payer %d, want 0", got)
	}
	if got, _ := n.Balance(wallet.Address(), Asset{}); got != before+10_000_000 {
		t.Fatalf("wallet %d, want %d: the inner payment runs", got, before+10_000_000)
	}
}

// TransactionFrame::commonPreApply -> commonValid(applying=true): the fee was charged already
// (feeToPay 0), so a source left below its reserve fails txINSUFFICIENT_BALANCE after the sequence
// check: included FAILED, fee charged, sequence number consumed, operations not applied.
func TestSourceBelowReserveAfterFeesIncludedFailed(t *testing.T) {
	n := internalNet(t)
	src, wallet := n.testAccount(t, 10*10_000_000), n.testAccount(t, 10*10_000_000)
	tx := n.testPayment(t, src, wallet)
	s, err := n.submit("rpc", mustB64(t, tx))
	if err != nil || s.status != StatusPending {
		t.Fatalf("%v %+v", err, s)
	}
	a, _ := n.Account(src.Address())
	rec := n.applyQueued(t, src.Address(), func() { n.state.accounts[src.Address()].balance = 2*5_000_000 - 10 })
	if rec == nil || rec.Status != "FAILED" || rec.ResultCode != "txINSUFFICIENT_BALANCE" || rec.FeeCharged != 100 {
		t.Fatalf("applied %+v, want FAILED txINSUFFICIENT_BALANCE with 100 charged", rec)
	}
	after, _ := n.Account(src.Address())
	if after.Sequence != a.Sequence+1 || after.Balance != 2*5_000_000-110 {
		t.Fatalf("source sequence %d -> %d, balance %d: want consumed and the fee charged", a.Sequence, after.Sequence, after.Balance)
	}
}

func mustB64(t *testing.T, tx interface{ Base64() (string, error) }) string {
	t.Helper()
	s, err := tx.Base64()
	if err != nil {
		t.Fatal(err)
	}
	return s
}
