package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Client is the part of the DynamoDB API the Store uses. *dynamodb.Client satisfies it; tests and
// the X-Ray wiring wrap it (see dynamotest.CountingClient).
type Client interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// ClaimAttempts bounds how often Claim writes when it loses and then finds no item (the holder was
// deleted, i.e. released, between the write and the read-back).
const ClaimAttempts = 3

// DefaultListLimit is ListInDoubt's page size when limit is not positive.
const DefaultListLimit = 100

// Store is transfer.Store on one DynamoDB table (doc.go, "Table layout"). It is safe for concurrent
// use and holds no state besides its client, table name and clock.
type Store struct {
	client Client
	table  string
	// clock is what GetMany pauses on between its reads of unprocessed keys; nil: the system
	// clock (WithClock).
	clock transfer.Clock
}

var _ transfer.Store = (*Store)(nil)

// New returns a Store on table through client. The table must exist (EnsureTable, or the
// deployment template).
func New(client Client, table string) *Store {
	return &Store{client: client, table: table}
}

// Table returns the table's name.
func (s *Store) Table() string { return s.table }

// Claim writes rec if no item holds rec.StoreKey or the item there expired before now: PutItem
// with `attribute_not_exists(pk) OR expiresAt < :now` (now in epoch seconds; an item without
// expiresAt, i.e. in_flight or in_doubt, never expires) and ReturnValuesOnConditionCheckFailure
// ALL_OLD. When the claim is lost it returns the holder from the failed write or, if the service
// left it out (minidyn and dynalite always do), from a consistent GetItem. If that read finds
// nothing (the holder was deleted in between) it claims again, at most ClaimAttempts writes in all.
// A won claim returns rec as stored: its times at millisecond precision, in UTC. A record with
// charges (the limits' daily counters) is claimed with its counters in one transaction instead
// (claimCharged); without charges the claim is the one PutItem, as without limits.
func (s *Store) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	if rec.Status == transfer.StatusCancelled {
		return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: a claim never writes a cancelled item", rec.StoreKey)
	}
	av, err := marshalRecord(rec)
	if err != nil {
		return transfer.Record{}, false, fmt.Errorf("dynamo: claim: %w", err)
	}
	expr, err := expression.NewBuilder().WithCondition(
		expression.AttributeNotExists(expression.Name(AttrPK)).
			Or(expression.Name(TTLAttribute).LessThan(expression.Value(now.Unix()))),
	).Build()
	if err != nil {
		return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: build condition: %w", rec.StoreKey, err)
	}
	in := &dynamodb.PutItemInput{
		TableName:                           aws.String(s.table),
		Item:                                av,
		ConditionExpression:                 expr.Condition(),
		ExpressionAttributeNames:            expr.Names(),
		ExpressionAttributeValues:           expr.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	if len(rec.Charges) > 0 {
		return s.claimCharged(ctx, rec, &types.Put{
			TableName: in.TableName, Item: in.Item, ConditionExpression: in.ConditionExpression,
			ExpressionAttributeNames: in.ExpressionAttributeNames, ExpressionAttributeValues: in.ExpressionAttributeValues,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
	}
	for range ClaimAttempts {
		_, err := s.client.PutItem(ctx, in)
		if err == nil {
			return storedTimes(rec), true, nil
		}
		ccf, lost := errors.AsType[*types.ConditionalCheckFailedException](err)
		if !lost {
			return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: %w", rec.StoreKey, err)
		}
		if len(ccf.Item) > 0 {
			holder, err := unmarshalRecord(ccf.Item)
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
	return transfer.Record{}, false, fmt.Errorf("dynamo: claim %q: lost %d times to an item that was gone when read back", rec.StoreKey, ClaimAttempts)
}

// Get reads the item at storeKey with a consistent GetItem; transfer.ErrNotFound (wrapped) when
// there is none.
func (s *Store) Get(ctx context.Context, storeKey string) (transfer.Record, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.table),
		Key:            keyOf(storeKey),
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return transfer.Record{}, fmt.Errorf("dynamo: get %q: %w", storeKey, err)
	}
	if len(out.Item) == 0 {
		return transfer.Record{}, fmt.Errorf("dynamo: get %q: %w", storeKey, transfer.ErrNotFound)
	}
	return unmarshalRecord(out.Item)
}

// Replace puts next (the whole item) in place of the stored one if it matches cond exactly
// (conditionExpr: incarnation, status, version, lease owner, inner hash). A mismatch, or no item,
// is transfer.ErrConditionFailed (wrapped, with the service's ConditionalCheckFailedException).
// next.Version must be cond.Version+1 and next.ClaimID cond.ClaimID, and a cancelled next must
// replace a queued item (cond.Status queued): all checked before writing.
func (s *Store) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	if next.Version != cond.Version+1 {
		return fmt.Errorf("dynamo: replace %q: next version %d is not the expected %d+1", next.StoreKey, next.Version, cond.Version)
	}
	if next.ClaimID != cond.ClaimID {
		return fmt.Errorf("dynamo: replace %q: claim %q would replace claim %q; only a claim starts an incarnation", next.StoreKey, next.ClaimID, cond.ClaimID)
	}
	if cond.Status == transfer.StatusCancelled {
		// A cancelled item is final: nothing may take, requeue or rewrite it (internal/transfer/doc.go,
		// "The item": cancel); only its TTL, or a claim after it, replaces it.
		return fmt.Errorf("dynamo: replace %q: a cancelled item is final", next.StoreKey)
	}
	if next.Status == transfer.StatusCancelled && cond.Status != transfer.StatusQueued {
		// Only a queued item holds nothing that can land (internal/transfer/doc.go, "The item":
		// cancel); the condition then makes the write apply only to that queued state.
		return fmt.Errorf("dynamo: replace %q: only a queued item can be cancelled, not a %s one", next.StoreKey, cond.Status)
	}
	av, err := marshalRecord(next)
	if err != nil {
		return fmt.Errorf("dynamo: replace: %w", err)
	}
	expr, err := conditionExpr(cond)
	if err != nil {
		return fmt.Errorf("dynamo: replace %q: build condition: %w", next.StoreKey, err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                 aws.String(s.table),
		Item:                      av,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return writeErr("replace", next.StoreKey, cond, err)
}

// Delete removes the item at storeKey if it matches cond, as Replace. The caller only deletes
// when nothing can land for the key (internal/transfer/doc.go, "The item", release).
func (s *Store) Delete(ctx context.Context, storeKey string, cond transfer.Condition) error {
	expr, err := conditionExpr(cond)
	if err != nil {
		return fmt.Errorf("dynamo: delete %q: build condition: %w", storeKey, err)
	}
	_, err = s.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(storeKey),
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return writeErr("delete", storeKey, cond, err)
}

// ListInDoubt queries the sparse index gsi1 (gsi1pk = "in_doubt"), oldest in-doubt time first, at
// most limit items (DefaultListLimit when limit <= 0) after cursor ("" for the start). It returns
// the next cursor, "" when the query reported no more. The cursor is opaque: base64url of JSON of
// the query's LastEvaluatedKey (cursor.go); one that is not this listing's, exactly as written,
// is ErrBadCursor before any request. A global secondary index is eventually consistent: an item may
// appear a little after it became in_doubt and linger a little after it left, so callers re-read
// each item with Get before acting on it. A page may be non-empty cursor followed by an empty page.
func (s *Store) ListInDoubt(ctx context.Context, limit int, cursor string) ([]transfer.Record, string, error) {
	return s.queryIndex(ctx, "list in doubt", InDoubtPartition, nil, limit, cursor)
}

// queryIndex reads one page of transfer items in gsi1's partition (gsi1pk = partition), with
// gsi1sk below sortBelow when it is not nil, at most limit items (DefaultListLimit when limit <= 0)
// after cursor, and returns the records and the next cursor ("" when there is no more). A cursor
// that is not one of this partition's (indexStart) is ErrBadCursor before any request. what names
// the listing in errors.
func (s *Store) queryIndex(ctx context.Context, what, partition string, sortBelow *string, limit int, cursor string) ([]transfer.Record, string, error) {
	return queryGSI1(ctx, s, what, partition, sortBelow, limit, cursor, indexStart, unmarshalRecord)
}

// queryGSI1 is queryIndex for any item of gsi1: start reads the cursor into the Query's
// ExclusiveStartKey (nil for ""; an error, which should be ErrBadCursor, fails the listing before
// any request), and decode reads each item.
func queryGSI1[T any](ctx context.Context, s *Store, what, partition string, sortBelow *string, limit int, cursor string,
	start func(partition, cursor string) (map[string]types.AttributeValue, error),
	decode func(map[string]types.AttributeValue) (T, error)) ([]T, string, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, 1<<31-1)
	startKey, err := start(partition, cursor)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	key := expression.Key(AttrGSI1PK).Equal(expression.Value(partition))
	if sortBelow != nil {
		key = key.And(expression.Key(AttrGSI1SK).LessThan(expression.Value(*sortBelow)))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(key).Build()
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: build key condition: %w", what, err)
	}
	out, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(InDoubtIndex),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		Limit:                     aws.Int32(int32(limit)),
		ExclusiveStartKey:         startKey,
	})
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	items := make([]T, 0, len(out.Items))
	for _, av := range out.Items {
		it, err := decode(av)
		if err != nil {
			return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
		}
		items = append(items, it)
	}
	next, err := indexCursor(partition, out.LastEvaluatedKey)
	if err != nil {
		return nil, "", fmt.Errorf("dynamo: %s: %w", what, err)
	}
	return items, next, nil
}

func keyOf(storeKey string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{AttrPK: &types.AttributeValueMemberS{Value: storeKey}}
}

// conditionExpr is transfer.Condition.Matches as a ConditionExpression: every field compared
// exactly, an empty one as absent. `claimId = :c AND status = :s AND version = :v AND
// leaseOwner = :o AND innerHash = :h`, with `attribute_not_exists(claimId)`, `(leaseOwner)` or
// `(innerHash)` for an empty ClaimID, LeaseOwner or InnerHash. An empty ClaimID therefore matches
// only an item written before claim IDs existed, never a later claim.
func conditionExpr(cond transfer.Condition) (expression.Expression, error) {
	exact := func(name, v string) expression.ConditionBuilder {
		if v == "" {
			return expression.AttributeNotExists(expression.Name(name))
		}
		return expression.Name(name).Equal(expression.Value(v))
	}
	c := expression.And(
		exact(AttrClaimID, cond.ClaimID),
		expression.Name("status").Equal(expression.Value(string(cond.Status))),
		expression.Name("version").Equal(expression.Value(cond.Version)),
		exact("leaseOwner", cond.LeaseOwner),
		exact("innerHash", cond.InnerHash),
	)
	return expression.NewBuilder().WithCondition(c).Build()
}

// writeErr maps a conditional write's error: ConditionalCheckFailedException becomes
// transfer.ErrConditionFailed (both stay reachable with errors.Is/As).
func writeErr(op, key string, cond transfer.Condition, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return fmt.Errorf("dynamo: %s %q (expected claim %q, status %s, version %d, owner %q, inner hash %q): %w: %w",
			op, key, cond.ClaimID, cond.Status, cond.Version, cond.LeaseOwner, cond.InnerHash, transfer.ErrConditionFailed, err)
	}
	return fmt.Errorf("dynamo: %s %q: %w", op, key, err)
}
