package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/xdr"
)

// chargedFee is what core charges before apply (TransactionFrame::getFee and
// FeeBumpTransactionFrame::getFee with applying): its lane's base fee per
// operation (the surge price of a full lane while a ledger closes, lanes.go;
// a fee bump counts one more operation), capped by the bid's inclusion fee,
// plus the whole declared Soroban resource fee. Since protocol 23 (unless
// Options.Protocol22Restore) the unused refundable part is given back after
// apply (sorobanRefund).
func (n *Network) chargedFee(t *txInfo) int64 {
	return min(t.inclusionFee(), satMul(n.laneBaseFee(t), max(t.numOps(), 1))) + t.resourceFee
}

// Stand-in resource schedule. The shape follows the network's (instructions,
// entries read and written, bytes read and written, rent for entries that
// start or restart living); the numbers are round values of the order of
// pubnet's settings, not the real formula.
const (
	feePer10kInstructions = 25
	feePerEntryRead       = 6_250 // every footprint entry
	feePerEntryWrite      = 10_000
	feePerKBRead          = 1_786
	feePerKBWrite         = 11_800
	feeRentPerEntry       = 25_000 // per entry created or restored

	instructionsWrite = 1_800_000 // deposit, withdraw
	instructionsRead  = 900_000   // balance
)

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// resourceFee is the resource fee (stroops) of resources r where rent entries
// are created or restored: the non-refundable part plus the rent.
func resourceFee(r xdr.SorobanResources, rent int) int64 {
	return nonRefundableFee(r) + rentFee(rent)
}

// nonRefundableFee is the part of the resource fee computed from the declared
// resources alone (core's FeePair.non_refundable_fee, from
// TransactionFrame::computePreApplySorobanResourceFee): instructions,
// entries and bytes read and written.
func nonRefundableFee(r xdr.SorobanResources) int64 {
	fee := ceilDiv(int64(r.Instructions)*feePer10kInstructions, 10_000)
	fee += int64(len(r.Footprint.ReadOnly)+len(r.Footprint.ReadWrite)) * feePerEntryRead
	fee += int64(len(r.Footprint.ReadWrite)) * feePerEntryWrite
	fee += ceilDiv(int64(r.DiskReadBytes)*feePerKBRead, 1024)
	fee += ceilDiv(int64(r.WriteBytes)*feePerKBWrite, 1024)
	return fee
}

// rentFee is the refundable rent for entries created or restored.
func rentFee(entries int) int64 { return int64(entries) * feeRentPerEntry }

// sorobanDataValid is the part of core's Soroban validity checks this network
// models beyond the fee (TransactionFrame::commonValidPreSeqNum and
// TransactionFrame::checkSorobanResources, src/transactions/TransactionFrame.cpp):
// the declared resource fee covers the non-refundable fee of the declared
// resources, and archivedSorobanEntries (protocol 23) lists indices of the
// read-write footprint in ascending order, each a persistent entry.
func (n *Network) sorobanDataValid(t *txInfo) bool {
	sd := t.soroban
	if sd == nil {
		return true
	}
	if t.resourceFee < nonRefundableFee(sd.Resources) {
		return false
	}
	if sd.Ext.V != 1 || sd.Ext.ResourceExt == nil {
		return true
	}
	rw := sd.Resources.Footprint.ReadWrite
	prev := int64(-1)
	for _, i := range sd.Ext.ResourceExt.ArchivedSorobanEntries {
		if int64(i) <= prev || int(i) >= len(rw) || !persistentKey(rw[i]) {
			return false
		}
		prev = int64(i)
	}
	return true
}

// sorobanRefund is what core's TransactionFrame::refundSorobanFee gives back
// to the fee source after apply: the declared resource fee minus its
// non-refundable part minus the refundable fee the operation consumed
// (RefundableFeeTracker); a failed operation consumes none of it.
func (n *Network) sorobanRefund(t *txInfo, consumed int64, success bool) int64 {
	if t.soroban == nil || n.opts.Protocol22Restore {
		return 0
	}
	if !success {
		consumed = 0
	}
	return max(t.resourceFee-nonRefundableFee(t.soroban.Resources)-consumed, 0)
}
