package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Batches (internal/transfer/doc.go, "Batches"): a batch's envelope is one item, pk
// "batch:<inner hash>" (transfer.BatchKey), and the batch's keys are written together by one
// TransactWriteItems. The one-transfer path never calls these.
//
// A batch item holds envelopeXdr, innerHash, outerHash, outerHashes, maxTime, submittedLedger,
// channel and feeStroops as a transfer item does, ops (L of M: storeKey, claimId, in the
// transaction's order), version, createdAt (epoch ms) and expiresAt (epoch s, the TTL: absent
// while a key names the batch unsettled, then set by ExpireBatch). It has no status and no index
// attributes, so it is in no index, and the alert function's stream reader passes it by (it reads
// "transfer:" items only). About 25 KB for 100 operations, below the 400 KB item limit.

var _ transfer.BatchStore = (*Store)(nil)

// batchItem is transfer.BatchEnvelope as stored.
type batchItem struct {
	PK              string        `dynamodbav:"pk"`
	EnvelopeXDR     string        `dynamodbav:"envelopeXdr"`
	InnerHash       string        `dynamodbav:"innerHash"`
	OuterHash       string        `dynamodbav:"outerHash,omitempty"`
	OuterHashes     []string      `dynamodbav:"outerHashes,omitempty"`
	MaxTime         int64         `dynamodbav:"maxTime,omitempty"`
	SubmittedLedger uint32        `dynamodbav:"submittedLedger,omitempty"`
	Channel         string        `dynamodbav:"channel,omitempty"`
	FeeStroops      int64         `dynamodbav:"feeStroops,omitempty"`
	Ops             []batchOpItem `dynamodbav:"ops"`
	Version         int64         `dynamodbav:"version"`
	CreatedAt       int64         `dynamodbav:"createdAt,omitempty"`
	ExpiresAt       int64         `dynamodbav:"expiresAt,omitempty"`
}

// batchOpItem is transfer.BatchOp (an element of "ops").
type batchOpItem struct {
	StoreKey string `dynamodbav:"storeKey"`
	ClaimID  string `dynamodbav:"claimId"`
}

// PutBatch writes b (it must Validate) with PutItem `attribute_not_exists(pk)`: a batch item is
// written once, before any key names it. Errors: transfer.ErrConditionFailed (wrapped) when an
// item holds its key, the request's errors otherwise.
func (s *Store) PutBatch(ctx context.Context, b transfer.BatchEnvelope) error {
	if err := b.Validate(); err != nil {
		return fmt.Errorf("dynamo: put batch: %w", err)
	}
	e := b.Envelope
	it := batchItem{
		PK: transfer.BatchKey(e.InnerHash), EnvelopeXDR: e.XDR, InnerHash: e.InnerHash, OuterHash: e.OuterHash,
		MaxTime: e.MaxTime, SubmittedLedger: e.SubmittedLedger, Channel: e.Channel, FeeStroops: e.FeeStroops,
		Version: b.Version, CreatedAt: epochMillis(b.CreatedAt), ExpiresAt: b.ExpiresAt,
	}
	if outers := e.Outers(); len(outers) > 1 {
		it.OuterHashes = outers
	}
	for _, op := range b.Ops {
		it.Ops = append(it.Ops, batchOpItem{StoreKey: op.StoreKey, ClaimID: op.ClaimID})
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return fmt.Errorf("dynamo: put batch %s: %w", e.InnerHash, err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     av,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": AttrPK},
	})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return fmt.Errorf("dynamo: put batch %s: %w: %w", e.InnerHash, transfer.ErrConditionFailed, err)
	}
	if err != nil {
		return fmt.Errorf("dynamo: put batch %s: %w", e.InnerHash, err)
	}
	return nil
}

// GetBatch reads the batch whose inner hash is innerHash with a consistent GetItem. Errors:
// transfer.ErrNotFound (wrapped), a malformed item naming its key, the request's errors.
func (s *Store) GetBatch(ctx context.Context, innerHash string) (transfer.BatchEnvelope, error) {
	key := transfer.BatchKey(innerHash)
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: keyOf(key), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return transfer.BatchEnvelope{}, fmt.Errorf("dynamo: get batch %s: %w", innerHash, err)
	}
	if len(out.Item) == 0 {
		return transfer.BatchEnvelope{}, fmt.Errorf("dynamo: get batch %s: %w", innerHash, transfer.ErrNotFound)
	}
	var it batchItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return transfer.BatchEnvelope{}, fmt.Errorf("dynamo: malformed batch item %q: %w", key, err)
	}
	b := transfer.BatchEnvelope{
		Envelope: transfer.Envelope{XDR: it.EnvelopeXDR, InnerHash: it.InnerHash, OuterHash: it.OuterHash, OuterHashes: it.OuterHashes,
			MaxTime: it.MaxTime, SubmittedLedger: it.SubmittedLedger, Channel: it.Channel, FeeStroops: it.FeeStroops},
		Version: it.Version, CreatedAt: fromEpochMillis(it.CreatedAt), ExpiresAt: it.ExpiresAt,
	}
	for _, op := range it.Ops {
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: op.StoreKey, ClaimID: op.ClaimID})
	}
	if err := b.Validate(); err != nil {
		return transfer.BatchEnvelope{}, fmt.Errorf("dynamo: malformed batch item %q: %w", key, err)
	}
	return b, nil
}

// replaceAllAttempts bounds the writes of a ReplaceAll cancelled by a TransactionConflict (another
// transaction on one of its items at the same instant; nothing was written).
const replaceAllAttempts = 4

// ReplaceAll writes every w.Next with one TransactWriteItems of Puts, each conditional on its
// w.Cond as Replace's (conditionExpr), all or nothing, under a ClientRequestToken derived from the
// writes (each key, claim and version), so that the SDK's retry of a request whose answer was lost
// applies nothing twice. Every write is checked as Replace checks it before anything is sent. The
// cancellation reasons decide: the items whose condition failed make a
// *transfer.BatchConditionError naming them in order; a TransactionConflict alone is written
// again after a pause, at most replaceAllAttempts times. Errors: the checks' (nothing sent),
// *transfer.BatchConditionError, or the request's (the transaction may have applied or not).
func (s *Store) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	tc, ok := s.client.(TransactClient)
	if !ok {
		return fmt.Errorf("dynamo: replace all: %w", ErrNoTransactions)
	}
	if len(writes) == 0 || len(writes) > transfer.MaxBatchOperations {
		return fmt.Errorf("dynamo: replace all: %d writes, want 1 to %d", len(writes), transfer.MaxBatchOperations)
	}
	items := make([]types.TransactWriteItem, 0, len(writes))
	keys := make([]string, 0, len(writes))
	token := sha256.New()
	for _, w := range writes {
		next, cond := w.Next, w.Cond
		if err := replaceable(next, cond); err != nil {
			return fmt.Errorf("dynamo: replace all: %w", err)
		}
		for _, k := range keys {
			if k == next.StoreKey {
				return fmt.Errorf("dynamo: replace all: %q written twice", next.StoreKey)
			}
		}
		av, err := marshalRecord(next)
		if err != nil {
			return fmt.Errorf("dynamo: replace all: %w", err)
		}
		expr, err := conditionExpr(cond)
		if err != nil {
			return fmt.Errorf("dynamo: replace all %q: build condition: %w", next.StoreKey, err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(s.table), Item: av, ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		}})
		keys = append(keys, next.StoreKey)
		fmt.Fprintf(token, "%s\x00%s\x00%d\x00%s\x00", next.StoreKey, next.ClaimID, next.Version, string(next.Status))
	}
	base := hex.EncodeToString(token.Sum(nil)[:16])
	for attempt := range replaceAllAttempts {
		_, err := tc.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
			TransactItems:      items,
			ClientRequestToken: aws.String(base + "-" + strconv.Itoa(attempt)),
		})
		if err == nil {
			return nil
		}
		tce, cancelled := errors.AsType[*types.TransactionCanceledException](err)
		if !cancelled {
			return fmt.Errorf("dynamo: replace all %s: %w", strings.Join(keys, ", "), err)
		}
		var failed []string
		conflict := false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if i < len(keys) {
					failed = append(failed, keys[i])
				}
			case "TransactionConflict":
				conflict = true
			}
		}
		if len(failed) > 0 {
			return &transfer.BatchConditionError{Failed: failed}
		}
		if !conflict {
			return fmt.Errorf("dynamo: replace all %s: %w", strings.Join(keys, ", "), err)
		}
		if err := pause(ctx, attempt); err != nil {
			return fmt.Errorf("dynamo: replace all: %w", err)
		}
	}
	return fmt.Errorf("dynamo: replace all %s: cancelled %d times by transaction conflicts; nothing was written", strings.Join(keys, ", "), replaceAllAttempts)
}

// replaceable is Replace's check of one write before it is sent: the next version, the same
// claim, and a cancelled item only in place of a queued one, never replaced.
func replaceable(next transfer.Record, cond transfer.Condition) error {
	switch {
	case next.Version != cond.Version+1:
		return fmt.Errorf("%q: next version %d is not the expected %d+1", next.StoreKey, next.Version, cond.Version)
	case next.ClaimID != cond.ClaimID:
		return fmt.Errorf("%q: claim %q would replace claim %q; only a claim starts an incarnation", next.StoreKey, next.ClaimID, cond.ClaimID)
	case cond.Status == transfer.StatusCancelled:
		return fmt.Errorf("%q: a cancelled item is final", next.StoreKey)
	case next.Status == transfer.StatusCancelled && cond.Status != transfer.StatusQueued:
		return fmt.Errorf("%q: only a queued item can be cancelled, not a %s one", next.StoreKey, cond.Status)
	}
	return nil
}

// ReplaceBatch writes next's envelope to its batch item (a replacement by fee): UpdateItem `SET
// envelopeXdr, outerHash, outerHashes, feeStroops, version` on the condition `version = :prev`
// (next.Version-1), so the operations, maxTime, channel, TTL and page claim stay as they are and
// it never creates an item. It needs a client that makes UpdateItem requests (TicketClient).
// Errors: transfer.ErrConditionFailed (wrapped) when the item holds another version or none,
// ErrNoTickets without UpdateItem, the checks' (nothing sent), the request's.
func (s *Store) ReplaceBatch(ctx context.Context, next transfer.BatchEnvelope) error {
	e := next.Envelope
	if err := next.Validate(); err != nil {
		return fmt.Errorf("dynamo: replace batch: %w", err)
	}
	if next.Version < 2 || e.OuterHash == "" {
		return fmt.Errorf("dynamo: replace batch %s: version %d with outer hash %q is no replacement", e.InnerHash, next.Version, e.OuterHash)
	}
	uc, ok := s.client.(TicketClient)
	if !ok {
		return fmt.Errorf("dynamo: replace batch %s: %w", e.InnerHash, ErrNoTickets)
	}
	outers := make([]types.AttributeValue, 0, len(e.Outers()))
	for _, h := range e.Outers() {
		outers = append(outers, &types.AttributeValueMemberS{Value: h})
	}
	_, err := uc.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:           aws.String(s.table),
		Key:                 keyOf(transfer.BatchKey(e.InnerHash)),
		UpdateExpression:    aws.String("SET #x = :x, #o = :o, #os = :os, #f = :f, #v = :v"),
		ConditionExpression: aws.String("#v = :prev AND #i = :i"),
		ExpressionAttributeNames: map[string]string{"#x": "envelopeXdr", "#o": "outerHash", "#os": "outerHashes", "#f": "feeStroops",
			"#v": "version", "#i": "innerHash"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":x": &types.AttributeValueMemberS{Value: e.XDR}, ":o": &types.AttributeValueMemberS{Value: e.OuterHash},
			":os": &types.AttributeValueMemberL{Value: outers}, ":f": &types.AttributeValueMemberN{Value: strconv.FormatInt(e.FeeStroops, 10)},
			":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Version, 10)}, ":prev": &types.AttributeValueMemberN{Value: strconv.FormatInt(next.Version-1, 10)},
			":i": &types.AttributeValueMemberS{Value: e.InnerHash},
		},
	})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return fmt.Errorf("dynamo: replace batch %s: %w: %w", e.InnerHash, transfer.ErrConditionFailed, err)
	}
	if err != nil {
		return fmt.Errorf("dynamo: replace batch %s: %w", e.InnerHash, err)
	}
	return nil
}

// ExpireBatch sets the TTL of the batch whose inner hash is innerHash: UpdateItem
// `SET expiresAt = :e` (TTLAttribute) on the condition `attribute_exists(pk)`, so it never creates a stub item.
// It needs a client that makes UpdateItem requests (TicketClient). Errors: transfer.ErrNotFound
// (wrapped) when no item holds the batch, ErrNoTickets without UpdateItem, the request's.
func (s *Store) ExpireBatch(ctx context.Context, innerHash string, expiresAt int64) error {
	uc, ok := s.client.(TicketClient)
	if !ok {
		return fmt.Errorf("dynamo: expire batch %s: %w", innerHash, ErrNoTickets)
	}
	_, err := uc.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(transfer.BatchKey(innerHash)),
		UpdateExpression:          aws.String("SET #e = :e"),
		ConditionExpression:       aws.String("attribute_exists(#pk)"),
		ExpressionAttributeNames:  map[string]string{"#e": TTLAttribute, "#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":e": &types.AttributeValueMemberN{Value: strconv.FormatInt(expiresAt, 10)}},
	})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		return fmt.Errorf("dynamo: expire batch %s: %w", innerHash, transfer.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("dynamo: expire batch %s: %w", innerHash, err)
	}
	return nil
}

// BatchPagedAttr is the batch item's attribute naming the stream record (its event ID) that paged
// the batch in doubt (PageBatch).
const BatchPagedAttr = "pagedBy"

// PageBatch claims the one in-doubt page of the batch whose inner hash is innerHash for the
// stream record by (internal/alert's BatchPager): UpdateItem `SET pagedBy = :by` on the condition
// `attribute_exists(pk) AND (attribute_not_exists(pagedBy) OR pagedBy = :by)`, so the first
// record claims it and the same record delivered again still holds it. It writes that attribute
// alone (the alert function's role may write nothing else of a batch item). It reports false when
// another record holds the page. When no batch item holds the hash it reports false with
// transfer.ErrNotFound (wrapped): its keys then page through the in-doubt alarm. A failed
// condition is told apart by a consistent GetItem projecting pk and pagedBy alone, not by the
// failed write's old image (ReturnValuesOnConditionCheckFailure ALL_OLD): the role's statement
// restricts dynamodb:Attributes to those two, and AWS's pattern for such a statement (the IAM User
// Guide, "Amazon DynamoDB: Allows access to specific attributes") also requires
// dynamodb:ReturnValues NONE or UPDATED_* and dynamodb:Select SPECIFIC_ATTRIBUTES, because an
// ALL_OLD image would return every attribute of the item. It needs UpdateItem (TicketClient).
// Errors: ErrNoTickets, ErrNotFound, the requests'.
func (s *Store) PageBatch(ctx context.Context, innerHash, by string) (bool, error) {
	uc, ok := s.client.(TicketClient)
	if !ok {
		return false, fmt.Errorf("dynamo: page batch %s: %w", innerHash, ErrNoTickets)
	}
	_, err := uc.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       keyOf(transfer.BatchKey(innerHash)),
		UpdateExpression:          aws.String("SET #p = :by"),
		ConditionExpression:       aws.String("attribute_exists(#pk) AND (attribute_not_exists(#p) OR #p = :by)"),
		ExpressionAttributeNames:  map[string]string{"#p": BatchPagedAttr, "#pk": AttrPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":by": &types.AttributeValueMemberS{Value: by}},
	})
	if _, ok := errors.AsType[*types.ConditionalCheckFailedException](err); ok {
		// Tell "another record holds the page" from "no batch item", reading only the two
		// attributes the role may touch.
		out, gerr := s.client.GetItem(ctx, &dynamodb.GetItemInput{
			TableName:                aws.String(s.table),
			Key:                      keyOf(transfer.BatchKey(innerHash)),
			ConsistentRead:           aws.Bool(true),
			ProjectionExpression:     aws.String("#pk, #p"),
			ExpressionAttributeNames: map[string]string{"#p": BatchPagedAttr, "#pk": AttrPK},
		})
		if gerr != nil {
			return false, fmt.Errorf("dynamo: page batch %s: reading who holds the page: %w", innerHash, gerr)
		}
		if len(out.Item) == 0 {
			return false, fmt.Errorf("dynamo: page batch %s: %w", innerHash, transfer.ErrNotFound)
		}
		// The same record holding it would have passed the condition: another one does.
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("dynamo: page batch %s: %w", innerHash, err)
	}
	return true, nil
}
