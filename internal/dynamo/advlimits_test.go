package dynamo_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// cancelOnce answers the first TransactWriteItems with the cancellation reasons it holds, as
// DynamoDB does for a transaction it cancelled (nothing written), and forwards every later one.
type cancelOnce struct {
	dynamotest.API
	mu      sync.Mutex
	reasons []types.CancellationReason
	sent    int
}

func (c *cancelOnce) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opt ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.mu.Lock()
	c.sent++
	first := c.sent == 1
	c.mu.Unlock()
	if first && c.reasons != nil {
		return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: c.reasons}
	}
	return c.API.(dynamo.TransactClient).TransactWriteItems(ctx, in, opt...)
}

// TestAClaimWhoseKeyConflictedIsNeverALimitRefusal: DynamoDB gives one cancellation reason per
// item. A retry of a key (the same request) whose claim's Put is cancelled by a
// TransactionConflict (its holder writing the item at that instant) while the counter, full with
// that very key's charge, fails its condition, is told DAILY_LIMIT_EXCEEDED: a replay refused with
// a limit, where the key's holder must answer (the claim's own reason decides first; a conflict
// on it is written again, then lost to the holder).
func TestAClaimWhoseKeyConflictedIsNeverALimitRefusal(t *testing.T) {
	raw, _ := dynamotest.Minidyn(t)
	table := dynamotest.NewStore(t, raw).Table()
	ctx := context.Background()
	limits := transfer.Limits{"USDC": {WalletDaily: 10 * transfer.StroopsPerUnit}}
	first := chargedClaim("conflict-replay", "owner-a", limits)
	if _, won, err := dynamo.New(raw, table).Claim(ctx, first, t0); err != nil || !won {
		t.Fatalf("first claim: won=%v err=%v", won, err)
	}
	client := &cancelOnce{API: raw, reasons: []types.CancellationReason{
		{Code: aws.String("TransactionConflict")}, {Code: aws.String("ConditionalCheckFailed")}}}
	held, won, err := dynamo.New(client, table).Claim(ctx, chargedClaim("conflict-replay", "owner-b", limits), t0)
	if le, ok := errors.AsType[*transfer.LimitError](err); ok {
		t.Fatalf("a replay whose claim conflicted on its own key is refused %v, want its holder", le)
	}
	if err != nil || won || held.ClaimID != first.ClaimID {
		t.Fatalf("Claim = holder %q, won=%v, err=%v; want the first claim's holder", held.ClaimID, won, err)
	}
}
