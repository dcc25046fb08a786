package dynamo_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Every outer hash of an envelope replaced by fee is on the item (outerHashes, L of S, oldest
// first; outerHash the newest, the one envelopeXdr holds), and an item written before replacement
// existed, with outerHash alone, still reads: its one outer hash is Outers().
func TestOuterHashesOnTheItem(t *testing.T) {
	ctx := context.Background()
	client, _ := dynamotest.Minidyn(t)
	f := newFixture(t, client)
	h := func(c string) string { return strings.Repeat(c, 64) }
	key := transfer.StoreKey("GOLDITEM", "old-1")

	// An in_flight item as an earlier release wrote it: one outerHash, no outerHashes.
	old := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: key}, "claimId": &types.AttributeValueMemberS{Value: "c1"},
		"status": &types.AttributeValueMemberS{Value: "in_flight"}, "version": &types.AttributeValueMemberN{Value: "2"},
		"leaseOwner": &types.AttributeValueMemberS{Value: "me"}, "leaseExpiresAt": &types.AttributeValueMemberN{Value: "1900000000000"},
		"envelopeXdr": &types.AttributeValueMemberS{Value: "AAAA"}, "innerHash": &types.AttributeValueMemberS{Value: h("a")},
		"outerHash": &types.AttributeValueMemberS{Value: h("b")}, "maxTime": &types.AttributeValueMemberN{Value: "1900000000"},
		"submittedLedger": &types.AttributeValueMemberN{Value: "7"}, "channel": &types.AttributeValueMemberS{Value: "GCHANNEL"},
	}
	if _, err := f.raw.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.table), Item: old}); err != nil {
		t.Fatal(err)
	}
	rec, err := f.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Envelope.Outers(); !slices.Equal(got, []string{h("b")}) {
		t.Fatalf("old item's outer hashes %v, want [outerHash]", got)
	}
	if got := rec.Envelope.Hashes(); !slices.Equal(got, []string{h("a"), h("b")}) {
		t.Fatalf("old item's hashes %v", got)
	}

	// Its envelope replaced by fee twice: the replacement's write, conditional on the item as read.
	next := rec
	env := *rec.Envelope
	env.XDR, env.OuterHash, env.OuterHashes = "BBBB", h("d"), []string{h("b"), h("c"), h("d")}
	next.Envelope = &env
	next.Version++
	if err := transfer.ReplaceItem(ctx, f.store, rec, next); err != nil {
		t.Fatal(err)
	}
	raw := rawItem(t, f, key)
	l, ok := raw["outerHashes"].(*types.AttributeValueMemberL)
	if !ok || len(l.Value) != 3 {
		t.Fatalf("outerHashes = %#v, want L of 3 S", raw["outerHashes"])
	}
	for i, want := range []string{h("b"), h("c"), h("d")} {
		if s, ok := l.Value[i].(*types.AttributeValueMemberS); !ok || s.Value != want {
			t.Errorf("outerHashes[%d] = %#v, want %s", i, l.Value[i], want)
		}
	}
	if s, ok := raw["outerHash"].(*types.AttributeValueMemberS); !ok || s.Value != h("d") {
		t.Errorf("outerHash = %#v, want the newest", raw["outerHash"])
	}
	got, err := f.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Envelope.Outers(), []string{h("b"), h("c"), h("d")}) || got.Envelope.OuterHash != h("d") {
		t.Fatalf("read back %v / %s", got.Envelope.Outers(), got.Envelope.OuterHash)
	}
	// The stream's image (the alert function) reads them the same way.
	decoded, err := dynamo.DecodeItem(raw)
	if err != nil || !slices.Equal(decoded.Envelope.Outers(), got.Envelope.Outers()) {
		t.Fatalf("DecodeItem: %v %v", decoded.Envelope, err)
	}

	// Settled, the XDR goes and every hash stays.
	settled := transfer.SettledRecord(got, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 9}, t0, transfer.MinKeyTTL)
	if err := transfer.ReplaceItem(ctx, f.store, got, settled); err != nil {
		t.Fatal(err)
	}
	final, err := f.store.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if final.Envelope.XDR != "" || !slices.Equal(final.Envelope.Hashes(), []string{h("a"), h("b"), h("c"), h("d")}) {
		t.Fatalf("settled envelope %+v", final.Envelope)
	}
}
