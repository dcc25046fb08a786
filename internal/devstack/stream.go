package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// The embedded DynamoDB (minidyn) has no streams, so the local stack makes them: streamClient
// wraps the DynamoDB client the stack's functions write through and, after each successful
// write, reads the item back and emits the stream record DynamoDB would (INSERT, MODIFY or REMOVE,
// with the old and new images: NEW_AND_OLD_IMAGES) to the alert handler, in order, as Lambda's
// stream poller would. Writes to one key are serialized so that each record's old image is the
// item as it was just before that write. Writes made by other clients (outside the stack) are
// not seen: they do not go through this wrapper.

// streamHandler is the alert function's handler.
type streamHandler func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// maxStreamBatch is the batch size the poller delivers at most (the template's BatchSize).
const maxStreamBatch = 100

// streamDeliveries bounds how often a batch is delivered when the handler reports a failure.
const streamDeliveries = 3

type streamClient struct {
	dynamo.Client
	table string
	log   *slog.Logger

	keyMu sync.Mutex
	keys  map[string]*sync.Mutex

	mu      sync.Mutex
	handler streamHandler
	pending []events.DynamoDBEventRecord
	seq     int64
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
}

func newStreamClient(inner dynamo.Client, table string, log *slog.Logger) *streamClient {
	return &streamClient{Client: inner, table: table, log: log, keys: map[string]*sync.Mutex{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start delivers records to h until close.
func (c *streamClient) start(h streamHandler) {
	c.mu.Lock()
	c.handler = h
	c.mu.Unlock()
	go c.poll()
}

func (c *streamClient) close() error {
	close(c.stop)
	c.mu.Lock()
	started := c.handler != nil
	c.mu.Unlock()
	if started {
		<-c.done
	}
	return nil
}

func (c *streamClient) lock(pk string) func() {
	c.keyMu.Lock()
	m, ok := c.keys[pk]
	if !ok {
		m = &sync.Mutex{}
		c.keys[pk] = m
	}
	c.keyMu.Unlock()
	m.Lock()
	return m.Unlock
}

func pkOf(key map[string]types.AttributeValue) string {
	if s, ok := key[dynamo.AttrPK].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return ""
}

// PutItem writes, then emits the change.
func (c *streamClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	pk := pkOf(in.Item)
	defer c.lock(pk)()
	old := c.read(ctx, pk)
	out, err := c.Client.PutItem(ctx, in, optFns...)
	if err == nil {
		c.emit(pk, old, c.read(ctx, pk))
	}
	return out, err
}

// DeleteItem deletes, then emits the change.
func (c *streamClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	pk := pkOf(in.Key)
	defer c.lock(pk)()
	old := c.read(ctx, pk)
	out, err := c.Client.DeleteItem(ctx, in, optFns...)
	if err == nil {
		c.emit(pk, old, c.read(ctx, pk))
	}
	return out, err
}

// UpdateItem forwards to the wrapped client when it has UpdateItem (the channel pool's store may
// use it) and emits the change.
func (c *streamClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	u, ok := c.Client.(interface {
		UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	})
	if !ok {
		return nil, fmt.Errorf("devstack: the DynamoDB client has no UpdateItem")
	}
	pk := pkOf(in.Key)
	defer c.lock(pk)()
	old := c.read(ctx, pk)
	out, err := u.UpdateItem(ctx, in, optFns...)
	if err == nil {
		c.emit(pk, old, c.read(ctx, pk))
	}
	return out, err
}

// BatchGetItem forwards to the wrapped client when it has BatchGetItem (dynamo.Store.GetMany); a
// read changes nothing, so it emits nothing.
func (c *streamClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	bg, ok := c.Client.(dynamo.BatchGetClient)
	if !ok {
		return nil, fmt.Errorf("devstack: the DynamoDB client has no BatchGetItem")
	}
	return bg.BatchGetItem(ctx, in, optFns...)
}

// TransactWriteItems forwards to the wrapped client when it has TransactWriteItems (a claim with
// the limits' charges, a give-back) and emits one change per item written, in the request's
// order, as DynamoDB's stream records a transaction's items.
func (c *streamClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	tc, ok := c.Client.(dynamo.TransactClient)
	if !ok {
		return nil, dynamo.ErrNoTransactions
	}
	var pks []string
	for _, it := range in.TransactItems {
		switch {
		case it.Put != nil:
			pks = append(pks, pkOf(it.Put.Item))
		case it.Update != nil:
			pks = append(pks, pkOf(it.Update.Key))
		case it.Delete != nil:
			pks = append(pks, pkOf(it.Delete.Key))
		default:
			pks = append(pks, "") // a ConditionCheck writes nothing
		}
	}
	locked := slices.Compact(slices.Sorted(slices.Values(pks))) // one order for every writer: no deadlock
	for _, pk := range locked {
		defer c.lock(pk)()
	}
	olds := make([]map[string]types.AttributeValue, len(pks))
	for i, pk := range pks {
		olds[i] = c.read(ctx, pk)
	}
	out, err := tc.TransactWriteItems(ctx, in, optFns...)
	if err == nil {
		for i, pk := range pks {
			if pk != "" {
				c.emit(pk, olds[i], c.read(ctx, pk))
			}
		}
	}
	return out, err
}

// read is the item at pk (nil when absent or unreadable: the change is then reported from what
// could be read).
func (c *streamClient) read(ctx context.Context, pk string) map[string]types.AttributeValue {
	if pk == "" {
		return nil
	}
	out, err := c.Client.GetItem(context.WithoutCancel(ctx), &dynamodb.GetItemInput{
		TableName: aws.String(c.table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil {
		c.log.Warn("local stream: reading an item back failed", "storeKey", pk, "err", err)
		return nil
	}
	return out.Item
}

func (c *streamClient) emit(pk string, old, new map[string]types.AttributeValue) {
	name := ""
	switch {
	case old == nil && new == nil:
		return
	case old == nil:
		name = "INSERT"
	case new == nil:
		name = "REMOVE"
	default:
		name = "MODIFY"
	}
	oldImg, err1 := alert.FromSDK(old)
	newImg, err2 := alert.FromSDK(new)
	if err1 != nil || err2 != nil {
		c.log.Warn("local stream: an image could not be converted", "storeKey", pk, "old", err1, "new", err2)
		return
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	rec := events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: hex.EncodeToString(id[:]), EventName: name, EventSource: "aws:dynamodb",
		EventVersion:   "1.1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/" + c.table + "/stream/local",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now()},
			Keys:                        map[string]events.DynamoDBAttributeValue{dynamo.AttrPK: events.NewStringAttribute(pk)},
			SequenceNumber:              fmt.Sprintf("%021d", c.seq),
			StreamViewType:              string(types.StreamViewTypeNewAndOldImages),
		},
	}
	if len(oldImg) > 0 {
		rec.Change.OldImage = oldImg
	}
	if len(newImg) > 0 {
		rec.Change.NewImage = newImg
	}
	c.pending = append(c.pending, rec)
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// poll delivers pending records in batches, in order. A batch whose handler reports a failure is
// delivered again from the reported record, at most streamDeliveries times, then dropped.
func (c *streamClient) poll() {
	defer close(c.done)
	for {
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		for {
			c.mu.Lock()
			n := min(len(c.pending), maxStreamBatch)
			if n == 0 {
				c.mu.Unlock()
				break
			}
			batch := append([]events.DynamoDBEventRecord(nil), c.pending[:n]...)
			c.pending = c.pending[n:]
			h := c.handler
			c.mu.Unlock()
			c.deliver(h, batch)
		}
	}
}

func (c *streamClient) deliver(h streamHandler, batch []events.DynamoDBEventRecord) {
	for try := 1; len(batch) > 0; try++ {
		ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
			AwsRequestID: newRequestID(), InvokedFunctionArn: functionARN(alertFunction)})
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		resp, err := h(ctx, events.DynamoDBEvent{Records: batch})
		cancel()
		from := len(batch)
		if err != nil {
			from = 0
		}
		for _, f := range resp.BatchItemFailures {
			for i, r := range batch {
				if r.Change.SequenceNumber == f.ItemIdentifier && i < from {
					from = i
				}
			}
		}
		if from == len(batch) {
			return
		}
		if try >= streamDeliveries {
			c.log.Error("local stream: dropping records the alert function kept failing", "records", len(batch)-from, "err", err)
			return
		}
		batch = batch[from:]
	}
}
