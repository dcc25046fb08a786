package stellar

import (
	"fmt"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Rule (internal/transfer/doc.go and proof.go: when an envelope is proven dead): an envelope that landed is never proven dead. On every stellar-rpc
// profile (getLatestLedger without closeTime before v25.0, the range read first before v25.1),
// with RPC's database trailing its core by 1 to 30 ledgers (db_lag: getLatestLedger, getLedgers
// and getTransaction from the database, getLedgerEntries from core) and the read order race armed,
// an envelope included three ledgers after its send is looked up at every ledger until its maxTime is
// well past: each answer is SUCCESS or an unproven NOT_FOUND, and SUCCESS once the lag clears.
func TestLandedEnvelopeNeverProvenDeadOnOlderRPC(t *testing.T) {
	for _, profile := range stellarsim.RPCVersions {
		for _, lag := range []int{1, 6, 30} {
			t.Run(fmt.Sprintf("%s/db_lag=%d", profile, lag), func(t *testing.T) {
				e := newSuiteEnv(t, "rpc", suiteOpts{rpcVersion: profile})
				env := e.prepare(t, e.wallet, unit)
				// Included three ledgers on (a longer wait in the queue gets it evicted: it never lands).
				e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 3})
				e.send(t, env, transfer.SendPending)
				e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDBLag, Ledgers: lag})
				e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 3, Count: 1000})
				for range 60 {
					e.closeLedger()
					lk := e.lookup(t, env)
					if transfer.ProvenDead(env, lk) {
						t.Fatalf("at %v (maxTime %d): proven dead: %+v", e.clock.Now(), env.MaxTime, lk)
					}
				}
				e.net.ClearFaults()
				e.closeLedger()
				if lk := e.lookup(t, env); lk.Status != transfer.LookupSuccess {
					t.Fatalf("after the lag: %+v, want SUCCESS (did it land before maxTime %d?)", lk, env.MaxTime)
				}
			})
		}
	}
}
