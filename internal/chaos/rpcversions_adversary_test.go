package chaos

import (
	"fmt"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestDeathProofOlderRPCBehindLoadBalancer (adversary): the rule that answers from different
// instances behind one URL prove nothing together, held on the stellar-rpc releases without
// getLatestLedger's closeTime (v23, v24: the close time is read with getLedgers, possibly from
// another instance than the getLatestLedger it completes) and with the range read first (v25.0),
// the profile switched while the service runs (after its start-up check read the current
// release). Three instances round-robin, the slowest 30 s behind, the read order race armed, the
// await probing between lookups: an envelope that landed is answered, one that was evicted is
// proven dead only by the source's sequence number and rebuilt once, and the key pays once.
func TestDeathProofOlderRPCBehindLoadBalancer(t *testing.T) {
	for _, profile := range []stellarsim.RPCVersion{stellarsim.RPCv24, stellarsim.RPCv23, stellarsim.RPCv25_0} {
		for _, f := range []stellarsim.Fault{
			{Kind: stellarsim.FaultDropResponse},
			{Kind: stellarsim.FaultDropEnvelope},
			{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3},
		} {
			for _, instances := range []int{2, 3} {
				t.Run(fmt.Sprintf("%s/%s/instances=%d", profile, faultName(f), instances), func(t *testing.T) {
					r, cleanup, err := newRig(Config{Seed: 1, Keys: 10, Callers: 1, Wave: 1, Channels: 8, LoadBalanced: true})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(cleanup)
					lr, ok := r.ledger.Ledger.(transfer.LatestReader)
					if !ok {
						t.Fatal("the RPC ledger is not a transfer.LatestReader")
					}
					r.orch.Ledger = probingLedger{faultyLedger: r.ledger, probe: lr}
					for range 12 {
						r.clock.Advance(ledgerInterval)
					}
					if err := r.net.SetRPCVersion(profile); err != nil {
						t.Fatal(err)
					}
					r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultInstances, Instances: instances, Delay: 30 * time.Second, API: "rpc"})
					r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 3, Count: 1000})
					r.arm(t, f)
					var answers []told
					for i := range 4 {
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
						t.Fatalf("no answer within four calls: %v", last.err)
					}
					r.assertPaidOnce(t, 0, answers...)
				})
			}
		}
	}
}
