package stellarsim

import (
	"encoding/json"
	"net/http"
	"slices"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

// Fee statistics as stellar-rpc and Horizon compute them from what ledgers charged.
//
// stellar-rpc (cmd/stellar-rpc/internal/feewindow/feewindow.go, FeeWindows.IngestFees): a
// transaction whose one operation is a Soroban one adds its inclusion fee (fee charged minus
// the resource fee charged) to the Soroban window (50 ledgers by default,
// soroban-fee-stats-retention-window); any other adds feeCharged / len(operations) to the
// classic window (10 ledgers, classic-fee-stats-retention-window). Operations() of a fee bump
// are the inner transaction's, so a fee bump's fee is divided by its inner operations alone
// (core counts one more). A window with no fees answers all zeros (computeFeeDistribution).
//
// Horizon (internal/db2/history/operation.go, FeeStats; internal/app.go,
// UpdateFeeStatsState): every transaction of the last 5 ledgers, Soroban ones included, adds
// fee_charged / operation_count, operation_count plus one for a fee bump, and its max fee
// (the fee-bump fee, else the fee) over the same count; with none, every figure is the last
// ledger's base fee. ledger_capacity_usage is the operations of those ledgers over their
// max_tx_set_size (LedgerCapacityUsageStats).

const (
	rpcClassicFeeWindow = 10 // classic-fee-stats-retention-window default
	rpcSorobanFeeWindow = 50 // soroban-fee-stats-retention-window default
	horizonFeeWindow    = 5  // history.Q.FeeStats: the last 5 ledgers
	// keptLedgerFees is how many ledgers' fee records are kept (the widest window and then some).
	keptLedgerFees = 256
)

// ledgerFeeStats is what one closed ledger adds to the fee windows.
type ledgerFeeStats struct {
	rpcClassic []uint64 // feeCharged / len(inner operations)
	rpcSoroban []uint64 // inclusion fee charged
	hCharged   []int64  // fee_charged / operation_count (+1 for a fee bump)
	hMax       []int64  // max fee / the same count
	hOps       int64    // operation_count summed (inner operations)
}

// ingestFeesLocked records the fees ledger seq charged, from its applied transactions.
// Callers hold n.mu.
func (n *Network) ingestFeesLocked(seq uint32) {
	var st ledgerFeeStats
	lf := n.cong.ledgerFees[seq]
	for i := len(n.applied) - 1; i >= 0 && n.applied[i].Ledger == seq; i-- {
		a := n.applied[i]
		t, err := decodeEnvelope(a.EnvelopeXDR, n.passphrase)
		if err != nil || len(t.ops) == 0 {
			continue
		}
		charged := max(a.FeeCharged, 0)
		if len(t.ops) == 1 && isSorobanOp(t.ops[0]) {
			// feeCharged - (non-refundable + refundable resource fee charged) is the part of the
			// fee core charged for inclusion: the lane's base fee per operation, capped by the bid.
			base := lf.baseFee[laneSoroban]
			if base <= 0 {
				base = n.opts.BaseFee
			}
			incl := min(t.inclusionFee(), satMul(base, max(t.numOps(), 1)), charged)
			st.rpcSoroban = append(st.rpcSoroban, uint64(max(incl, 0)))
		} else {
			st.rpcClassic = append(st.rpcClassic, uint64(charged)/uint64(len(t.ops)))
		}
		st.hCharged = append(st.hCharged, charged/t.numOps())
		st.hMax = append(st.hMax, t.fullFee()/t.numOps())
		st.hOps += int64(len(t.ops))
	}
	n.cong.feeStats[seq] = st
	delete(n.cong.feeStats, seq-keptLedgerFees)
	delete(n.cong.ledgerFees, seq-keptLedgerFees)
}

// feeDistribution is stellar-rpc's computeFeeDistribution: nearest-rank percentiles
// (fees[ceil(p*count/100)-1]), the mode (the smallest of the most repeated), all zeros for no
// fees.
func feeDistribution(fees []uint64, ledgers uint32) protocol.FeeDistribution {
	if len(fees) == 0 {
		return protocol.FeeDistribution{}
	}
	fees = slices.Clone(fees)
	slices.Sort(fees)
	mode, best, run := fees[0], 0, 0
	for i := 1; i < len(fees); i++ {
		if fees[i] == fees[i-1] {
			run++
			continue
		}
		if run > best {
			best, mode = run, fees[i-1]
		}
		run = 0
	}
	if run > best {
		mode = fees[len(fees)-1]
	}
	c := uint64(len(fees))
	p := func(q uint64) uint64 { return fees[(q*c+99)/100-1] }
	return protocol.FeeDistribution{Max: fees[len(fees)-1], Min: fees[0], Mode: mode,
		P10: p(10), P20: p(20), P30: p(30), P40: p(40), P50: p(50), P60: p(60), P70: p(70), P80: p(80),
		P90: p(90), P95: p(95), P99: p(99), TransactionCount: uint32(c), LedgerCount: ledgers}
}

// rpcFeeWindow gathers a window of up to size ledgers ending at latest.
func (n *Network) rpcFeeWindow(latest, size uint32, soroban bool) protocol.FeeDistribution {
	var fees []uint64
	first := uint32(1)
	if latest > size {
		first = latest - size + 1
	}
	for s := first; s <= latest; s++ {
		st := n.cong.feeStats[s]
		if soroban {
			fees = append(fees, st.rpcSoroban...)
		} else {
			fees = append(fees, st.rpcClassic...)
		}
	}
	return feeDistribution(fees, latest-first+1)
}

func (n *Network) rpcGetFeeStats(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := n.viewOf(r, "rpc").latest
	return protocol.GetFeeStatsResponse{
		SorobanInclusionFee: n.rpcFeeWindow(latest, rpcSorobanFeeWindow, true),
		InclusionFee:        n.rpcFeeWindow(latest, rpcClassicFeeWindow, false),
		LatestLedger:        latest,
	}, nil
}

// horizonDistribution is Horizon's percentile_disc / max / min / mode over int64 fees.
func horizonDistribution(fees []int64) hProtocol.FeeDistribution {
	u := make([]uint64, len(fees))
	for i, f := range fees {
		u[i] = uint64(max(f, 0))
	}
	d := feeDistribution(u, 0)
	return hProtocol.FeeDistribution{Max: int64(d.Max), Min: int64(d.Min), Mode: int64(d.Mode),
		P10: int64(d.P10), P20: int64(d.P20), P30: int64(d.P30), P40: int64(d.P40), P50: int64(d.P50),
		P60: int64(d.P60), P70: int64(d.P70), P80: int64(d.P80), P90: int64(d.P90), P95: int64(d.P95), P99: int64(d.P99)}
}

func (n *Network) hFeeStats(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	latest := n.viewOf(r, "horizon").latest
	var charged, maxFee []int64
	var ops, capacity int64
	for s := max(int64(latest)-horizonFeeWindow+1, 1); s <= int64(latest); s++ {
		st := n.cong.feeStats[uint32(s)]
		charged = append(charged, st.hCharged...)
		maxFee = append(maxFee, st.hMax...)
		ops += st.hOps
		capacity += n.opts.Lanes.ClassicOps
	}
	n.mu.Unlock()
	f := n.opts.BaseFee
	fs := hProtocol.FeeStats{LastLedger: latest, LastLedgerBaseFee: f}
	if capacity > 0 {
		// ROUND(SUM(operation_count)/SUM(max_tx_set_size), 2)
		fs.LedgerCapacityUsage = float64((ops*100+capacity/2)/capacity) / 100
	}
	if len(charged) == 0 {
		d := hProtocol.FeeDistribution{Max: f, Min: f, Mode: f, P10: f, P20: f, P30: f, P40: f, P50: f,
			P60: f, P70: f, P80: f, P90: f, P95: f, P99: f}
		fs.FeeCharged, fs.MaxFee = d, d
	} else {
		fs.FeeCharged, fs.MaxFee = horizonDistribution(charged), horizonDistribution(maxFee)
	}
	writeJSON(w, http.StatusOK, fs)
}
