package devstack

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

func TestStreamEmitsTheRecordsDynamoDBWould(t *testing.T) {
	client, _ := dynamotest.Minidyn(t)
	if err := dynamo.EnsureTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	got := make(chan events.DynamoDBEventRecord, 10)
	c := newStreamClient(client, table, slog.New(slog.DiscardHandler))
	c.start(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if lc, ok := lambdacontext.FromContext(ctx); !ok || lc.AwsRequestID == "" {
			t.Error("a batch without a Lambda request ID")
		}
		for _, r := range ev.Records {
			got <- r
		}
		return events.DynamoDBEventResponse{}, nil
	})
	defer c.close()
	ctx := context.Background()
	item := func(v string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "transfer:x:k"}, "v": &types.AttributeValueMemberS{Value: v}}
	}
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "transfer:x:k"}}
	mustOK := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("1")})
	mustOK(err)
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("2")})
	mustOK(err)
	// A failed conditional write emits nothing.
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: item("3"), ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if err == nil {
		t.Fatal("the conditional put succeeded")
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table), Key: key})
	mustOK(err)

	want := []struct{ name, old, new string }{{"INSERT", "", "1"}, {"MODIFY", "1", "2"}, {"REMOVE", "2", ""}}
	var prev string
	for i, w := range want {
		var r events.DynamoDBEventRecord
		select {
		case r = <-got:
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d did not arrive", i)
		}
		val := func(img map[string]events.DynamoDBAttributeValue) string {
			if v, ok := img["v"]; ok {
				return v.String()
			}
			return ""
		}
		if r.EventName != w.name || val(r.Change.OldImage) != w.old || val(r.Change.NewImage) != w.new ||
			r.Change.Keys["pk"].String() != "transfer:x:k" || r.Change.StreamViewType != "NEW_AND_OLD_IMAGES" || r.Change.SequenceNumber <= prev {
			t.Fatalf("record %d = %s old %q new %q seq %s, want %+v", i, r.EventName, val(r.Change.OldImage), val(r.Change.NewImage), r.Change.SequenceNumber, w)
		}
		prev = r.Change.SequenceNumber
	}
	select {
	case r := <-got:
		t.Fatalf("an extra record: %+v", r)
	default:
	}
}

// TestStreamEmitsATransactionsItems: a TransactWriteItems that applied emits one record per
// item, in the request's order; one that was cancelled emits nothing.
func TestStreamEmitsATransactionsItems(t *testing.T) {
	client, _ := dynamotest.Minidyn(t)
	if err := dynamo.EnsureTable(context.Background(), client, table); err != nil {
		t.Fatal(err)
	}
	got := make(chan events.DynamoDBEventRecord, 10)
	c := newStreamClient(client, table, slog.New(slog.DiscardHandler))
	c.start(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			got <- r
		}
		return events.DynamoDBEventResponse{}, nil
	})
	defer c.close()
	put := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), ConditionExpression: aws.String("attribute_not_exists(pk)"),
			Item: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}}}
	}
	add := types.TransactWriteItem{Update: &types.Update{TableName: aws.String(table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "limit:asset:USDC:2026-12-02"}},
		UpdateExpression:          aws.String("ADD #t :one"),
		ExpressionAttributeNames:  map[string]string{"#t": "total"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}}}}
	ctx := context.Background()
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("transfer:x:a"), add}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("transfer:x:a"), add}}); err == nil {
		t.Fatal("the second claim of one key applied")
	}
	if _, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{put("transfer:x:b"), add}}); err != nil {
		t.Fatal(err)
	}
	for i, want := range []struct{ name, pk string }{{"INSERT", "transfer:x:a"}, {"INSERT", "limit:asset:USDC:2026-12-02"}, {"INSERT", "transfer:x:b"}, {"MODIFY", "limit:asset:USDC:2026-12-02"}} {
		select {
		case r := <-got:
			if r.EventName != want.name || r.Change.Keys["pk"].String() != want.pk {
				t.Fatalf("record %d = %s %s, want %+v", i, r.EventName, r.Change.Keys["pk"].String(), want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("record %d did not arrive", i)
		}
	}
}
