package loadtest

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

// DynamoDB write units as DynamoDB bills them on the base table (Amazon DynamoDB Developer Guide,
// "DynamoDB read consumption and write consumption" and "DynamoDB item sizes and formats"):
//
//   - a standard write of an item costs one unit per 1 KB, rounded up, at least one: PutItem and
//     UpdateItem the larger of the item before and after, DeleteItem the item deleted;
//   - a write whose condition failed costs the same on the item as stored (at least one);
//   - every item of a TransactWriteItems costs twice a standard write ("transactional write
//     requests require 2 write capacity units to perform one write per 1 KB"); a ConditionCheck
//     is counted as a write of the item it checks, and a cancelled transaction as if applied.
//
// Writes to the table's indexes (gsi1, gsi2) bill on top and are not counted here.

// writeUnits is a dynamo.Client (with UpdateItem and TransactWriteItems) that forwards every
// request to inner and counts the write units of its writes, sizing each item by reading it
// before (and, for UpdateItem, after) through raw, which nothing else counts. Safe for concurrent
// use; the items it reads around a write may be another writer's under contention, so the count
// is exact only for writes that do not race on one item (every run here but a lost claim).
type writeUnits struct {
	inner dynamo.Client
	raw   *dynamodb.Client

	mu    sync.Mutex
	units int64
	// byOp counts units by request kind ("PutItem", "TransactWriteItems", ...).
	byOp map[string]int64
	// largest is the largest item written, in bytes.
	largest int
}

func (w *writeUnits) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.units, w.byOp, w.largest = 0, nil, 0
}

// total is the write units counted since the last reset.
func (w *writeUnits) total() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.units
}

// counts are the units by request kind and the largest item written, in bytes.
func (w *writeUnits) counts() (map[string]int64, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make(map[string]int64, len(w.byOp))
	for k, v := range w.byOp {
		out[k] = v
	}
	return out, w.largest
}

func (w *writeUnits) add(op string, units int64, size int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.units += units
	if w.byOp == nil {
		w.byOp = map[string]int64{}
	}
	w.byOp[op] += units
	w.largest = max(w.largest, size)
}

// stored reads the item at key in table, consistently and uncounted: its size in bytes (0 when
// there is none).
func (w *writeUnits) stored(ctx context.Context, table *string, key map[string]types.AttributeValue) int {
	out, err := w.raw.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		return 0
	}
	return dynamotest.ItemSize(out.Item)
}

// keyOf is the table's key of item (its hash key pk: dynamo.TableDefinition).
func keyOf(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": item["pk"]}
}

// unitsFor is the write units of one standard write: the larger of before and after (after is
// ignored when the write failed its condition), per 1 KB rounded up, at least one.
func unitsFor(before, after int, applied bool) int64 {
	size := before
	if applied {
		size = max(before, after)
	}
	return max(1, int64(math.Ceil(float64(size)/1024)))
}

// conditionFailed reports whether err is a write refused by its condition (billed all the same).
func conditionFailed(err error) bool {
	var cf *types.ConditionalCheckFailedException
	var tc *types.TransactionCanceledException
	return errors.As(err, &cf) || errors.As(err, &tc)
}

func (w *writeUnits) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	before := w.stored(ctx, in.TableName, keyOf(in.Item))
	out, err := w.inner.PutItem(ctx, in, o...)
	if err == nil || conditionFailed(err) {
		after := dynamotest.ItemSize(in.Item)
		w.add("PutItem", unitsFor(before, after, err == nil), after)
	}
	return out, err
}

func (w *writeUnits) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	before := w.stored(ctx, in.TableName, in.Key)
	out, err := w.inner.(dynamo.TicketClient).UpdateItem(ctx, in, o...)
	if err == nil || conditionFailed(err) {
		after := 0
		if err == nil {
			after = w.stored(ctx, in.TableName, in.Key)
		}
		w.add("UpdateItem", unitsFor(before, after, err == nil), after)
	}
	return out, err
}

func (w *writeUnits) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	before := w.stored(ctx, in.TableName, in.Key)
	out, err := w.inner.DeleteItem(ctx, in, o...)
	if err == nil || conditionFailed(err) {
		w.add("DeleteItem", unitsFor(before, 0, false), 0)
	}
	return out, err
}

func (w *writeUnits) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return w.inner.GetItem(ctx, in, o...)
}

// BatchGetItem reads (read units, not counted here).
func (w *writeUnits) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	return w.inner.(dynamo.BatchGetClient).BatchGetItem(ctx, in, o...)
}

func (w *writeUnits) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return w.inner.Query(ctx, in, o...)
}

func (w *writeUnits) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, o ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	type write struct {
		table  *string
		key    map[string]types.AttributeValue
		after  int // the Put's item; -1: read it after (Update); 0: none (Delete, ConditionCheck)
		before int
	}
	var writes []write
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			writes = append(writes, write{table: it.Put.TableName, key: keyOf(it.Put.Item), after: dynamotest.ItemSize(it.Put.Item)})
		case it.Update != nil:
			writes = append(writes, write{table: it.Update.TableName, key: it.Update.Key, after: -1})
		case it.Delete != nil:
			writes = append(writes, write{table: it.Delete.TableName, key: it.Delete.Key})
		case it.ConditionCheck != nil:
			writes = append(writes, write{table: it.ConditionCheck.TableName, key: it.ConditionCheck.Key})
		}
	}
	for i := range writes {
		writes[i].before = w.stored(ctx, writes[i].table, writes[i].key)
	}
	out, err := w.inner.(dynamo.TransactClient).TransactWriteItems(ctx, in, o...)
	if err == nil || conditionFailed(err) {
		for _, wr := range writes {
			after := wr.after
			if after < 0 && err == nil {
				after = w.stored(ctx, wr.table, wr.key)
			}
			w.add("TransactWriteItems", 2*unitsFor(wr.before, max(after, 0), err == nil), after)
		}
	}
	return out, err
}

// itemSize is an item's size in bytes as DynamoDB counts it: the UTF-8 length of every attribute

// TestItemSize pins the sizing rules on a known item: names and strings by their UTF-8 bytes,
// numbers by significant digits, a map with its overhead.
func TestItemSize(t *testing.T) {
	item := map[string]types.AttributeValue{
		"pk":  &types.AttributeValueMemberS{Value: "abc"},                                                                          // 2 + 3
		"n":   &types.AttributeValueMemberN{Value: "12300"},                                                                        // 1 + (3+1)/2+1 = 1 + 3
		"ok":  &types.AttributeValueMemberBOOL{Value: true},                                                                        // 2 + 1
		"m":   &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "é"}}}, // 1 + 3 + 1 + 1 + 2
		"nil": &types.AttributeValueMemberNULL{Value: true},                                                                        // 3 + 1
	}
	if got, want := dynamotest.ItemSize(item), 5+4+3+8+4; got != want {
		t.Errorf("itemSize = %d, want %d", got, want)
	}
	for _, c := range []struct {
		before, after int
		applied       bool
		want          int64
	}{{0, 300, true, 1}, {1024, 1025, true, 2}, {3000, 100, true, 3}, {0, 5000, false, 1}, {2100, 100, false, 3}} {
		if got := unitsFor(c.before, c.after, c.applied); got != c.want {
			t.Errorf("unitsFor(%d, %d, %v) = %d, want %d", c.before, c.after, c.applied, got, c.want)
		}
	}
}
