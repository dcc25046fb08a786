package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Reads of stellar-rpc that race its ingestion, trail its core or come from several instances
// behind one URL: none of them proves an envelope dead or lets the await give up on a landed one,
// and the key pays once.

// TestReadOrderDoesNotProveDeath: a NOT_FOUND read while stellar-rpc catches up proves nothing;
// a proof of death judges only a ledger read before the search, which the search then covers.
// stellar-rpc's getTransaction reads the transaction before the ledger range
// (get_transaction.go), so while it catches up a NOT_FOUND can carry a latestLedger, closed after
// the envelope's maxTime, that includes the ledger holding the envelope. With the vault as the
// only source (no fee bump, one lookup) a proof trusting the NOT_FOUND answer's own latest ledger
// takes that for death and releases a key whose envelope landed (the test shows that proof
// fooled); the sweep's Settle finds the envelope landed, and the retry replays it.
func TestReadOrderDoesNotProveDeath(t *testing.T) {
	r := quietRig(t) // vault only: one hash, one lookup
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash // the invocation dies right after its send
		}
		return nil
	}
	if _, err := r.call(0); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v", err)
	}
	r.orch.Hooks = nil
	// The envelope lands in the next ledger; ledgers close far past its maxTime; the lease expires.
	for range 24 {
		r.clock.Advance(ledgerInterval)
	}
	if len(r.net.Applied()) != 1 {
		t.Fatalf("the envelope should have landed: applied %+v, envelopes %+v", r.net.Applied(), r.net.Envelopes())
	}
	rec, err := r.store.Get(context.Background(), r.storeKey(0))
	if err != nil || rec.Envelope == nil {
		t.Fatalf("item = %+v, %v", rec, err)
	}
	env := *rec.Envelope
	readOrder := stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 60, Count: 1} // RPC catching up

	// The old proof: getTransaction alone, judged by its own answer's latest ledger.
	r.arm(t, readOrder)
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer c.Close()
	resp, err := c.GetTransaction(context.Background(), protocol.GetTransactionRequest{Hash: env.InnerHash})
	if err != nil {
		t.Fatal(err)
	}
	old := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: resp.LatestLedger,
		LatestLedgerCloseTime: time.Unix(resp.LatestLedgerCloseTime, 0), OldestLedger: resp.OldestLedger}
	if resp.Status != protocol.TransactionStatusNotFound || !transfer.ProvenDead(env, old) {
		t.Fatalf("the read-order fault should make the old proof release a landed envelope: %+v", resp)
	}

	// The proof as it is: the sweep's Settle, with the same fault armed again.
	r.arm(t, readOrder)
	st, err := r.orch.Settle(context.Background(), rec)
	if err != nil || st.Resolution != transfer.ResolvedLanded {
		t.Fatalf("Settle = %s (%+v), %v; want the landed envelope found", st.Resolution, st.Lookup, err)
	}
	out, err := r.call(0)
	if err != nil || !out.Replayed {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	r.assertOnce(t, 0, out)
}

// TestLoadBalancedReadsDecideNothingAndPayOnce: behind a load balancer no read of one instance
// decides anything with another's: an envelope that landed is answered, one that was evicted is
// proven dead only by the channel's sequence number and rebuilt once, and the key pays once.
// STELLAR_RPC_LOAD_BALANCED=true, 8 channels as in the campaign: the await's probe of the latest
// ledger, the lookup's own getLatestLedger and its getTransaction each go to whichever of three
// instances answers next, the slowest 30 s behind, while stellar-rpc's read order hides fresh
// transactions from lookups. A probe may show the target ledger from a fresh instance and the
// lookup then search a lagging one, or a NOT_FOUND carry a latest ledger its search did not
// cover, so the await's target moves past the ledger holding the envelope.
func TestLoadBalancedReadsDecideNothingAndPayOnce(t *testing.T) {
	for _, f := range []stellarsim.Fault{
		{Kind: stellarsim.FaultDropResponse},
		{Kind: stellarsim.FaultDropEnvelope},
		{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3},
	} {
		t.Run(faultName(f), func(t *testing.T) {
			r := loadBalancedRig(t)
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultInstances, Instances: 3, Delay: 30 * time.Second, API: "rpc"})
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 3, Count: 1000})
			r.arm(t, f)
			r.assertPaidOnce(t, 0, r.callOnTimeUntilAnswered(t, 3)...)
		})
	}
}

// TestLoadBalancedReadsOfOlderRPCDecideNothingAndPayOnce:
// TestLoadBalancedReadsDecideNothingAndPayOnce's rule held on the stellar-rpc releases without
// getLatestLedger's closeTime (v23, v24: the close time is read with getLedgers, possibly from
// another instance than the getLatestLedger it completes) and with the range read first (v25.0),
// the profile switched while the service runs (after its start-up check read the current release):
// answers from different instances behind one URL prove nothing together. Two or three instances
// round-robin, the slowest 30 s behind, the read order race armed, the await probing between
// lookups: an envelope that landed is answered, one that was evicted is proven dead only by the
// source's sequence number and rebuilt once, and the key pays once.
func TestLoadBalancedReadsOfOlderRPCDecideNothingAndPayOnce(t *testing.T) {
	for _, profile := range []stellarsim.RPCVersion{stellarsim.RPCv24, stellarsim.RPCv23, stellarsim.RPCv25_0} {
		for _, f := range []stellarsim.Fault{
			{Kind: stellarsim.FaultDropResponse},
			{Kind: stellarsim.FaultDropEnvelope},
			{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3},
		} {
			for _, instances := range []int{2, 3} {
				t.Run(fmt.Sprintf("%s/%s/instances=%d", profile, faultName(f), instances), func(t *testing.T) {
					r := loadBalancedRig(t)
					if err := r.net.SetRPCVersion(profile); err != nil {
						t.Fatal(err)
					}
					r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultInstances, Instances: instances, Delay: 30 * time.Second, API: "rpc"})
					r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 3, Count: 1000})
					r.arm(t, f)
					r.assertPaidOnce(t, 0, r.callOnTimeUntilAnswered(t, 4)...)
				})
			}
		}
	}
}

// TestPastRPCLagDoesNotParkLaterTransfers: a visibility lag learnt while stellar-rpc trailed its
// core does not outlive it: once RPC catches up, a transfer whose envelope lands in the next
// ledger is answered 200 within a few ledgers, not parked in doubt. The process-wide Cadence learns
// the visibility lag from precise reads. RPC's database trails its core by 8 ledgers (db_lag,
// about 40 s) while one transfer runs, so the lag estimate becomes about 40 s; then RPC catches
// up. An await that predicted the next envelope visible 40 s after its close would sleep to the end
// of the budget and park the landed transfer without a look-up after the send, and nothing would
// correct the estimate (a correction needs a read at the predicted time, after the deadline): in
// a Lambda instance every later transfer would end TRANSFER_IN_DOUBT and page. Played with lookups
// only and with the deployed RPC ledger's getLatestLedger probes.
func TestPastRPCLagDoesNotParkLaterTransfers(t *testing.T) {
	for _, probe := range []bool{false, true} {
		name := "lookups"
		if probe {
			name = "probe" // the deployed RPC ledger's getLatestLedger probes (transfer.LatestReader)
		}
		t.Run(name, func(t *testing.T) {
			r := quietRig(t)
			if probe {
				r.probeLatest(t)
			}
			r.orch.Settings = func() transfer.Settings {
				s := transfer.DefaultSettings()
				s.Timeout = 25 * time.Second // TransferTimeoutMs's default in template.yaml
				return s
			}
			for range 12 {
				r.clock.Advance(ledgerInterval) // a network with some history, for the database to trail
			}
			r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDBLag, Ledgers: 8})
			first := told{who: "during the lag"}
			r.onTime(func() { first.out, first.err = r.callAs("first", 0) })
			lag := r.orch.Cadence.Lag()
			t.Logf("during the lag: %+v, %v; learnt lag %v", first.out, first.err, lag)
			if lag < 30*time.Second {
				t.Fatalf("learnt lag %v; the test needs the db_lag learnt (about 40 s)", lag)
			}
			r.net.ClearFaults() // RPC catches up: every ledger shown 1 to 3 s after it closes
			r.clock.Advance(ledgerInterval)
			r.shown(t)
			start := r.clock.Now()
			second := told{who: "after the lag"}
			r.onTime(func() { second.out, second.err = r.callAs("second", 1) })
			took := r.clock.Now().Sub(start)
			t.Logf("after the lag: %+v, %v in %v; lag now %v", second.out, second.err, took, r.orch.Cadence.Lag())
			if second.err != nil {
				t.Errorf("healthy network, call = %v after %v; want 200: its envelope landed in the next ledger", second.err, took)
			}
			if took > 3*ledgerInterval {
				t.Errorf("the call took %v on a healthy network; want about a ledger and its visibility lag", took)
			}
			r.assertPaidOnce(t, 1, second)
		})
	}
}
