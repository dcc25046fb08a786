package stellarsim

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sort"
)

// This file is stellar-core's ledger capacity and surge pricing: how many queued transactions a
// ledger takes, which ones, and the base fee each phase of the set charges
// (src/herder/TxSetFrame.cpp, src/herder/SurgePricingUtils.cpp).

// LaneLimits are the per-ledger limits of the transaction set's two phases. Classic
// transactions fill the classic phase up to ClassicOps operations (the ledger header's
// maxTxSetSize, which counts operations since protocol 11; a fee bump counts its inner
// operations plus one, FeeBumpTransactionFrame::getNumOperations). Soroban transactions fill
// their own phase up to the network's ledger-wide config settings
// (SorobanNetworkConfig::maxLedgerResources). A zero field takes pubnet's value
// (PubnetLaneLimits).
type LaneLimits struct {
	// ClassicOps is maxTxSetSize: classic operations per ledger.
	ClassicOps int64 `json:"classic_ops"`
	// SorobanTxs is ledgerMaxTxCount. Core counts a fee-bumped Soroban transaction as two
	// (FeeBumpTransactionFrame::getResources sets OPERATIONS to getNumOperations()).
	SorobanTxs int64 `json:"soroban_txs"`
	// SorobanInstructions is the instructions a ledger's Soroban transactions may declare in
	// all (ledgerMaxInstructions x ledgerMaxDependentTxClusters since protocol 23).
	SorobanInstructions int64 `json:"soroban_instructions"`
	// SorobanWriteEntries is ledgerMaxWriteLedgerEntries (read-write footprint entries).
	SorobanWriteEntries int64 `json:"soroban_write_entries"`
	// SorobanWriteBytes is ledgerMaxWriteBytes (declared write bytes).
	SorobanWriteBytes int64 `json:"soroban_write_bytes"`
}

// PubnetLaneLimits are pubnet's settings in mid 2026: 1,000 classic operations per ledger;
// Soroban 2,000 transactions, 580M instructions, 1,000 write entries, 286,720 write bytes.
var PubnetLaneLimits = LaneLimits{
	ClassicOps:          1_000,
	SorobanTxs:          2_000,
	SorobanInstructions: 580_000_000,
	SorobanWriteEntries: 1_000,
	SorobanWriteBytes:   286_720,
}

// Scaled is l with every limit multiplied by f and rounded up, at least 1: a small network for
// tests (PubnetLaneLimits.Scaled(0.01) takes 10 classic operations per ledger).
func (l LaneLimits) Scaled(f float64) LaneLimits {
	s := func(v int64) int64 { return max(1, int64(math.Ceil(float64(v)*f))) }
	l = l.orPubnet()
	return LaneLimits{s(l.ClassicOps), s(l.SorobanTxs), s(l.SorobanInstructions), s(l.SorobanWriteEntries), s(l.SorobanWriteBytes)}
}

// orPubnet fills the zero fields with pubnet's values.
func (l LaneLimits) orPubnet() LaneLimits {
	p := PubnetLaneLimits
	pick := func(v, d int64) int64 {
		if v > 0 {
			return v
		}
		return d
	}
	return LaneLimits{pick(l.ClassicOps, p.ClassicOps), pick(l.SorobanTxs, p.SorobanTxs),
		pick(l.SorobanInstructions, p.SorobanInstructions), pick(l.SorobanWriteEntries, p.SorobanWriteEntries),
		pick(l.SorobanWriteBytes, p.SorobanWriteBytes)}
}

// defaultQueueMultiplier is TRANSACTION_QUEUE_SIZE_MULTIPLIER and
// SOROBAN_TRANSACTION_QUEUE_SIZE_MULTIPLIER (src/main/Config.cpp, both 2): each queue holds
// at most twice its ledger limits (TxQueueLimiter::maxScaledLedgerResources).
const defaultQueueMultiplier = 2

// congestionDefaults fills the lane and queue options.
func congestionDefaults(o *Options) {
	o.Lanes = o.Lanes.orPubnet()
	if o.QueueMultiplier <= 0 {
		o.QueueMultiplier = defaultQueueMultiplier
	}
}

// Lanes: the classic phase and the Soroban phase, each one generic lane (pubnet configures no
// DEX lane: MAX_DEX_TX_OPERATIONS_IN_TX_SET unset), each with its own queue limiter.
const (
	laneClassic = 0
	laneSoroban = 1
)

// resources is core's Resource vector as this network counts it: operations (classic) or
// transactions (Soroban), instructions, write entries, write bytes.
type resources [4]int64

func (r resources) add(o resources) resources {
	for i := range r {
		r[i] += o[i]
	}
	return r
}

// subNonNeg is core's subtractNonNegative.
func (r resources) subNonNeg(o resources) resources {
	for i := range r {
		r[i] = max(r[i]-o[i], 0)
	}
	return r
}

// anyGreater is core's anyGreater(r, limit).
func (r resources) anyGreater(limit resources) bool {
	for i := range r {
		if r[i] > limit[i] {
			return true
		}
	}
	return false
}

func (r resources) anyPositive() bool { return r.anyGreater(resources{}) }

func (r resources) scale(m int64) resources {
	for i := range r {
		r[i] = satMul(r[i], m)
	}
	return r
}

func satMul(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// isSoroban is TransactionFrame::isSoroban: the transaction's operation is a Soroban one.
func (t *txInfo) isSoroban() bool { return len(t.ops) > 0 && isSorobanOp(t.ops[0]) }

func (t *txInfo) lane() int {
	if t.isSoroban() {
		return laneSoroban
	}
	return laneClassic
}

// numOps is getNumOperations: a fee bump counts its inner operations plus one
// (FeeBumpTransactionFrame::getNumOperations).
func (t *txInfo) numOps() int64 {
	if t.feeBump {
		return int64(len(t.ops)) + 1
	}
	return int64(len(t.ops))
}

// fullFee is getFullFee: the fee-bump fee or the transaction's fee.
func (t *txInfo) fullFee() int64 {
	if t.feeBump {
		return t.outerFee
	}
	return t.innerFee
}

// inclusionFee is getInclusionFee: the full fee minus the declared Soroban resource fee.
func (t *txInfo) inclusionFee() int64 { return t.fullFee() - t.resourceFee }

// laneResources is getResources as the surge-pricing lanes count it
// (TransactionFrame::getResources, FeeBumpTransactionFrame::getResources): classic operations;
// for Soroban, the transaction (two for a fee bump), its declared instructions, read-write
// footprint entries and write bytes.
func (t *txInfo) laneResources() resources {
	if !t.isSoroban() {
		return resources{t.numOps()}
	}
	r := resources{t.numOps()}
	if sd := t.soroban; sd != nil {
		r[1] = int64(sd.Resources.Instructions)
		r[2] = int64(len(sd.Resources.Footprint.ReadWrite))
		r[3] = int64(sd.Resources.WriteBytes)
	}
	return r
}

// ledgerLimits are a lane's per-ledger limits.
func (n *Network) ledgerLimits(lane int) resources {
	l := n.opts.Lanes
	if lane == laneSoroban {
		return resources{l.SorobanTxs, l.SorobanInstructions, l.SorobanWriteEntries, l.SorobanWriteBytes}
	}
	return resources{l.ClassicOps}
}

// feeRateCmp is feeRate3WayCompare (SurgePricingUtils.cpp): the sign of lFee/lOps - rFee/rOps,
// computed as lFee*rOps against rFee*lOps without rounding.
func feeRateCmp(lFee, lOps, rFee, rOps int64) int {
	lh, ll := bits.Mul64(uint64(max(lFee, 0)), uint64(max(rOps, 0)))
	rh, rl := bits.Mul64(uint64(max(rFee, 0)), uint64(max(lOps, 0)))
	switch {
	case lh < rh || (lh == rh && ll < rl):
		return -1
	case lh > rh || (lh == rh && ll > rl):
		return 1
	}
	return 0
}

// betterFee is computeBetterFee (SurgePricingUtils.cpp): the lowest inclusion fee at which a
// transaction of ops operations beats a bid of refFee over refOps, floor(refFee*ops/refOps)+1.
func betterFee(ops, refFee, refOps int64) int64 {
	if refOps <= 0 {
		return math.MaxInt64
	}
	hi, lo := bits.Mul64(uint64(max(refFee, 0)), uint64(max(ops, 0)))
	if hi >= uint64(refOps) {
		return math.MaxInt64
	}
	q, _ := bits.Div64(hi, lo, uint64(refOps))
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q) + 1
}

// perOpFee is computePerOpFee (TxSetFrame.cpp) from protocol 20: the inclusion fee per
// operation, rounded down.
func perOpFee(t *txInfo) int64 { return t.inclusionFee() / max(t.numOps(), 1) }

// tieKey breaks fee-rate ties. Core orders equal rates by the transaction's pointer XORed with
// a random seed (TxFeeComparator::txLessThan); here it is the full hash XORed with a seed, so a
// run is repeatable.
func tieKey(t *txInfo, seed uint64) uint64 {
	return binary.BigEndian.Uint64(t.fullRaw[:8]) ^ seed
}

// byRate sorts ps by fee rate, highest first when desc, ties by tieKey.
func byRate(ps []*pendingTx, seed uint64, desc bool) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i].tx, ps[j].tx
		c := feeRateCmp(a.inclusionFee(), a.numOps(), b.inclusionFee(), b.numOps())
		if c == 0 {
			ka, kb := tieKey(a, seed), tieKey(b, seed)
			if desc {
				return ka > kb
			}
			return ka < kb
		}
		if desc {
			return c > 0
		}
		return c < 0
	})
}

// splitmix64 derives a seed per use from Options.SurgeSeed.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// laneFees is what one closed ledger's set charged per lane: the base fee per operation each
// phase applied (TxSetFrame's InclusionFeeMap, the component's baseFee), and whether the lane was
// full (a valid transaction did not fit).
type laneFees struct {
	baseFee [2]int64
	full    [2]bool
	ops     [2]int64 // resources[0] of what the set took per lane
}

// txSetLocked is the transaction set of ledger seq as the nominating node builds it
// (TxSetUtils::trimInvalid, then applySurgePricing per phase): of the due transactions, the
// ones valid against c compete for each lane's limits by fee rate
// (SurgePricingPriorityQueue::getMostTopTxsWithinLimits: everything when all fits; otherwise
// highest rate first, skipping one that does not fit and trying the next). The ones that do
// not fit stay queued; the invalid ones are passed on for the caller to drop. It returns due
// without the ones left queued, in due's order, and records the base fee each lane charges
// (computeLaneBaseFee: the lowest included per-operation fee of a lane that left a valid
// transaction out, else the ledger's base fee). Callers hold n.mu.
func (n *Network) txSetLocked(seq uint32, due []*pendingTx, c checkCtx) []*pendingTx {
	fees := laneFees{baseFee: [2]int64{n.opts.BaseFee, n.opts.BaseFee}}
	left := map[*pendingTx]bool{}
	var valid [2][]*pendingTx
	for _, p := range due {
		if n.checkTx(p.tx, c) == nil {
			valid[p.tx.lane()] = append(valid[p.tx.lane()], p)
		}
	}
	for lane := range valid {
		limit := n.ledgerLimits(lane)
		var total resources
		for _, p := range valid[lane] {
			total = total.add(p.tx.laneResources())
		}
		if !total.anyGreater(limit) {
			fees.ops[lane] = total[0]
			continue
		}
		cands := append([]*pendingTx(nil), valid[lane]...)
		byRate(cands, splitmix64(n.opts.SurgeSeed^uint64(seq)), true)
		var used resources
		lowest := int64(math.MaxInt64)
		for _, p := range cands {
			r := p.tx.laneResources()
			if used.add(r).anyGreater(limit) {
				fees.full[lane] = true
				left[p] = true
				continue
			}
			used = used.add(r)
			lowest = min(lowest, perOpFee(p.tx))
		}
		fees.ops[lane] = used[0]
		if fees.full[lane] && lowest != math.MaxInt64 {
			fees.baseFee[lane] = lowest
		}
	}
	n.cong.ledgerFees[seq] = fees
	if len(left) == 0 {
		n.cong.charging = fees
		return due
	}
	kept := due[:0:0]
	for _, p := range due {
		if !left[p] {
			kept = append(kept, p)
		}
	}
	n.cong.charging = fees
	return kept
}

// laneBaseFee is the base fee per operation t is charged at: the closing ledger's surge price
// of its lane while a ledger closes, else the network's base fee.
func (n *Network) laneBaseFee(t *txInfo) int64 {
	if f := n.cong.charging.baseFee[t.lane()]; f > 0 {
		return f
	}
	return n.opts.BaseFee
}

// ClearingFee is the base fee per operation ledger seq charged in its classic and Soroban
// phases (the surge price of a full lane, else the network's base fee); ok is false for a
// ledger not closed or closed more than a few hundred ledgers ago.
func (n *Network) ClearingFee(seq uint32) (classic, soroban int64, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	f, ok := n.cong.ledgerFees[seq]
	if !ok {
		return 0, 0, false
	}
	return f.baseFee[laneClassic], f.baseFee[laneSoroban], true
}
