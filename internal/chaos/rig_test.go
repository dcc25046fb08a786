package chaos

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The rig of the scenario tests: one rig (newRig) with one caller, the real store, the real RPC
// ledger and the local network, and the moves every scenario makes with it: call a key, arm a
// fault, check that the key paid once, run a caller on time beside the ledger's clock.

// quietRig is a rig of ten keys and one caller on the realistic network, with no fault armed.
func quietRig(t *testing.T) *rig {
	t.Helper()
	r, cleanup, err := newRig(Config{Seed: 1, Keys: 10, Callers: 1, Wave: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	return r
}

func (r *rig) call(k int) (transfer.Outcome, error) {
	return r.orch.Transfer(withCaller(context.Background(), r.newCaller(k, 0, false)), r.input(k))
}

func (r *rig) arm(t *testing.T, f stellarsim.Fault) {
	t.Helper()
	if err := r.net.InjectFault(f); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) assertOnce(t *testing.T, k int, out transfer.Outcome) {
	t.Helper()
	applied := r.net.Applied()
	if len(applied) != 1 {
		t.Fatalf("%d transactions applied, want exactly 1", len(applied))
	}
	if out.TransactionHash != applied[0].Hash {
		t.Fatalf("the caller got %s, the ledger applied %s", out.TransactionHash, applied[0].Hash)
	}
	rec, err := r.store.Get(context.Background(), r.storeKey(k))
	if err != nil || rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != applied[0].Hash {
		t.Fatalf("item = %+v, %v", rec, err)
	}
	if n := r.events.snapshot()["rebuilds"]; n != 0 {
		t.Fatalf("%d rebuilds: a new envelope was built while the first could still land", n)
	}
}

// callTwiceNotWaitingOnItself calls key 0 up to twice (named who 1, who 2), stopping at the first
// success, and fails the test if a call is told TRANSFER_IN_PROGRESS: no other request runs, only
// the leftover named by leftover.
func (r *rig) callTwiceNotWaitingOnItself(t *testing.T, who string, start time.Time, leftover string) []told {
	t.Helper()
	var answers []told
	for i := range 2 {
		a := told{who: fmt.Sprintf("%s %d", who, i+1)}
		a.out, a.err = r.callAs(a.who, 0)
		answers = append(answers, a)
		t.Logf("%s at +%v: %+v, %v", a.who, r.clock.Now().Sub(start), a.out, a.err)
		var p *transfer.InProgressError
		if errors.As(a.err, &p) {
			t.Errorf("%s was told TRANSFER_IN_PROGRESS at +%v: no other request was running, %s", a.who, r.clock.Now().Sub(start), leftover)
		}
		if a.err == nil {
			break
		}
	}
	return answers
}

// onTime runs fn (a caller) beside a participant of the virtual clock that wakes every 250 ms, so
// that ledgers close on time (the rig closes one at the first move of the clock past each
// interval) even while the caller sleeps for many intervals at once, as a real network would.
func (r *rig) onTime(fn func()) {
	var wg sync.WaitGroup
	var done atomic.Bool
	release := r.clock.Hold()
	r.clock.Go(&wg, func() {
		for !done.Load() {
			_ = r.clock.Sleep(context.Background(), 250*time.Millisecond)
		}
	})
	r.clock.Go(&wg, func() {
		defer done.Store(true)
		fn()
	})
	release()
	wg.Wait()
}

// probingLedger is the rig's ledger with the deployed ledger's probe of the latest ledger
// (transfer.LatestReader), which the rig's fault wrapper does not pass on.
type probingLedger struct {
	*faultyLedger
	probe transfer.LatestReader
}

func (l probingLedger) LatestLedger(ctx context.Context) (transfer.LedgerInfo, error) {
	return l.probe.LatestLedger(ctx)
}

// lbLedger is an RPC ledger on the rig's network configured as for several RPC instances behind
// one URL (STELLAR_RPC_LOAD_BALANCED=true): its lookups never claim history coverage
// (OldestLedger 0). It only looks up; its keys sign nothing.
func (r *rig) lbLedger(t *testing.T) *stellar.RPCLedger {
	t.Helper()
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: r.net.RPCURL(), Passphrase: r.net.Passphrase(),
		VaultAccount: keys.Vault.Address(), Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: keys.Fee.Address()}},
		Keys: signing.StaticKeys{K: keys}, Clock: r.clock, LoadBalanced: true})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// loadBalancedRig is a rig whose stellar-rpc is load balanced (Config.LoadBalanced, as
// STELLAR_RPC_LOAD_BALANCED=true deploys it; 8 channels, as in the campaign), its ledger probing
// the latest ledger as the deployed one does (probeLatest), on a network with 12 ledgers of
// history for lagging instances to trail.
func loadBalancedRig(t *testing.T) *rig {
	t.Helper()
	r, cleanup, err := newRig(Config{Seed: 1, Keys: 10, Callers: 1, Wave: 1, Channels: 8, LoadBalanced: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	r.probeLatest(t)
	for range 12 {
		r.clock.Advance(ledgerInterval)
	}
	return r
}

// probeLatest gives the rig's orchestrator the deployed RPC ledger's probe of the latest ledger
// (transfer.LatestReader, getLatestLedger) beside the rig's faults.
func (r *rig) probeLatest(t *testing.T) {
	t.Helper()
	lr, ok := r.ledger.Ledger.(transfer.LatestReader)
	if !ok {
		t.Fatal("the RPC ledger is not a transfer.LatestReader")
	}
	r.orch.Ledger = probingLedger{faultyLedger: r.ledger, probe: lr}
}

// callOnTimeUntilAnswered calls key 0 on time (onTime) up to calls times, named "call 1" and on,
// a minute of virtual time apart, until one is answered without an error; then it clears the
// network's faults. It fails the test if no call is answered, and returns every answer.
func (r *rig) callOnTimeUntilAnswered(t *testing.T, calls int) []told {
	t.Helper()
	var answers []told
	for i := range calls {
		a := told{who: fmt.Sprintf("call %d", i+1)}
		r.onTime(func() { a.out, a.err = r.callAs(a.who, 0) })
		answers = append(answers, a)
		t.Logf("%s at %v: %+v, %v", a.who, r.clock.Now(), a.out, a.err)
		if a.err == nil {
			break
		}
		r.clock.Advance(time.Minute)
	}
	r.net.ClearFaults()
	if last := answers[len(answers)-1]; last.err != nil {
		t.Fatalf("no answer within %d calls: %v", calls, last.err)
	}
	return answers
}
