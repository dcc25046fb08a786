package dynamo_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
)

// Consecutive bookings get consecutive tickets (a ticket picks its channel, n mod channels, so
// two bookings with one number lease one channel back to back) whatever number an operator left
// on the item: a fraction is taken down to the whole number below it, on either side of zero.
// Cut towards zero instead, -0.5 and the 0.5 the next booking's ADD makes of it are both ticket 0.
func TestConsecutiveBookingsGetConsecutiveTicketsWhateverTheNumbersDigitsOnMinidynAndDynalite(t *testing.T) {
	ctx := context.Background()
	const spacing = 1250 * time.Millisecond
	for name, newTable := range calendarTables(t) {
		for _, c := range []struct {
			next  string
			first int64
		}{{"-0.5", -1}, {"-2.5", -3}, {"1.5", 1}, {"-3", -3}} {
			t.Run(name+"/"+c.next, func(t *testing.T) {
				client, table := newTable(t)
				_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
					dynamo.AttrPK:           &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey},
					dynamo.AttrTicketNext:   &types.AttributeValueMemberN{Value: c.next},
					dynamo.AttrTicketNextAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(t0.Add(-time.Minute).UnixMilli(), 10)},
				}})
				if err != nil {
					t.Fatal(err)
				}
				l := dynamo.NewChannelLeases(client, table)
				for i := range int64(4) {
					n, _, _, _, err := l.TakeTicket(ctx, t0, spacing, time.Hour)
					if err != nil || n != c.first+i {
						t.Fatalf("next %s, booking %d: ticket %d, %v; want %d", c.next, i, n, err, c.first+i)
					}
				}
			})
		}
	}
}
