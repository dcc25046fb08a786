package chaos

import (
	"math/rand/v2"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// readFaultKinds are the local network's read faults a wave may arm: how stellar-rpc
// reads what it has ingested (internal/stellarsim/readview.go).
var readFaultKinds = []string{stellarsim.FaultReadOrder, stellarsim.FaultDBLag, stellarsim.FaultInstances}

// Chances that a wave arms each read fault (Config.ReadFaults).
const (
	readOrderRate = 0.3
	dbLagRate     = 0.2
	instancesRate = 0.3
)

// armReadFaults arms this wave's read faults, with their own dice so that the campaign's other
// faults are the same with and without them, and returns how many uses of read_order it armed.
//
//   - read_order: the next 5 to 24 lookups of a transaction in one of the latest 1 to 4 ledgers
//     (Ledgers 0 to 3) that the answering instance has not shown before answer NOT_FOUND with a
//     latestLedger that includes it, as stellar-rpc does while it ingests (one ledger) or catches
//     up (several);
//   - db_lag: RPC's database 1 to 3 ledgers behind its core for the wave (getLedgerEntries ahead
//     of getLatestLedger and getTransaction);
//   - instances, only where the run's RPC is load balanced (Config.LoadBalanced: the service was
//     told so, a deployment fact that holds for the whole run): 2 to 4 instances behind the RPC
//     URL for the wave, the slowest 2 to 30 s behind. Never for Horizon: Horizon behind a load
//     balancer is not supported for proofs, and the Horizon run arms no read fault at all, since
//     they are faults of stellar-rpc, which the Horizon ledger never reads.
func (r *rig) armReadFaults(dice *rand.Rand) (readOrder int, err error) {
	if !r.cfg.ReadFaults || r.cfg.Backend == "horizon" {
		return 0, nil
	}
	// Every die is rolled every wave, so one wave's faults do not shift the next one's.
	roRoll, roCount, roLedgers := dice.Float64(), 5+dice.IntN(20), dice.IntN(4)
	lagRoll, lagLedgers := dice.Float64(), 1+dice.IntN(3)
	instRoll, instances, delay := dice.Float64(), 2+dice.IntN(3), time.Duration(2000+dice.IntN(28_001))*time.Millisecond
	if roRoll < readOrderRate {
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Count: roCount, Ledgers: roLedgers, API: "rpc"}); err != nil {
			return 0, err
		}
		r.faults.add(stellarsim.FaultReadOrder)
		readOrder = roCount
	}
	if lagRoll < dbLagRate {
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDBLag, Ledgers: lagLedgers, API: "rpc"}); err != nil {
			return 0, err
		}
		r.faults.add(stellarsim.FaultDBLag)
	}
	if r.loadBalanced() && instRoll < instancesRate {
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultInstances, Instances: instances, Delay: delay, API: "rpc"}); err != nil {
			return 0, err
		}
		r.faults.add(stellarsim.FaultInstances)
	}
	return readOrder, nil
}

// disarmReadFaults ends the wave's read faults and counts the lookups read_order answered
// NOT_FOUND for a transaction that was there (the uses it armed minus those left).
func (r *rig) disarmReadFaults(readOrder int) {
	for _, f := range r.net.DisarmFaults(readFaultKinds...) {
		if f.Kind == stellarsim.FaultReadOrder && f.Count > 0 {
			readOrder -= f.Count
		}
	}
	r.faults.addN("read_order_hid_a_transaction", readOrder)
}

// restoresArchived reports whether an applied transaction is an invocation that restored archived
// entries itself: its Soroban data marks them in archivedSorobanEntries (protocol 23,
// SorobanResourcesExtV0; stellar-core InvokeHostFunctionParallelApplyHelper::handleArchivedEntry).
func restoresArchived(envelopeXDR string) bool {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envelopeXDR, &env); err != nil {
		return false
	}
	var ext xdr.TransactionExt
	switch {
	case env.V1 != nil:
		ext = env.V1.Tx.Ext
	case env.FeeBump != nil && env.FeeBump.Tx.InnerTx.V1 != nil:
		ext = env.FeeBump.Tx.InnerTx.V1.Tx.Ext
	default:
		return false
	}
	if ext.SorobanData == nil || ext.SorobanData.Ext.ResourceExt == nil {
		return false
	}
	return len(ext.SorobanData.Ext.ResourceExt.ArchivedSorobanEntries) > 0
}
