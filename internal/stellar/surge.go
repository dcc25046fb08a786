package stellar

import (
	"context"
	"fmt"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// surgeSampleTxs is how many of the latest ledger's transactions rpcChain.surgeShown reads when
// the fee stats cannot tell (one getTransactions page): any classic one shows the lane's rate.
const surgeSampleTxs = 10

// surgeShown reads getFeeStats as stellar-rpc counts it. Its classic window divides a fee
// bump's charge by the inner operations alone (cmd/stellar-rpc/internal/feewindow/feewindow.go,
// FeeWindows.IngestFees), so a one-payment fee bump charged the base fee per slot enters it at
// twice the base fee (fees.go), and sorobanInclusionFee holds a fee bump's whole inclusion fee,
// over two slots. So a p99 above twice the base fee was surely charged in a surge-priced ledger,
// and one at the base fee or below shows none; between the two the window cannot tell a surge
// from a fee bump in a quiet ledger, and a lane that clears there (a full lane whose lowest bid
// is below twice the base fee) would never be seen as surge priced: an envelope it outbids would
// wait for its eviction and its maxTime. In that case, for the classic lane, the latest ledger's
// first transactions say it exactly (getTransactions): stellar-core charges every transaction
// of a lane the lane's base fee per operation slot, a fee bump counting one more
// (src/herder/SurgePricingUtils.cpp, TxSetUtils computeLaneBaseFee, applied as the component's
// baseFee by TransactionFrame::getFee), which is the network's base fee unless the lane left a
// valid transaction out. Any classic transaction charged above the base fee per slot proves the
// ledger surge priced. The Soroban lane's charges include resource fees and their refunds, and
// its transactions are applied after every classic one, so a page of the latest ledger's
// transactions says nothing of it: there the latest ledger's transaction set decides
// (sorobanLaneFee: the base fee its Soroban phase charged). The ambiguity is the same in both
// lanes: a Soroban lane clearing between the base fee and twice it, outbidding a contract call's
// fee bump, read from the fee stats alone, would never be seen as surge priced.
func (r rpcChain) surgeShown(ctx context.Context, lane feeLane, fees feeDistribution, base int64) (bool, error) {
	switch p99 := fees.at(99); {
	case p99 > 2*base:
		return true, nil
	case p99 <= base:
		return false, nil
	}
	latest, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return false, fmt.Errorf("stellar: getLatestLedger: %w", err)
	}
	if lane != laneClassic {
		fee, err := r.sorobanLaneFee(ctx, latest.Sequence)
		return fee > base, err
	}
	page, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetTransactionsResponse, error) {
		return c.GetTransactions(ctx, protocol.GetTransactionsRequest{StartLedger: latest.Sequence,
			Pagination: &protocol.LedgerPaginationOptions{Limit: surgeSampleTxs}})
	})
	if err != nil {
		return false, fmt.Errorf("stellar: getTransactions: %w", err)
	}
	for _, tx := range page.Transactions {
		if tx.Ledger != latest.Sequence {
			break
		}
		if rate, ok := classicRateCharged(tx.EnvelopeXDR, tx.ResultXDR); ok && rate > base {
			return true, nil
		}
	}
	return false, nil
}

// classicRateCharged is the fee a classic transaction was charged per operation slot (its
// operations, plus one for a fee bump), from its envelope and result (base64 XDR); false for a
// Soroban transaction or an unreadable one.
func classicRateCharged(envelopeXDR, resultXDR string) (int64, bool) {
	shape, err := envelopeFee(envelopeXDR)
	if err != nil || shape.lane != laneClassic || shape.slots <= 0 {
		return 0, false
	}
	var tr xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resultXDR, &tr); err != nil {
		return 0, false
	}
	return int64(tr.FeeCharged) / shape.slots, true
}

// sorobanLaneFee is the base fee per operation slot that ledger seq's Soroban phase charged
// (0 when the ledger names none), read from its transaction set (getLedgers, one ledger). A
// generalized transaction set carries, for each component, the base fee its transactions were
// charged (src/herder/TxSetFrame.cpp: parallelPhaseToXdr writes ParallelTxsComponent.baseFee,
// the classic-style phase writes each TXSET_COMP_TXS_MAYBE_DISCOUNTED_FEE component's baseFee,
// from the inclusion fee map that TxSetUtils/SurgePricingUtils computeLaneBaseFee filled): the
// network's base fee unless the lane left a valid transaction out. The second phase is the
// Soroban one (TxSetPhase::SOROBAN). A ledger before generalized transaction sets, or one
// without a Soroban phase, names none.
func (r rpcChain) sorobanLaneFee(ctx context.Context, seq uint32) (int64, error) {
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgersResponse, error) {
		return c.GetLedgers(ctx, protocol.GetLedgersRequest{StartLedger: seq, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil {
		return 0, fmt.Errorf("stellar: getLedgers: %w", err)
	}
	if len(resp.Ledgers) == 0 || resp.Ledgers[0].Sequence != seq {
		return 0, fmt.Errorf("stellar: getLedgers: ledger %d not returned", seq)
	}
	var meta xdr.LedgerCloseMeta
	if err := xdr.SafeUnmarshalBase64(resp.Ledgers[0].LedgerMetadata, &meta); err != nil {
		return 0, fmt.Errorf("stellar: getLedgers: decoding metadataXdr of ledger %d: %w", seq, err)
	}
	var set xdr.GeneralizedTransactionSet
	switch {
	case meta.V == 1 && meta.V1 != nil:
		set = meta.V1.TxSet
	case meta.V == 2 && meta.V2 != nil:
		set = meta.V2.TxSet
	default:
		return 0, nil
	}
	if set.V1TxSet == nil || len(set.V1TxSet.Phases) < 2 {
		return 0, nil
	}
	var fee int64
	switch ph := set.V1TxSet.Phases[1]; {
	case ph.ParallelTxsComponent != nil:
		if b := ph.ParallelTxsComponent.BaseFee; b != nil {
			fee = int64(*b)
		}
	case ph.V0Components != nil:
		for _, c := range *ph.V0Components {
			if c.TxsMaybeDiscountedFee != nil && c.TxsMaybeDiscountedFee.BaseFee != nil {
				fee = max(fee, int64(*c.TxsMaybeDiscountedFee.BaseFee))
			}
		}
	}
	return fee, nil
}
