// These tests show, through the official clients (go-stellar-sdk's rpcclient
// and horizonclient), the behaviours that make this network as strict as
// stellar-core 23 + stellar-rpc + Horizon: the TOO_LATE offset at
// submission, queue ageing and bans, visibility lag, and the read faults.
// Protocol 23 restores are in vault_test.go.

package stellarsim_test

import (
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// realistic is a network with the default visibility lag (1-3 s).
func realistic(t *testing.T) *env {
	return newEnv(t, stellarsim.Options{VisibilityLagMin: time.Second, VisibilityLagMax: 3 * time.Second})
}

// showAll moves the clock past the longest visibility lag.
func (e *env) showAll() { e.clock.Advance(3 * time.Second) }

func (e *env) payUntil(src *keypair.Full, to string, maxTime int64) (*txnbuild.Transaction, string) {
	e.t.Helper()
	tx := e.build(src, []txnbuild.Operation{payment(to, txnbuild.NativeAsset{}, "1")}, 0, maxTime)
	return tx, hashOf(e.t, tx, e.n.Passphrase())
}

func TestSubmitRefusesMaxTimeInsideUpperBoundOffset(t *testing.T) {
	e := realistic(t)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	lcl := e.n.LatestLedger().CloseTime.Unix()

	// 5 s expected close time: maxTime must be at least last close + 2 x 5 s
	// + the time since the last close (0 here).
	tooLate, _ := e.payUntil(a, b.Address(), lcl+9)
	if code, _ := errorCode(t, e.send(b64(t, tooLate))); code != xdr.TransactionResultCodeTxTooLate {
		t.Fatalf("maxTime = last close + 9 s: %s, want txTOO_LATE", stellarsim.TxCodeName(code))
	}
	ok, _ := e.payUntil(a, b.Address(), lcl+10)
	if r := e.send(b64(t, ok)); r.Status != "PENDING" {
		t.Fatalf("maxTime = last close + 10 s: %+v", r)
	}

	// Four seconds without a close widen the offset by four seconds, on
	// Horizon too (the same core behind it).
	e.clock.Advance(4 * time.Second)
	c := e.funded(10 * xlm)
	late, _ := e.payUntil(c, b.Address(), lcl+13)
	r, err := e.horizon().AsyncSubmitTransactionXDR(b64(t, late))
	if err != nil || r.TxStatus != "ERROR" {
		t.Fatalf("horizon: %v %+v", err, r)
	}
	var res xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(r.ErrorResultXDR, &res); err != nil || res.Result.Code != xdr.TransactionResultCodeTxTooLate {
		t.Fatalf("horizon result %v %+v", err, res.Result.Code)
	}
	fine, _ := e.payUntil(c, b.Address(), lcl+14)
	if r, err := e.horizon().AsyncSubmitTransactionXDR(b64(t, fine)); err != nil || r.TxStatus != "PENDING" {
		t.Fatalf("horizon maxTime = last close + 14 s after 4 s: %v %+v", err, r)
	}
}

func TestQueuedEnvelopeRecheckedAfterEachClose(t *testing.T) {
	e := realistic(t)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	lcl := e.n.LatestLedger().CloseTime.Unix()
	tx, hash := e.payUntil(a, b.Address(), lcl+10) // just valid at submission
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 1}); err != nil {
		t.Fatal(err)
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	// The next close (5 s later) is not its ledger; after it core re-checks
	// the queue with the offset: maxTime < close + 10 s, so it is dropped and
	// banned, although it would still have been valid for the ledger after.
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	if e.n.Queued() != 0 {
		t.Fatal("still queued after the re-check")
	}
	if r := e.send(b64(t, tx)); r.Status != "TRY_AGAIN_LATER" {
		t.Fatalf("resend of a banned envelope: %+v", r)
	}
	e.clock.Advance(time.Second)
	e.n.CloseLedger()
	e.showAll()
	if got := e.getTx(hash); got.Status != "NOT_FOUND" || len(e.n.Applied()) != 0 {
		t.Fatalf("%+v", got)
	}
}

func TestQueuedEnvelopeEvictedAfterFourLedgers(t *testing.T) {
	e := realistic(t)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx, hash := e.payUntil(a, b.Address(), 0)
	// The network never gets to include it (surge pricing on pubnet; a
	// fault here).
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 100}); err != nil {
		t.Fatal(err)
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	for i := 1; i <= 4; i++ {
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
		if queued := e.n.Queued(); (i < 4) != (queued == 1) {
			t.Fatalf("after %d closes: %d queued", i, queued)
		}
		if r := e.send(b64(t, tx)); i < 4 && r.Status != "DUPLICATE" || i == 4 && r.Status != "TRY_AGAIN_LATER" {
			t.Fatalf("resend after %d closes: %s", i, r.Status)
		}
	}
	evictedAt := e.n.LatestLedger().Sequence
	// Banned for TRANSACTION_QUEUE_BAN_LEDGERS closes: evicted at L, refused
	// while the last closed ledger is L..L+9, accepted again at L+10.
	for e.n.LatestLedger().Sequence < evictedAt+9 {
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
		if r := e.send(b64(t, tx)); e.n.LatestLedger().Sequence <= evictedAt+9 && r.Status != "TRY_AGAIN_LATER" {
			t.Fatalf("resend at ledger %d: %s", e.n.LatestLedger().Sequence, r.Status)
		}
	}
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("resend after the ban: %+v", r)
	}
	e.clock.Advance(5 * time.Second)
	e.n.CloseLedger()
	e.showAll()
	if got := e.getTx(hash); got.Status != "SUCCESS" {
		t.Fatalf("after the ban: %+v", got)
	}
	envs := e.n.Envelopes()
	if envs[0].Outcome == "" || envs[0].Outcome[:7] != "evicted" {
		t.Fatalf("first envelope outcome %q", envs[0].Outcome)
	}
}

func TestLedgerShownOneToThreeSecondsAfterClose(t *testing.T) {
	e := realistic(t)
	hc := e.horizon()
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx, hash := e.payUntil(a, b.Address(), 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.clock.Advance(5 * time.Second)
	closed := e.n.CloseLedger()
	if e.n.LatestLedger().Sequence != closed.Sequence {
		t.Fatal("core does not have the ledger it closed")
	}
	// Not shown yet: RPC and Horizon still have the previous ledger, and the
	// account's sequence number as it was in it.
	ll, err := e.rpc.GetLatestLedger(e.ctx)
	if err != nil || ll.Sequence != closed.Sequence-1 {
		t.Fatalf("getLatestLedger at close: %v %+v", err, ll)
	}
	if got := e.getTx(hash); got.Status != "NOT_FOUND" || got.LatestLedger != closed.Sequence-1 {
		t.Fatalf("getTransaction at close: %+v", got)
	}
	acct, err := e.rpc.LoadAccount(e.ctx, a.Address())
	if seq, _ := acct.GetSequenceNumber(); err != nil || seq != tx.SequenceNumber()-1 {
		t.Fatalf("sequence number at close: %v %d", err, seq)
	}
	if _, err := hc.TransactionDetail(hash); err == nil {
		t.Fatal("Horizon shows the transaction at close")
	}
	if ha, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()}); err != nil || ha.Sequence != tx.SequenceNumber()-1 {
		t.Fatalf("Horizon account at close: %v %d", err, ha.Sequence)
	}
	// Within one to three seconds it is shown everywhere; one millisecond
	// before the first second, nowhere.
	e.clock.Advance(time.Second - time.Millisecond)
	if got := e.getTx(hash); got.Status != "NOT_FOUND" {
		t.Fatalf("shown before 1 s: %+v", got)
	}
	e.clock.Advance(2*time.Second + time.Millisecond)
	if got := e.getTx(hash); got.Status != "SUCCESS" || got.Ledger != closed.Sequence || got.LatestLedger != closed.Sequence {
		t.Fatalf("getTransaction after 3 s: %+v", got)
	}
	if htx, err := hc.TransactionDetail(hash); err != nil || htx.Ledger != int32(closed.Sequence) {
		t.Fatalf("Horizon after 3 s: %v %+v", err, htx.Ledger)
	}
	if ha, err := hc.AccountDetail(horizonclient.AccountRequest{AccountID: a.Address()}); err != nil || ha.Sequence != tx.SequenceNumber() {
		t.Fatalf("Horizon account after 3 s: %v %d", err, ha.Sequence)
	}
	root, err := hc.Root()
	if err != nil || root.HorizonSequence != int32(closed.Sequence) {
		t.Fatalf("Horizon root: %v %+v", err, root.HorizonSequence)
	}
	if v := e.n.VisibleLedger(); v.Sequence != closed.Sequence {
		t.Fatalf("VisibleLedger %+v", v)
	}
}

func TestVisibilityLagIsRepeatable(t *testing.T) {
	lags := func() []time.Duration {
		e := newEnv(t, stellarsim.Options{VisibilityLagMin: time.Second, VisibilityLagMax: 3 * time.Second, VisibilitySeed: 7})
		var out []time.Duration
		for i := 0; i < 20; i++ {
			e.clock.Advance(5 * time.Second)
			closed := e.n.CloseLedger()
			var d time.Duration
			for e.n.VisibleLedger().Sequence != closed.Sequence {
				e.clock.Advance(100 * time.Millisecond)
				d += 100 * time.Millisecond
			}
			if d < 900*time.Millisecond || d > 3*time.Second {
				t.Fatalf("ledger %d shown after %v", closed.Sequence, d)
			}
			out = append(out, d)
		}
		return out
	}
	first, second := lags(), lags()
	distinct := map[time.Duration]bool{}
	for i := range first {
		if first[i] != second[i] {
			t.Fatalf("run 2 differs at ledger %d: %v vs %v", i+2, first[i], second[i])
		}
		distinct[first[i]] = true
	}
	if len(distinct) < 3 {
		t.Fatalf("lags hardly vary: %v", first)
	}
}

func TestFaultReadOrderNotFoundWithLaterLatestLedger(t *testing.T) {
	e := realistic(t)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx, hash := e.payUntil(a, b.Address(), 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.clock.Advance(5 * time.Second)
	closed := e.n.CloseLedger()
	e.showAll()
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultReadOrder}); err != nil {
		t.Fatal(err)
	}
	got := e.getTx(hash)
	if got.Status != "NOT_FOUND" || got.LatestLedger != closed.Sequence {
		t.Fatalf("under read_order: %+v, want NOT_FOUND with latestLedger %d", got, closed.Sequence)
	}
	// The transaction is in the ledger that latestLedger already covers.
	if applied, ok := e.n.Transaction(hash); !ok || applied.Ledger != got.LatestLedger {
		t.Fatalf("applied %+v", applied)
	}
	if got := e.getTx(hash); got.Status != "SUCCESS" || got.Ledger != closed.Sequence {
		t.Fatalf("after the fault: %+v", got)
	}
}

func TestFaultDBLagEntriesAheadOfTransactions(t *testing.T) {
	e := realistic(t)
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	tx, hash := e.payUntil(a, b.Address(), 0)
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	e.clock.Advance(5 * time.Second)
	closed := e.n.CloseLedger()
	e.showAll()
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDBLag, Ledgers: 1}); err != nil {
		t.Fatal(err)
	}
	// getLedgerEntries (core) already has the used sequence number while
	// getTransaction (the database) does not have the transaction.
	acct, err := e.rpc.LoadAccount(e.ctx, a.Address())
	if seq, _ := acct.GetSequenceNumber(); err != nil || seq != tx.SequenceNumber() {
		t.Fatalf("sequence number from core: %v %d", err, seq)
	}
	got := e.getTx(hash)
	if got.Status != "NOT_FOUND" || got.LatestLedger != closed.Sequence-1 {
		t.Fatalf("getTransaction from the lagging database: %+v", got)
	}
	e.n.ClearFaults()
	if got := e.getTx(hash); got.Status != "SUCCESS" {
		t.Fatalf("after clearing: %+v", got)
	}
}

func TestFaultInstancesAnswerWithDifferentLags(t *testing.T) {
	e := realistic(t)
	if err := e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultInstances, Instances: 2, Delay: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(5 * time.Second)
	closed := e.n.CloseLedger()
	e.showAll() // shown by the first instance, not by the one 10 s behind
	seen := map[uint32]int{}
	for i := 0; i < 4; i++ {
		ll, err := e.rpc.GetLatestLedger(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		seen[ll.Sequence]++
	}
	if seen[closed.Sequence] != 2 || seen[closed.Sequence-1] != 2 {
		t.Fatalf("RPC instances answered %v", seen)
	}
	hc := e.horizon()
	var got []int32
	for i := 0; i < 2; i++ {
		root, err := hc.Root()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, root.HorizonSequence)
	}
	if got[0] == got[1] {
		t.Fatalf("Horizon instances answered %v", got)
	}
	e.clock.Advance(10 * time.Second)
	for i := 0; i < 2; i++ {
		if ll, _ := e.rpc.GetLatestLedger(e.ctx); ll.Sequence != closed.Sequence {
			t.Fatalf("slow instance after 13 s: %d", ll.Sequence)
		}
	}
}

func TestReadFaultsThroughAdminAPI(t *testing.T) {
	e := realistic(t)
	var out struct {
		Faults []stellarsim.Fault `json:"faults"`
	}
	body := `[{"kind":"read_order","count":2},{"kind":"db_lag","ledgers":3},{"kind":"instances","instances":3,"delay":"20s","api":"horizon"}]`
	if code := e.admin("POST", "/_sim/faults", body, &out); code != 201 || len(out.Faults) != 3 {
		t.Fatalf("%d %+v", code, out)
	}
	if f := out.Faults[2]; f.Kind != "instances" || f.Instances != 3 || f.Delay != 20*time.Second || f.Count != -1 {
		t.Fatalf("instances fault %+v", f)
	}
	for _, bad := range []string{`{"kind":"db_lag"}`, `{"kind":"instances","instances":1,"delay":"1s"}`, `{"kind":"instances"}`, `{"kind":"read_order","api":"horizon"}`} {
		if code := e.admin("POST", "/_sim/faults", bad, nil); code != 400 {
			t.Fatalf("%s: %d", bad, code)
		}
	}
}

func TestUpperBoundOffsetFollowsExpectedCloseInterval(t *testing.T) {
	// A 1 s network (make run's devstack tests): maxTime >= last close + 2 s.
	e := newEnv(t, stellarsim.Options{ExpectedCloseInterval: time.Second})
	a, b := e.funded(10*xlm), e.funded(10*xlm)
	lcl := e.n.LatestLedger().CloseTime.Unix()
	tooLate, _ := e.payUntil(a, b.Address(), lcl+1)
	if code, _ := errorCode(t, e.send(b64(t, tooLate))); code != xdr.TransactionResultCodeTxTooLate {
		t.Fatalf("maxTime = last close + 1 s: %s", stellarsim.TxCodeName(code))
	}
	ok, _ := e.payUntil(a, b.Address(), lcl+2)
	if r := e.send(b64(t, ok)); r.Status != "PENDING" {
		t.Fatalf("maxTime = last close + 2 s: %+v", r)
	}
}
