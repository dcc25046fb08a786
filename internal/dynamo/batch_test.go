package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch's envelope is one item in no index, and its keys are attached by one TransactWriteItems
// whose items carry the operation, index 0 included, and no XDR.
func TestBatchItemsAsStored(t *testing.T) {
	ctx := context.Background()
	f := minidynFixture(t)
	inner := strings.Repeat("9a", 32)
	var taken []transfer.Record
	for i, key := range []string{"stored-batch-a", "stored-batch-b"} {
		rec := transfer.Record{StoreKey: transfer.StoreKey("GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3", key), ClaimID: "claim-" + key, Status: transfer.StatusInFlight,
			ClientKey: key, LeaseOwner: "owner-batch", LeaseExpiresAt: time.Unix(1_800_000_030, 0), Version: 1,
			CreatedAt: time.Unix(1_800_000_000, 0), UpdatedAt: time.Unix(1_800_000_000, 0), Async: true}
		if _, won, err := f.store.Claim(ctx, rec, time.Unix(1_800_000_000, 0)); err != nil || !won {
			t.Fatalf("claim %d: won=%v err=%v", i, won, err)
		}
		taken = append(taken, rec)
	}
	b := transfer.BatchEnvelope{Envelope: transfer.Envelope{XDR: "AAAABQ==", InnerHash: inner, OuterHash: strings.Repeat("8b", 32),
		MaxTime: 1_800_000_040, SubmittedLedger: 77, Channel: "GCHANNEL", FeeStroops: 300}, Version: 1,
		CreatedAt: time.Unix(1_800_000_001, 0), ExpiresAt: 1_800_300_000}
	for _, rec := range taken {
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	f.counter.Reset()
	if err := f.store.PutBatch(ctx, b); err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	var attached []transfer.Record
	for i, rec := range taken {
		env := b.Envelope
		env.XDR = ""
		next := rec
		next.Envelope, next.Batch, next.Version = &env, &transfer.BatchRef{Index: i, Size: 2}, 2
		attached = append(attached, next)
	}
	if err := transfer.ReplaceAllItems(ctx, f.store, taken, attached); err != nil {
		t.Fatalf("attach: %v", err)
	}
	if got := f.counter.Counts(); got["PutItem"] != 1 || got["TransactWriteItems"] != 1 || got[dynamotest.TransactItems] != 2 {
		t.Fatalf("requests: %v, want one PutItem (the batch) and one TransactWriteItems of 2 items", got)
	}
	batch := rawItem(t, f, transfer.BatchKey(inner))
	for _, absent := range []string{"status", "gsi1pk", "gsi2pk", "claimId"} {
		if _, ok := batch[absent]; ok {
			t.Errorf("the batch item holds %q: it must be in no index and match no condition", absent)
		}
	}
	if ops, ok := batch["ops"].(*types.AttributeValueMemberL); !ok || len(ops.Value) != 2 {
		t.Fatalf("the batch item's ops: %#v", batch["ops"])
	}
	first := rawItem(t, f, taken[0].StoreKey)
	if _, ok := first["envelopeXdr"]; ok {
		t.Error("a batched key's item holds the XDR; the batch item holds it once")
	}
	ref, ok := first["batch"].(*types.AttributeValueMemberM)
	if !ok {
		t.Fatalf("the first key's item has no batch map: %#v", first["batch"])
	}
	if idx, ok := ref.Value["index"].(*types.AttributeValueMemberN); !ok || idx.Value != "0" {
		t.Fatalf("the first key's operation index: %#v, want N 0", ref.Value["index"])
	}
	got, err := f.store.GetBatch(ctx, inner)
	if err != nil || got.Index(taken[1].StoreKey) != 1 || got.Envelope.XDR != b.Envelope.XDR {
		t.Fatalf("GetBatch: %+v, %v", got, err)
	}
}

// tokens records the ClientRequestToken of every TransactWriteItems and forwards it.
type tokens struct {
	dynamotest.API
	mu   sync.Mutex
	seen []string
}

func (c *tokens) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opt ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c.mu.Lock()
	c.seen = append(c.seen, aws.ToString(in.ClientRequestToken))
	c.mu.Unlock()
	return c.API.(dynamo.TransactClient).TransactWriteItems(ctx, in, opt...)
}

// batchFixture claims two async keys in_flight on a fresh minidyn table and returns the raw
// client, the table, the items as taken and as attached to a batch.
func batchFixture(t *testing.T, prefix string) (dynamotest.API, string, []transfer.Record, []transfer.Record) {
	t.Helper()
	raw, _ := dynamotest.Minidyn(t)
	table := dynamotest.NewStore(t, raw).Table()
	s := dynamo.New(raw, table)
	var taken, attached []transfer.Record
	for i, key := range []string{prefix + "-a", prefix + "-b"} {
		rec := transfer.Record{StoreKey: transfer.StoreKey("GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3", key), ClaimID: "claim-" + key,
			Status: transfer.StatusInFlight, ClientKey: key, LeaseOwner: "owner-batch", LeaseExpiresAt: time.Unix(1_800_000_030, 0),
			Version: 1, CreatedAt: time.Unix(1_800_000_000, 0), UpdatedAt: time.Unix(1_800_000_000, 0), Async: true}
		if _, won, err := s.Claim(context.Background(), rec, time.Unix(1_800_000_000, 0)); err != nil || !won {
			t.Fatalf("claim %d: won=%v err=%v", i, won, err)
		}
		taken = append(taken, rec)
		attached = append(attached, transfer.BatchAttached(rec, transfer.Envelope{XDR: "AAAA", InnerHash: strings.Repeat("7c", 32), MaxTime: 1_800_000_040},
			transfer.BatchRef{Index: i, Size: 2}, time.Unix(1_800_000_001, 0)))
	}
	return raw, table, taken, attached
}

// A transaction cancelled by a conflict alone (nothing written) is written again under the next
// attempt's token; each attempt's token is the same for the same writes, so the SDK's retry of a
// request whose answer was lost applies nothing twice.
func TestReplaceAllWritesAgainAfterAConflictUnderItsToken(t *testing.T) {
	raw, table, taken, attached := batchFixture(t, "conflict")
	rec := &tokens{API: &cancelOnce{API: raw, reasons: []types.CancellationReason{
		{Code: aws.String("None")}, {Code: aws.String("TransactionConflict")}}}}
	s := dynamo.New(rec, table)
	if err := transfer.ReplaceAllItems(context.Background(), s, taken, attached); err != nil {
		t.Fatalf("ReplaceAllItems after a conflict: %v", err)
	}
	if len(rec.seen) != 2 || rec.seen[0] == rec.seen[1] || !strings.HasSuffix(rec.seen[0], "-0") || !strings.HasSuffix(rec.seen[1], "-1") {
		t.Fatalf("tokens %v: want two attempts, -0 then -1", rec.seen)
	}
	for _, a := range attached {
		if got, err := s.Get(context.Background(), a.StoreKey); err != nil || got.Version != 2 || got.Batch == nil {
			t.Fatalf("%s after the retried transaction: %+v, %v", a.StoreKey, got, err)
		}
	}
	// The same writes give the same token: sent again (they now fail their conditions), their first
	// attempt carries the token the first transaction's did.
	again := &tokens{API: raw}
	_ = dynamo.New(again, table).ReplaceAll(context.Background(), []transfer.ItemWrite{
		{Next: attached[0], Cond: transfer.Expect(taken[0])}, {Next: attached[1], Cond: transfer.Expect(taken[1])}})
	if len(again.seen) != 1 || again.seen[0] != rec.seen[0] {
		t.Fatalf("the same writes sent tokens %v and %v", rec.seen, again.seen)
	}
}

// A cancellation whose reasons say a condition failed names those keys, in order; a reason the
// store does not expect is an error that is not a failed condition.
func TestReplaceAllReadsTheCancellationReasons(t *testing.T) {
	raw, table, taken, attached := batchFixture(t, "reasons")
	s := dynamo.New(&cancelOnce{API: raw, reasons: []types.CancellationReason{
		{Code: aws.String("ConditionalCheckFailed")}, {Code: aws.String("None")}}}, table)
	err := s.ReplaceAll(context.Background(), []transfer.ItemWrite{
		{Next: attached[0], Cond: transfer.Expect(taken[0])}, {Next: attached[1], Cond: transfer.Expect(taken[1])}})
	bce, ok := errors.AsType[*transfer.BatchConditionError](err)
	if !ok || len(bce.Failed) != 1 || bce.Failed[0] != taken[0].StoreKey || !errors.Is(err, transfer.ErrConditionFailed) {
		t.Fatalf("ReplaceAll = %v, want a BatchConditionError naming only %s", err, taken[0].StoreKey)
	}
	s = dynamo.New(&cancelOnce{API: raw, reasons: []types.CancellationReason{
		{Code: aws.String("ValidationError")}, {Code: aws.String("None")}}}, table)
	err = s.ReplaceAll(context.Background(), []transfer.ItemWrite{
		{Next: attached[0], Cond: transfer.Expect(taken[0])}, {Next: attached[1], Cond: transfer.Expect(taken[1])}})
	if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
		t.Fatalf("ReplaceAll cancelled for a validation error = %v, want an error that is no failed condition", err)
	}
	if got, _ := dynamo.New(raw, table).Get(context.Background(), taken[0].StoreKey); got.Version != 1 {
		t.Fatalf("a cancelled transaction wrote %+v", got)
	}
}

// pageAPI is what PageBatch asks of the client.
type pageAPI interface {
	dynamotest.API
	dynamo.TicketClient
}

// pageSpy records the requests PageBatch makes.
type pageSpy struct {
	pageAPI
	mu      sync.Mutex
	updates []*dynamodb.UpdateItemInput
	gets    []*dynamodb.GetItemInput
}

func (s *pageSpy) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	s.mu.Lock()
	s.updates = append(s.updates, in)
	s.mu.Unlock()
	return s.pageAPI.UpdateItem(ctx, in, opt...)
}

func (s *pageSpy) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opt ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	s.mu.Lock()
	s.gets = append(s.gets, in)
	s.mu.Unlock()
	return s.pageAPI.GetItem(ctx, in, opt...)
}

// TestPageBatchTouchesOnlyThePageAttribute: PageBatch's requests name no attribute but pk and
// pagedBy, ask for no ALL_OLD or ALL_NEW image and read a projection of those two alone, so the
// alert function's BatchPages statement (template.yaml: dynamodb:Attributes [pk, pagedBy],
// dynamodb:ReturnValues NONE or UPDATED_*, dynamodb:Select SPECIFIC_ATTRIBUTES) allows every
// one of them: the claim, the same record again, another record's refusal, and no batch item.
func TestPageBatchTouchesOnlyThePageAttribute(t *testing.T) {
	ctx := context.Background()
	raw, _ := dynamotest.Minidyn(t)
	spy := &pageSpy{pageAPI: raw}
	s := dynamotest.NewStore(t, spy)
	inner := strings.Repeat("5c", 32)
	b := transfer.BatchEnvelope{Envelope: transfer.Envelope{InnerHash: inner, XDR: "AAAA"}, Version: 1, CreatedAt: time.Unix(1_800_000_000, 0),
		Ops: []transfer.BatchOp{{StoreKey: "wallet#page-a", ClaimID: "claim-a"}}}
	if err := s.PutBatch(ctx, b); err != nil {
		t.Fatalf("PutBatch: %v", err)
	}
	spy.updates, spy.gets = nil, nil
	for _, c := range []struct {
		hash, by string
		want     bool
		missing  bool
	}{
		{inner, "event-1", true, false},
		{inner, "event-1", true, false},
		{inner, "event-2", false, false},
		{strings.Repeat("5d", 32), "event-1", false, true},
	} {
		got, err := s.PageBatch(ctx, c.hash, c.by)
		if got != c.want || errors.Is(err, transfer.ErrNotFound) != c.missing || (err != nil && !c.missing) {
			t.Fatalf("PageBatch(%s, %s) = %v, %v; want %v, not found %v", c.hash[:4], c.by, got, err, c.want, c.missing)
		}
	}
	allowed := map[string]bool{dynamo.AttrPK: true, dynamo.BatchPagedAttr: true}
	names := func(what string, m map[string]string) {
		for _, n := range m {
			if !allowed[n] {
				t.Errorf("%s names attribute %q, outside BatchPages' dynamodb:Attributes", what, n)
			}
		}
	}
	if len(spy.updates) != 4 || len(spy.gets) != 2 {
		t.Fatalf("%d UpdateItem and %d GetItem requests, want 4 and 2 (a GetItem after each failed condition)", len(spy.updates), len(spy.gets))
	}
	for _, in := range spy.updates {
		names("UpdateItem", in.ExpressionAttributeNames)
		if in.ReturnValues != "" && in.ReturnValues != types.ReturnValueNone {
			t.Errorf("UpdateItem asks ReturnValues %s", in.ReturnValues)
		}
		if in.ReturnValuesOnConditionCheckFailure != "" && in.ReturnValuesOnConditionCheckFailure != types.ReturnValuesOnConditionCheckFailureNone {
			t.Errorf("UpdateItem asks ReturnValuesOnConditionCheckFailure %s: an image of every attribute", in.ReturnValuesOnConditionCheckFailure)
		}
	}
	for _, in := range spy.gets {
		names("GetItem", in.ExpressionAttributeNames)
		if aws.ToString(in.ProjectionExpression) == "" || !aws.ToBool(in.ConsistentRead) {
			t.Errorf("GetItem projection %q, consistent %v: want pk and pagedBy alone, consistent", aws.ToString(in.ProjectionExpression), aws.ToBool(in.ConsistentRead))
		}
	}
}
