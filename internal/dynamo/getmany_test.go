package dynamo_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/truora/minidyn/server"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// unprocessedFor leaves the keys whose pk satisfies which unprocessed by the first n BatchGetItem
// requests of table that ask for them (minidyn's EmulateUnprocessedItems), then reads them.
func unprocessedFor(srv *server.Server, table string, n int, which func(pk string) bool) {
	var mu sync.Mutex
	left := map[string]int{}
	srv.EmulateUnprocessedItems(table, func(_ int, raw map[string]*server.AttributeValue) bool {
		pk := ""
		if v := raw[dynamo.AttrPK]; v != nil && v.S != nil {
			pk = *v.S
		}
		if !which(pk) {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		left[pk]++
		return left[pk] <= n
	})
}

// manyFixture is a fixture on minidyn, its server, its clock, and count queued items written.
func manyFixture(t *testing.T, count int) (fixture, *server.Server, *vclock.Clock, []string) {
	t.Helper()
	client, srv := dynamotest.Minidyn(t)
	f := newFixture(t, client)
	clock := vclock.New(t0)
	f.store = f.store.WithClock(clock)
	var keys []string
	for i := range count {
		rec := claimRecord(key(fmt.Sprintf("many-%03d", i)), "owner", "fp")
		mustClaim(t, f.store, rec, t0)
		keys = append(keys, rec.StoreKey)
	}
	f.counter.Reset()
	return f, srv, clock, keys
}

// The keys a BatchGetItem leaves unprocessed are read again after 25 ms, then 50 ms, on the
// Store's clock, and come back with the rest: three requests, one round trip each.
func TestGetManyReadsUnprocessedKeysAgainAfterABackoff(t *testing.T) {
	f, srv, clock, keys := manyFixture(t, 5)
	unprocessedFor(srv, f.table, 2, func(pk string) bool { return strings.HasSuffix(pk, "-001") || strings.HasSuffix(pk, "-003") })
	got, err := f.store.GetMany(context.Background(), keys)
	if err != nil {
		t.Fatalf("GetMany: %v", err)
	}
	if len(got) != len(keys) {
		t.Fatalf("GetMany returned %d items, want %d", len(got), len(keys))
	}
	for _, k := range keys {
		want, err := f.store.Get(context.Background(), k)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "read by GetMany", got[k], want)
	}
	if n := f.counter.Count("BatchGetItem"); n != 3 {
		t.Errorf("%d BatchGetItem requests, want 3 (the first, then two for the unprocessed keys)", n)
	}
	if n := f.counter.Count(dynamotest.BatchGetKeys); n != 5+2+2 {
		t.Errorf("%d keys asked in all, want 9 (5, then the 2 unprocessed twice)", n)
	}
	if waited := clock.Now().Sub(t0); waited != 75*time.Millisecond {
		t.Errorf("GetMany paused %v on its clock, want 25 ms + 50 ms", waited)
	}
}

// Keys still unprocessed after five requests are an error, the map holding every item read; the
// pauses between them sum to 375 ms of the Store's clock.
func TestGetManyGivesUpOnKeysLeftUnprocessed(t *testing.T) {
	f, srv, clock, keys := manyFixture(t, 4)
	stuck := keys[2]
	unprocessedFor(srv, f.table, 1000, func(pk string) bool { return pk == stuck })
	got, err := f.store.GetMany(context.Background(), keys)
	if err == nil || !strings.Contains(err.Error(), "1 of 4 keys still unprocessed after 5 requests") {
		t.Fatalf("GetMany: %v; want 1 of 4 keys still unprocessed after 5 requests", err)
	}
	if _, ok := got[stuck]; ok || len(got) != 3 {
		t.Fatalf("GetMany returned %d items (the stuck one: %v), want the 3 others", len(got), ok)
	}
	if n := f.counter.Count("BatchGetItem"); n != 5 {
		t.Errorf("%d BatchGetItem requests, want 5", n)
	}
	if waited := clock.Now().Sub(t0); waited != 375*time.Millisecond {
		t.Errorf("GetMany paused %v on its clock, want 375 ms", waited)
	}
}

// 250 keys are read 100 at a time, each key asked once however often it is given, and every
// request consistent.
func TestGetManyAsksAtMost100KeysARequest(t *testing.T) {
	f, _, _, keys := manyFixture(t, 250)
	var sizes []int
	consistent := true
	spy := &batchGetSpy{inner: f.counter, saw: func(in *dynamodb.BatchGetItemInput) {
		for _, ka := range in.RequestItems {
			sizes = append(sizes, len(ka.Keys))
			consistent = consistent && aws.ToBool(ka.ConsistentRead)
		}
	}}
	s := dynamo.New(spy, f.table)
	got, err := s.GetMany(context.Background(), append(keys, keys[:50]...))
	if err != nil || len(got) != 250 {
		t.Fatalf("GetMany: %d items, %v; want 250", len(got), err)
	}
	if fmt.Sprint(sizes) != "[100 100 50]" || !consistent {
		t.Errorf("requests of %v keys (consistent: %v), want [100 100 50], consistent", sizes, consistent)
	}
}

// A client without BatchGetItem reads each key with a consistent GetItem, the same items.
func TestGetManyWithoutBatchGetItemReadsEachKey(t *testing.T) {
	f, _, _, keys := manyFixture(t, 3)
	s := dynamo.New(withoutBatchGet{f.counter}, f.table)
	got, err := s.GetMany(context.Background(), append(keys, key("many-none")))
	if err != nil || len(got) != 3 {
		t.Fatalf("GetMany: %d items, %v; want 3", len(got), err)
	}
	if n, m := f.counter.Count("GetItem"), f.counter.Count("BatchGetItem"); n != 4 || m != 0 {
		t.Errorf("%d GetItem and %d BatchGetItem requests, want 4 and 0", n, m)
	}
}

// batchGetSpy is a client that shows each BatchGetItem request to saw before forwarding it.
type batchGetSpy struct {
	inner *dynamotest.CountingClient
	saw   func(*dynamodb.BatchGetItemInput)
}

func (c *batchGetSpy) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return c.inner.PutItem(ctx, in, o...)
}

func (c *batchGetSpy) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return c.inner.GetItem(ctx, in, o...)
}

func (c *batchGetSpy) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return c.inner.DeleteItem(ctx, in, o...)
}

func (c *batchGetSpy) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return c.inner.Query(ctx, in, o...)
}

func (c *batchGetSpy) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	c.saw(in)
	return c.inner.BatchGetItem(ctx, in, o...)
}

// withoutBatchGet hides BatchGetItem (a client that has only the Store's Client).
type withoutBatchGet struct{ dynamo.Client }

var _ transfer.ManyReader = (*dynamo.Store)(nil)
