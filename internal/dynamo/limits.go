package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The limits' daily counters (doc.go, "Limits"; internal/transfer/limits.go).

// AttrTotal is a counter item's total, in stroops (N).
const AttrTotal = "total"

// GivenBackPrefix starts the key of a give-back's marker item: "limit:givenback:<claimId>".
const GivenBackPrefix = transfer.CounterPrefix + "givenback:"

// TransactClient is the request a charged claim and a give-back make beyond Client's:
// TransactWriteItems, which writes the claim and its counters, or a give-back's marker and its
// counters, all or nothing. The SDK's client has it; a Store whose client lacks it refuses a
// claim that carries charges (the limits cannot be kept without it) and changes nothing.
type TransactClient interface {
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// ErrNoTransactions is returned by a charged Claim and by GiveBack when the client cannot make
// TransactWriteItems requests.
var ErrNoTransactions = errors.New("dynamo: the client has no TransactWriteItems: the limits cannot be kept")

// chargeAttempts bounds the writes of a charged claim cancelled by a TransactionConflict (another
// transaction on one of its counters at the same instant; nothing was written) or lost to an item
// that was gone when read back.
const chargeAttempts = 6

var _ transfer.Counters = (*Store)(nil)

// claimCharged is Claim for a record with charges: one TransactWriteItems of the claim's Put (its
// condition and ALL_OLD as Claim's) and, per charge, an Update of its counter:
// `ADD total :amount SET expiresAt = if_not_exists(expiresAt, :ttl)` if
// `attribute_not_exists(total) OR total <= :room` (room = cap - amount), under a
// ClientRequestToken derived from the claim ID and the attempt, so that the SDK's retry of a
// write whose answer was lost applies nothing twice. The cancellation reasons decide: the claim's
// Put failing its condition is a lost claim, answered with the holder as Claim does (a replay or
// a conflict wins over a limit: DynamoDB reports every item's reason, and the claim's is read
// first); else a counter failing its condition is transfer.DailyLimitError of its charge; else a
// TransactionConflict is written again, at most chargeAttempts times in all.
func (s *Store) claimCharged(ctx context.Context, rec transfer.Record, put *types.Put) (transfer.Record, bool, error) {
	tc, ok := s.client.(TransactClient)
	if !ok {
		return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, ErrNoTransactions)
	}
	items := []types.TransactWriteItem{{Put: put}}
	for _, c := range rec.Charges {
		if c.Stroops <= 0 || c.Cap <= 0 || c.Counter == "" {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: malformed charge %+v", rec.StoreKey, c)
		}
		if c.Stroops > c.Cap {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, transfer.DailyLimitError(c))
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:           aws.String(s.table),
			Key:                 keyOf(c.Counter),
			UpdateExpression:    aws.String("ADD #t :amount SET #e = if_not_exists(#e, :ttl)"),
			ConditionExpression: aws.String("attribute_not_exists(#t) OR #t <= :room"),
			ExpressionAttributeNames: map[string]string{
				"#t": AttrTotal, "#e": TTLAttribute,
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":amount": number(c.Stroops),
				":room":   number(c.Cap - c.Stroops),
				":ttl":    number(c.ExpiresAt()),
			},
		}})
	}
	for attempt := range chargeAttempts {
		_, err := tc.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: aws.String(transfer.RequestToken(rec.ClaimID + "#" + strconv.Itoa(attempt))),
		})
		if err == nil {
			return storedTimes(rec), true, nil
		}
		tce, cancelled := errors.AsType[*types.TransactionCanceledException](err)
		if !cancelled {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, err)
		}
		reasons := tce.CancellationReasons
		if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
			if len(reasons[0].Item) > 0 {
				holder, err := unmarshalRecord(reasons[0].Item)
				if err != nil {
					return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q lost: %w", rec.StoreKey, err)
				}
				return holder, false, nil
			}
			holder, err := s.Get(ctx, rec.StoreKey)
			if errors.Is(err, transfer.ErrNotFound) {
				continue // released between our write and our read: claim again
			}
			if err != nil {
				return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q lost, reading the holder: %w", rec.StoreKey, err)
			}
			return holder, false, nil
		}
		conflict := false
		for i, r := range reasons {
			switch code := aws.ToString(r.Code); {
			case i > 0 && i <= len(rec.Charges) && code == "ConditionalCheckFailed":
				return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, transfer.DailyLimitError(rec.Charges[i-1]))
			case code == "TransactionConflict":
				conflict = true
			}
		}
		if !conflict {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, err)
		}
		if err := pause(ctx, attempt); err != nil {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, err)
		}
	}
	return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: cancelled %d times (transaction conflicts on its counters, or a holder gone when read back); nothing was claimed", rec.StoreKey, chargeAttempts)
}

// pause waits a little before a transaction cancelled by a conflict is written again: 2^attempt
// ms (1 to 32 ms), so that the transactions that collided on a counter spread out.
func pause(ctx context.Context, attempt int) error {
	t := time.NewTimer(time.Duration(1<<attempt) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Counter is the total of the counter item key, in stroops; 0 when it has no item
// (transfer.Counters). A consistent GetItem.
func (s *Store) Counter(ctx context.Context, key string) (int64, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: keyOf(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return 0, fmt.Errorf("dynamo: counter %q: %w", key, err)
	}
	n, ok := out.Item[AttrTotal].(*types.AttributeValueMemberN)
	if !ok {
		return 0, nil
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("dynamo: counter %q: total %q: %w", key, n.Value, err)
	}
	return v, nil
}

// GiveBack subtracts the charges of the claim claimID from their counters, once per claimID
// (transfer.Counters): one TransactWriteItems of a marker item "limit:givenback:<claimId>", put
// if `attribute_not_exists(pk)`, and per charge `ADD total :minus SET expiresAt =
// if_not_exists(expiresAt, :ttl)` on its counter. The marker's condition failing means the
// give-back was made before: nothing to do. A marker keeps the once-only rule off the counter
// itself: a set of given-back claim IDs on the counter would grow with every give-back of the day,
// and every claim's Update on that counter is billed by the item's size (a write unit per KB),
// up to DynamoDB's 400 KB item limit. Marker and counter expire CounterKeep after the charge's day.
// A counter gone already (its day long past) comes back negative until its TTL: no claim charges
// a past day, so it limits nothing.
func (s *Store) GiveBack(ctx context.Context, claimID string, charges []transfer.Charge) error {
	if claimID == "" || len(charges) == 0 {
		return nil
	}
	tc, ok := s.client.(TransactClient)
	if !ok {
		return fmt.Errorf("dynamo: give back claim %q: %w", claimID, ErrNoTransactions)
	}
	var keep int64
	for _, c := range charges {
		keep = max(keep, c.ExpiresAt())
	}
	items := []types.TransactWriteItem{{Put: &types.Put{
		TableName: aws.String(s.table),
		Item: map[string]types.AttributeValue{
			AttrPK:       &types.AttributeValueMemberS{Value: GivenBackPrefix + claimID},
			TTLAttribute: number(keep),
		},
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	}}}
	for _, c := range charges {
		if c.Counter == "" || c.Stroops <= 0 {
			return fmt.Errorf("dynamo: give back claim %q: malformed charge %+v", claimID, c)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName:                aws.String(s.table),
			Key:                      keyOf(c.Counter),
			UpdateExpression:         aws.String("ADD #t :minus SET #e = if_not_exists(#e, :ttl)"),
			ExpressionAttributeNames: map[string]string{"#t": AttrTotal, "#e": TTLAttribute},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":minus": number(-c.Stroops),
				":ttl":   number(c.ExpiresAt()),
			},
		}})
	}
	for attempt := range chargeAttempts {
		_, err := tc.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: aws.String(transfer.RequestToken("givenback:" + claimID + "#" + strconv.Itoa(attempt))),
		})
		if err == nil {
			return nil
		}
		tce, cancelled := errors.AsType[*types.TransactionCanceledException](err)
		if !cancelled {
			return fmt.Errorf("dynamo: give back claim %q: %w", claimID, err)
		}
		reasons := tce.CancellationReasons
		if len(reasons) > 0 && aws.ToString(reasons[0].Code) == "ConditionalCheckFailed" {
			return nil // given back before
		}
		conflict := false
		for _, r := range reasons {
			conflict = conflict || aws.ToString(r.Code) == "TransactionConflict"
		}
		if !conflict {
			return fmt.Errorf("dynamo: give back claim %q: %w", claimID, err)
		}
		if err := pause(ctx, attempt); err != nil {
			return fmt.Errorf("dynamo: give back claim %q: %w", claimID, err)
		}
	}
	return fmt.Errorf("dynamo: give back claim %q: cancelled %d times by transaction conflicts", claimID, chargeAttempts)
}

func number(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
