package devstack

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

// TestStackLeasesOnTheChannelCalendar: `make run`'s stack schedules its channel leases on the
// channel calendar, as the deployed functions do: its stream client answers UpdateItem, so a
// transfer books a slot (the calendar item holds the next ticket) rather than leasing unscheduled.
func TestStackLeasesOnTheChannelCalendar(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	wallet := s.Info.Wallets[0].Account
	r := post(t, s, "calendar-0001", `{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","asset":"USDC"}`)
	if r.status != 200 {
		t.Fatalf("status %d %v", r.status, r.body)
	}
	db := dynamotest.NewClient(s.Info.DynamoDBEndpoint)
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.Info.Table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey}}})
	if err != nil {
		t.Fatal(err)
	}
	next, ok := out.Item[dynamo.AttrTicketNext].(*types.AttributeValueMemberN)
	if !ok || next.Value == "0" {
		t.Fatalf("calendar item %v: no slot was booked, the stack leased unscheduled", out.Item)
	}
}
