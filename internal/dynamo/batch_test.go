package dynamo_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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
