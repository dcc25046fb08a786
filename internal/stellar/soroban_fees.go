package stellar

import (
	"context"
	"fmt"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A Soroban transaction's fee is its declared resource fee (SorobanTransactionData.resourceFee,
// taken from simulateTransaction as is) plus the inclusion fee (per operation slot, a fee bump
// counting as one more). stellar-core refuses at submission an envelope whose inclusion part
// (fee minus declared resource fee) is below the minimum inclusion fee (txINSUFFICIENT_FEE) and
// a declared resource fee below the fee of the declared resources (txSOROBAN_INVALID), both in
// TransactionFrame::commonValidPreSeqNum, and fails at apply a call whose declared refundable
// fee does not cover the rent and events it consumed (INSUFFICIENT_REFUNDABLE_FEE); the unused
// refundable part is given back (TransactionFrame::refundSorobanFee), so the fee charged can be
// below the envelope's fee.
//
// Since protocol 23 an invocation restores the archived persistent entries its transaction data
// marks (SorobanResourcesExtV0.archivedSorobanEntries, CAP-66); their restore (rent, reads and
// writes) is in the declared resource fee, so a call on an archived vault balance costs more
// than a plain one and is the one most likely to meet MAX_FEE_STROOPS.

// sign sets the fees (resource fee from the operation's Soroban data plus the inclusion fee bid
// for the Soroban lane, within MAX_FEE_STROOPS), signs, and fee-bumps when the lease has a fee
// source. Over the cap it returns checkSorobanFeeCap's error (the resource fee alone does not
// fit) or bidRate's FEE_ABOVE_CAP (the lane's market does not), and signs nothing.
func (l *ContractLedger) sign(ctx context.Context, ch rpcChain, lease sources.Lease, seq int64, op txnbuild.Operation, terms transfer.Terms) (transfer.Envelope, error) {
	var data *xdr.SorobanTransactionData
	restoring := 0
	switch o := op.(type) {
	case *txnbuild.InvokeHostFunction:
		data = o.Ext.SorobanData
		restoring = archivedEntries(data)
	case *txnbuild.RestoreFootprint:
		data = o.Ext.SorobanData
		if data != nil {
			restoring = len(data.Resources.Footprint.ReadWrite)
		}
	}
	if data == nil {
		return transfer.Envelope{}, fmt.Errorf("stellar: the %T has no Soroban transaction data", op)
	}
	resourceFee := int64(data.ResourceFee)
	feeBumped := lease.FeeSource != nil
	slots := int64(1)
	if feeBumped {
		slots = 2
	}
	if err := l.checkSorobanFeeCap(resourceFee, slots, restoring); err != nil {
		return transfer.Envelope{}, err
	}
	// The Soroban lane's own market (sorobanInclusionFee), not the classic one: the lanes clear
	// apart (fees.go).
	rate, err := l.bidRate(ctx, ch, feeBid{lane: laneSoroban, slots: slots, resourceFee: resourceFee})
	if err != nil {
		return transfer.Envelope{}, err
	}
	innerRate := rate
	if feeBumped {
		innerRate = l.baseFeeStroops
	}
	tx, err := l.transaction(lease, seq, op, innerRate, terms)
	if err != nil {
		return transfer.Envelope{}, err
	}
	return l.seal(ctx, tx, lease, rate, terms.MaxTime, feeBumped)
}

// checkSorobanFeeCap refuses, before anything is signed or sent, a Soroban transaction whose
// declared resource fee plus the lowest inclusion fee it can offer (BaseFeeStroops per slot)
// exceeds MAX_FEE_STROOPS. restoring is how many archived entries the transaction restores (an
// invocation's archivedSorobanEntries, or a RestoreFootprint's read-write footprint).
//
// Errors: *transfer.UnavailableError (503, retryable; the key is free again): RESTORE_REQUIRED
// when the transaction restores archived entries (the restore is what costs more: raise
// MAX_FEE_STROOPS or restore the entries out of band, then retry), SIMULATION_ERROR otherwise;
// the detail gives the fee needed, its parts and the cap, in stroops.
func (l *ContractLedger) checkSorobanFeeCap(resourceFee, slots int64, restoring int) error {
	inclusion := l.baseFeeStroops * slots
	need := resourceFee + inclusion
	if l.maxFeeStroops <= 0 || need <= l.maxFeeStroops {
		return nil
	}
	parts := fmt.Sprintf("%d stroops (resource fee %d + inclusion fee %d), above MAX_FEE_STROOPS %d; nothing was submitted",
		need, resourceFee, inclusion, l.maxFeeStroops)
	if restoring > 0 {
		return &transfer.UnavailableError{Code: transfer.CodeRestoreRequired,
			Detail: fmt.Sprintf("the vault contract's ledger entries are archived (%d to restore); restoring them needs a fee of %s", restoring, parts)}
	}
	return &transfer.UnavailableError{Code: transfer.CodeSimulationError,
		Detail: "the contract call needs a fee of " + parts}
}

// archivedEntries is how many archived entries a protocol 23 invocation restores: the indices
// listed in its transaction data's archivedSorobanEntries (SorobanTransactionData.ext v1).
func archivedEntries(data *xdr.SorobanTransactionData) int {
	if data == nil || data.Ext.V != 1 || data.Ext.ResourceExt == nil {
		return 0
	}
	return len(data.Ext.ResourceExt.ArchivedSorobanEntries)
}
