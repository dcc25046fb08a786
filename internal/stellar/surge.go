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
// ledger surge priced. The Soroban lane is judged on the fee stats alone (its transactions'
// charges include their resource fees).
func (r rpcChain) surgeShown(ctx context.Context, lane feeLane, fees feeDistribution, base int64) (bool, error) {
	switch p99 := fees.at(99); {
	case p99 > 2*base:
		return true, nil
	case p99 <= base || lane != laneClassic:
		return false, nil
	}
	latest, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return false, fmt.Errorf("stellar: getLatestLedger: %w", err)
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
