package dynamo_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// unitsClient estimates the write request units of every applied PutItem and DeleteItem: the
// table's (the larger of the old and new item, dynamotest.WriteUnits) and each index's (the
// projected new image for an index the item is in, one unit for one it leaves: the Developer
// Guide's "Provisioned throughput considerations for global secondary indexes").
type unitsClient struct {
	dynamotest.API
	mu    sync.Mutex
	items map[string]map[string]types.AttributeValue
	units int
	sizes []int
}

var indexKeys = map[string]string{dynamo.InDoubtIndex: dynamo.AttrGSI1PK, dynamo.WalletIndex: dynamo.AttrGSI2PK, dynamo.RecordIndex: dynamo.AttrGSI3PK}

func projected(index string, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if index != dynamo.WalletIndex {
		return item
	}
	keep := append([]string{dynamo.AttrPK, dynamo.AttrGSI2PK, dynamo.AttrGSI2SK}, dynamo.WalletIndexAttributes...)
	out := map[string]types.AttributeValue{}
	for k, v := range item {
		if slices.Contains(keep, k) {
			out[k] = v
		}
	}
	return out
}

func (c *unitsClient) charge(old, next map[string]types.AttributeValue) {
	size := 0
	if old != nil {
		size = dynamotest.ItemSize(old)
	}
	if next != nil {
		size = max(size, dynamotest.ItemSize(next))
	}
	c.units += dynamotest.WriteUnits(size)
	for index, key := range indexKeys {
		_, was := old[key]
		_, is := next[key]
		switch {
		case is:
			c.units += dynamotest.WriteUnits(dynamotest.ItemSize(projected(index, next)))
		case was:
			c.units++
		}
	}
}

func (c *unitsClient) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	out, err := c.API.PutItem(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		pk := in.Item[dynamo.AttrPK].(*types.AttributeValueMemberS).Value
		if strings.HasPrefix(pk, dynamo.ArchivePrefix) {
			c.sizes = append(c.sizes, dynamotest.ItemSize(in.Item), dynamotest.ItemSize(projected(dynamo.WalletIndex, in.Item)))
		}
		c.charge(c.items[pk], in.Item)
		c.items[pk] = in.Item
		c.mu.Unlock()
	}
	return out, err
}

func (c *unitsClient) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	out, err := c.API.DeleteItem(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		pk := in.Key[dynamo.AttrPK].(*types.AttributeValueMemberS).Value
		c.charge(c.items[pk], nil)
		delete(c.items, pk)
		c.mu.Unlock()
	}
	return out, err
}

// TestARecordCostsOneWritePerSettlement measures what a settled transfer's lasting record adds to
// its writes: one PutItem, and the write units of the record in the table, gsi2 and gsi3. A
// typical transfer (a 20-character key, a fee-bumped envelope) is written as the orchestrator
// writes it: claim, attach, settle. README.md, "A transfer's lasting record", quotes the figures
// this logs (go test -run TestARecordCostsOneWritePerSettlement -v ./internal/dynamo/).
func TestARecordCostsOneWritePerSettlement(t *testing.T) {
	raw, _ := dynamotest.Minidyn(t)
	units := &unitsClient{API: raw, items: map[string]map[string]types.AttributeValue{}}
	counter := dynamotest.NewCountingClient(units)
	s := dynamotest.NewStore(t, counter)
	ctx := context.Background()
	counter.Reset()
	units.units = 0

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rec := walletClaim(walletA, "payout-2026-03-01-0001", at)
	rec.ClaimID = transfer.NewClaimID()
	mustClaim(t, s, rec, at)
	attached := attach(rec)
	attached.Envelope.OuterHash = strings.Repeat("ef", 32)
	attached.Envelope.Channel = "GCHANNELAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	attached.Envelope.XDR = strings.Repeat("A", 600) // a fee bump of one payment, base64
	if err := s.Replace(ctx, attached, transfer.Expect(rec)); err != nil {
		t.Fatal(err)
	}
	done := transfer.SettledRecord(attached, transfer.Lookup{Status: transfer.LookupSuccess, Hash: attached.Envelope.InnerHash, Ledger: 51234567,
		FeeChargedStroops: 200}, at.Add(6*time.Second), 24*time.Hour)
	if err := s.Replace(ctx, done, transfer.Expect(attached)); err != nil {
		t.Fatal(err)
	}
	itemRequests, itemUnits := counter.Writes(), units.units

	a, ok := transfer.ArchiveOf(&attached, &done, done.UpdatedAt, 7*365*24*time.Hour)
	if !ok {
		t.Fatal("no archive for a settlement")
	}
	if err := s.PutArchive(ctx, a); err != nil {
		t.Fatal(err)
	}
	recordRequests, recordUnits := counter.Writes()-itemRequests, units.units-itemUnits
	// A redelivery (the stream's at-least-once) is one more request that writes nothing.
	if err := s.PutArchive(ctx, a); err != nil {
		t.Fatal(err)
	}
	t.Logf("transfer item: %d writes, %d write units; its record: %d write, %d write units (table, gsi1, gsi2, gsi3; %d bytes, %d in gsi2)",
		itemRequests, itemUnits, recordRequests, recordUnits, units.sizes[0], units.sizes[1])
	if recordRequests != 1 || recordUnits != 4 {
		t.Fatalf("the record took %d requests and %d write units, want 1 and 4 (1 KB or less in the table and each of its three indexes)", recordRequests, recordUnits)
	}
	if counter.Count("Query") != 0 || counter.Count("GetItem") != 0 {
		t.Fatalf("archiving read: %v", counter.Counts())
	}

	// With the longest text memo (28 bytes) too, the record stays within 1 KB.
	memo := a
	memo.Record.ClaimID = transfer.NewClaimID()
	memo.Record.Request.Memo = transfer.Memo{Type: "text", Value: strings.Repeat("m", 28)}
	before := units.units
	units.sizes = nil
	if err := s.PutArchive(ctx, memo); err != nil {
		t.Fatal(err)
	}
	t.Logf("with a 28-byte text memo: %d write units (%d bytes)", units.units-before, units.sizes[0])
	if got := units.units - before; got != 4 {
		t.Fatalf("a record with a memo took %d write units, want 4", got)
	}
}
