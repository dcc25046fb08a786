package dynamo

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
func mapOf(k string, v types.AttributeValue) types.AttributeValue {
	return &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{k: v}}
}

func TestUnmarshalMalformedNeverPanics(t *testing.T) {
	base := func() map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s("transfer:k"), "status": s("in_flight"), "version": n("1")}
	}
	type mutation = func(m map[string]types.AttributeValue)
	cases := map[string]mutation{
		"no pk":                func(m map[string]types.AttributeValue) { delete(m, "pk") },
		"no status":            func(m map[string]types.AttributeValue) { delete(m, "status") },
		"version not a number": func(m map[string]types.AttributeValue) { m["version"] = n("x") },
		"result as L":          func(m map[string]types.AttributeValue) { m["result"] = &types.AttributeValueMemberL{} },
		"stroops as S":         func(m map[string]types.AttributeValue) { m["request"] = mapOf("stroops", s("1")) },
		"ledger overflows":     func(m map[string]types.AttributeValue) { m["submittedLedger"] = n("99999999999") },
		"leaseExpiresAt as S":  func(m map[string]types.AttributeValue) { m["leaseExpiresAt"] = s("soon") },
		"expiresAt fractional": func(m map[string]types.AttributeValue) { m["expiresAt"] = n("1.5") },
		"maxTime as a string N": func(m map[string]types.AttributeValue) {
			m["maxTime"] = &types.AttributeValueMemberSS{Value: []string{"1"}}
		},
	}
	// Tolerated by attributevalue (a nil value reads as absent, N decodes into a string field; a
	// real table cannot hold a non-S pk): they must not panic, an error is optional.
	lenient := map[string]mutation{
		"resultCodes of N": func(m map[string]types.AttributeValue) {
			m["result"] = mapOf("resultCodes", &types.AttributeValueMemberL{Value: []types.AttributeValue{n("1")}})
		},
		"nil attribute value": func(m map[string]types.AttributeValue) { m["channel"] = nil },
		"pk as N":             func(m map[string]types.AttributeValue) { m["pk"] = n("1") },
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			m := base()
			mutate(m)
			_, err := unmarshalRecord(m)
			if err == nil {
				t.Fatal("no error")
			}
			if _, hasPK := m["pk"].(*types.AttributeValueMemberS); hasPK && !strings.Contains(err.Error(), "transfer:k") {
				t.Errorf("error %q does not name the key", err)
			}
		})
	}
	for name, mutate := range lenient {
		m := base()
		mutate(m)
		if _, err := unmarshalRecord(m); err != nil {
			t.Logf("%s: %v", name, err)
		}
	}
}

// lostForever answers every PutItem with a condition failure without the old item and every
// GetItem with nothing: the claim must give up after ClaimAttempts writes.
type lostForever struct{ puts, gets int }

func (c *lostForever) PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.puts++
	return nil, &types.ConditionalCheckFailedException{}
}
func (c *lostForever) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets++
	return &dynamodb.GetItemOutput{}, nil
}
func (c *lostForever) DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return nil, errors.New("unused")
}
func (c *lostForever) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return nil, errors.New("unused")
}

func TestClaimRetriesAreBounded(t *testing.T) {
	c := &lostForever{}
	rec := transfer.Record{StoreKey: "transfer:k", Status: transfer.StatusInFlight, Version: 1}
	_, won, err := New(c, "t").Claim(context.Background(), rec, time.Unix(1_800_000_000, 0))
	if err == nil || won {
		t.Fatalf("won=%v err=%v, want an error", won, err)
	}
	if c.puts != ClaimAttempts || c.gets != ClaimAttempts {
		t.Errorf("%d puts, %d gets, want %d each", c.puts, c.gets, ClaimAttempts)
	}
	if !strings.Contains(err.Error(), "transfer:k") {
		t.Errorf("error %q does not name the key", err)
	}
}

func TestTTLUnsupported(t *testing.T) {
	if !ttlUnsupported(&smithy.GenericAPIError{Code: "UnknownOperationException"}) {
		t.Error("dynalite's answer not tolerated")
	}
	if ttlUnsupported(&smithy.GenericAPIError{Code: "ValidationException"}) {
		t.Error("a validation error tolerated")
	}
	if ttlUnsupported(errors.New("connection refused")) {
		t.Error("a transport error tolerated")
	}
}

// A batched key's settled item copies its operation's index into "result" (operationIndex), the
// one attribute of it the wallet index projects: an image without "batch" reads the copy, a whole
// item reads back as written; a key paid alone writes none.
func TestTheResultCarriesABatchedKeysOperationIndex(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	hash := strings.Repeat("ab", 32)
	rec := transfer.Record{StoreKey: "transfer:0123456789abcdef:order-1", ClaimID: "c1", Status: transfer.StatusReplayable, Async: true,
		Request:  transfer.Request{OperationType: transfer.Withdraw, WalletAddress: "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H", Amount: "1", Asset: "USDC", Stroops: 10_000_000},
		Envelope: &transfer.Envelope{InnerHash: hash, MaxTime: at.Unix()}, Batch: &transfer.BatchRef{Index: 4, Size: 6},
		Result: &transfer.Result{TransactionHash: hash, Ledger: 9}, Version: 3, CreatedAt: at, UpdatedAt: at}
	av, err := marshalRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	res, _ := av["result"].(*types.AttributeValueMemberM)
	if res == nil || res.Value["operationIndex"] == nil || res.Value["operationIndex"].(*types.AttributeValueMemberN).Value != "4" {
		t.Fatalf("result %#v, want operationIndex 4", av["result"])
	}
	whole, err := unmarshalRecord(av)
	if err != nil || whole.Result.OperationIndex != nil || whole.Batch == nil || whole.Batch.Index != 4 {
		t.Fatalf("whole item: %+v, %v; want the batch and no copy", whole, err)
	}
	delete(av, "batch")
	projected, err := unmarshalRecord(av)
	if err != nil || projected.Result.OperationIndex == nil || *projected.Result.OperationIndex != 4 {
		t.Fatalf("image without batch: %+v, %v; want operationIndex 4", projected.Result, err)
	}
	rec.Batch = nil
	alone, err := marshalRecord(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := alone["result"].(*types.AttributeValueMemberM).Value["operationIndex"]; ok {
		t.Fatalf("a key paid alone wrote operationIndex: %#v", alone["result"])
	}
}
