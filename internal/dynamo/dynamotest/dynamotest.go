// Package dynamotest helps tests and benchmarks use internal/dynamo: an in-process minidyn
// server with an SDK client, unique table names, and CountingClient, a decorator that counts
// DynamoDB requests by operation (for "requests per transfer" figures).
package dynamotest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// API is everything internal/dynamo calls: the Store's Client and EnsureTable's TableClient.
type API interface {
	dynamo.Client
	dynamo.TableClient
}

// NewClient returns an SDK client for a local endpoint (minidyn, dynalite, DynamoDB Local):
// region us-east-1, static credentials, BaseEndpoint = endpoint; optFns adjust the options.
func NewClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, optFns...)
}

// Minidyn starts minidyn's DynamoDB-compatible HTTP server in-process on 127.0.0.1 (stopped when
// tb ends) and returns a client for it and the server (for its failure emulation). Use one server
// per test: minidyn creates tables without its request lock, so creating a table while another
// goroutine uses the same server is a data race.
func Minidyn(tb testing.TB) (*dynamodb.Client, *server.Server) {
	tb.Helper()
	srv := server.NewServer()
	hs := httptest.NewServer(srv)
	tb.Cleanup(hs.Close)
	return NewClient(hs.URL, func(o *dynamodb.Options) { o.HTTPClient = hs.Client() }), srv
}

var tableSeq atomic.Int64

// TableName returns a table name unique to this process run and valid for real DynamoDB (3 to
// 255 characters of [a-zA-Z0-9_.-]), derived from tb.Name().
func TableName(tb testing.TB) string {
	var b strings.Builder
	for _, r := range tb.Name() {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := b.String()
	if len(name) > 180 {
		name = name[:180]
	}
	return fmt.Sprintf("t_%s_%d_%d", name, time.Now().UnixNano()%1e9, tableSeq.Add(1))
}

// NewStore creates a fresh table (unique name, EnsureTable) through client and returns a Store on it.
func NewStore(tb testing.TB, client API) *dynamo.Store {
	tb.Helper()
	table := TableName(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := dynamo.EnsureTable(ctx, client, table); err != nil {
		tb.Fatalf("EnsureTable: %v", err)
	}
	return dynamo.New(client, table)
}

// CountingClient wraps an API and counts the requests made through it, by operation name
// ("PutItem", "GetItem", ...). It counts calls, not the SDK's internal retries. Safe for
// concurrent use.
type CountingClient struct {
	Inner API

	mu     sync.Mutex
	counts map[string]int64
}

// NewCountingClient wraps inner.
func NewCountingClient(inner API) *CountingClient {
	return &CountingClient{Inner: inner}
}

func (c *CountingClient) add(op string) {
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[string]int64)
	}
	c.counts[op]++
	c.mu.Unlock()
}

// Count returns the number of op requests so far.
func (c *CountingClient) Count(op string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Total returns the number of requests of every operation so far.
func (c *CountingClient) Total() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for k, v := range c.counts {
		if k != TransactItems && k != BatchGetKeys {
			n += v
		}
	}
	return n
}

// Writes returns the number of item writes (PutItem, DeleteItem, UpdateItem, and each item of a
// TransactWriteItems) so far.
func (c *CountingClient) Writes() int64 {
	return c.Count("PutItem") + c.Count("DeleteItem") + c.Count("UpdateItem") + c.Count(TransactItems)
}

// TransactItems is the counter of the items written by TransactWriteItems requests (Count).
const TransactItems = "TransactWriteItems.items"

// WriteUnits is the write capacity units the writes so far cost on DynamoDB when each item is at
// most 1 KB (a transfer item is about 0.5 to 1 KB; a counter or marker item under 100 bytes): one
// per PutItem, DeleteItem and UpdateItem, two per item of a TransactWriteItems (a transactional
// write costs twice a standard one: Amazon DynamoDB Developer Guide, "DynamoDB read consumption
// and write consumption", transactional write requests). Requests whose condition failed are
// billed too and counted the same.
func (c *CountingClient) WriteUnits() int64 {
	return c.Count("PutItem") + c.Count("DeleteItem") + c.Count("UpdateItem") + 2*c.Count(TransactItems)
}

// TransactWriteItems counts the request and its items, and forwards (dynamo.TransactClient); it
// fails when Inner has no TransactWriteItems.
func (c *CountingClient) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.add("TransactWriteItems")
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[string]int64)
	}
	c.counts[TransactItems] += int64(len(in.TransactItems))
	c.mu.Unlock()
	tc, ok := c.Inner.(dynamo.TransactClient)
	if !ok {
		return nil, dynamo.ErrNoTransactions
	}
	return tc.TransactWriteItems(ctx, in, optFns...)
}

// BatchGetKeys is the counter of the keys BatchGetItem requests asked for (Count).
const BatchGetKeys = "BatchGetItem.keys"

// BatchGetItem counts the request and its keys, and forwards (dynamo.BatchGetClient); it fails
// when Inner has no BatchGetItem.
func (c *CountingClient) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.add("BatchGetItem")
	c.mu.Lock()
	if c.counts == nil {
		c.counts = make(map[string]int64)
	}
	for _, ka := range in.RequestItems {
		c.counts[BatchGetKeys] += int64(len(ka.Keys))
	}
	c.mu.Unlock()
	bg, ok := c.Inner.(dynamo.BatchGetClient)
	if !ok {
		return nil, errors.New("dynamotest: the inner client has no BatchGetItem")
	}
	return bg.BatchGetItem(ctx, in, optFns...)
}

// Counts returns a copy of the counters by operation.
func (c *CountingClient) Counts() map[string]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := make(map[string]int64, len(c.counts))
	for k, v := range c.counts {
		m[k] = v
	}
	return m
}

// Reset sets every counter to zero.
func (c *CountingClient) Reset() {
	c.mu.Lock()
	c.counts = nil
	c.mu.Unlock()
}

// PutItem counts and forwards.
func (c *CountingClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.add("PutItem")
	return c.Inner.PutItem(ctx, in, optFns...)
}

// GetItem counts and forwards.
func (c *CountingClient) GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.add("GetItem")
	return c.Inner.GetItem(ctx, in, optFns...)
}

// DeleteItem counts and forwards.
func (c *CountingClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c.add("DeleteItem")
	return c.Inner.DeleteItem(ctx, in, optFns...)
}

// Query counts and forwards.
func (c *CountingClient) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c.add("Query")
	return c.Inner.Query(ctx, in, optFns...)
}

// UpdateItem counts and forwards (dynamo.TicketClient); it fails when Inner has no UpdateItem.
func (c *CountingClient) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c.add("UpdateItem")
	tc, ok := c.Inner.(dynamo.TicketClient)
	if !ok {
		return nil, dynamo.ErrNoTickets
	}
	return tc.UpdateItem(ctx, in, optFns...)
}

// CreateTable counts and forwards.
func (c *CountingClient) CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	c.add("CreateTable")
	return c.Inner.CreateTable(ctx, in, optFns...)
}

// DescribeTable counts and forwards.
func (c *CountingClient) DescribeTable(ctx context.Context, in *dynamodb.DescribeTableInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error) {
	c.add("DescribeTable")
	return c.Inner.DescribeTable(ctx, in, optFns...)
}

// UpdateTimeToLive counts and forwards.
func (c *CountingClient) UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	c.add("UpdateTimeToLive")
	return c.Inner.UpdateTimeToLive(ctx, in, optFns...)
}

// ItemSize is the size DynamoDB bills an item at, in bytes (Amazon DynamoDB Developer Guide,
// "Item sizes and formats"): each attribute's name in UTF-8 plus its value (valueSize).
// Write units are ItemSize rounded up to 1 KB units (WriteUnits).
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// WriteUnits is the write request units of writing an item of size bytes once: one per KB,
// rounded up, at least one.
func WriteUnits(size int) int { return max(1, (size+1023)/1024) }

// valueSize is one value's size ("DynamoDB item sizes and formats"): a string its UTF-8 bytes, a
// number one byte per two significant digits plus one, a binary its raw bytes, a Boolean or null
// one byte, a list or map 3 bytes plus its elements (a map's with their names), each one byte more;
// a set the sum of its members.
func valueSize(v types.AttributeValue) int {
	switch a := v.(type) {
	case *types.AttributeValueMemberS:
		return len(a.Value)
	case *types.AttributeValueMemberN:
		return numberSize(a.Value)
	case *types.AttributeValueMemberB:
		return len(a.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range a.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range a.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range a.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range a.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range a.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

// numberSize is a number's size: its significant digits (leading and trailing zeros trimmed),
// one byte per two, plus one.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if mant, _, ok := strings.Cut(strings.ToLower(s), "e"); ok {
		s = mant
	}
	digits := strings.Trim(strings.ReplaceAll(s, ".", ""), "0")
	return (utf8.RuneCountInString(digits)+1)/2 + 1
}
