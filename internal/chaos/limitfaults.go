package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// campaignLimits is the LIMITS of a campaign with Config.Limits: a wallet's and the asset's daily
// caps far above what the campaign moves, so that every claim is charged (one TransactWriteItems
// of the claim and two counters) and none is refused: every key must still settle.
const campaignLimits = `{"USDC":{"walletDaily":"900000000000","assetDaily":"900000000000"}}`

// charged tallies what the charged claims that applied added to each counter, in stroops: what
// the counters must hold after the campaign, since it runs no stream and so gives nothing back.
type charged struct {
	mu  sync.Mutex
	sum map[string]int64
}

func (c *charged) add(in *dynamodb.TransactWriteItemsInput) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sum == nil {
		c.sum = map[string]int64{}
	}
	for _, it := range in.TransactItems {
		if it.Update == nil {
			continue
		}
		pk, _ := it.Update.Key[dynamo.AttrPK].(*types.AttributeValueMemberS)
		amount, _ := it.Update.ExpressionAttributeValues[":amount"].(*types.AttributeValueMemberN)
		if amount == nil {
			// A give-back (dynamo.Store.GiveBack): its negative amount.
			amount, _ = it.Update.ExpressionAttributeValues[":minus"].(*types.AttributeValueMemberN)
		}
		if pk == nil || amount == nil {
			continue
		}
		n, _ := strconv.ParseInt(amount.Value, 10, 64)
		c.sum[pk.Value] += n
	}
}

// TransactWriteItems writes a charged claim (dynamo's claimCharged; claim_transact) or a batch's
// items (dynamo.Store.ReplaceAll; items_transact) through the same faults as every other write: refused or throttled
// before it is sent (nothing claimed or charged), or applied and its answer lost, as an error or
// as the answer to the same request sent again (the SDK's retry, which minidyn, ignoring the
// ClientRequestToken, cancels on the claim's own item). What applied is tallied in d.charged.
func (d *faultyDynamo) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opt ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	tc, ok := d.API.(dynamo.TransactClient)
	if !ok {
		return nil, dynamo.ErrNoTransactions
	}
	kind := "items_transact" // a batch's attach, or its keys requeued together (dynamo.Store.ReplaceAll)
	for _, it := range in.TransactItems {
		if it.Update != nil {
			kind = "claim_transact" // a charged claim or a give-back: its counters
		}
	}
	var out *dynamodb.TransactWriteItemsOutput
	err := d.write(ctx, kind, func() (err error) {
		out, err = tc.TransactWriteItems(ctx, in, opt...)
		if err == nil && d.charged != nil {
			d.charged.add(in)
		}
		return err
	})
	return out, err
}

var _ dynamo.TransactClient = (*faultyDynamo)(nil)

// judgeCharges: every counter holds exactly what the claims that applied charged it (a claim
// charged twice, by a retry after a lost answer or a take-over, or a charge written without its
// claim, would show), and none is above its cap.
func (r *rig) judgeCharges() []string {
	if r.charged == nil {
		return nil
	}
	r.charged.mu.Lock()
	defer r.charged.mu.Unlock()
	var bad []string
	keys := make([]string, 0, len(r.charged.sum))
	for k := range r.charged.sum {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	limits := r.orch.Limits["USDC"]
	for _, k := range keys {
		got, err := r.store.Counter(context.Background(), k)
		if err != nil || got != r.charged.sum[k] {
			bad = append(bad, fmt.Sprintf("counter %s holds %d (%v), the claims that applied charged %d", k, got, err, r.charged.sum[k]))
		}
		if got > max(limits.WalletDaily, limits.AssetDaily) {
			bad = append(bad, fmt.Sprintf("counter %s holds %d, above its cap", k, got))
		}
	}
	if len(keys) == 0 {
		bad = append(bad, "limits: no claim was charged")
	}
	return bad
}

// newCharged is the tally of a campaign with limits, nil without.
func newCharged(limits bool) *charged {
	if limits {
		return &charged{}
	}
	return nil
}

// limitsEnv is the campaign service's LIMITS: campaignLimits with Config.Limits, else none.
func limitsEnv(on bool) string {
	if on {
		return campaignLimits
	}
	return ""
}
