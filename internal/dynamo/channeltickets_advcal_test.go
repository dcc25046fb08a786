package dynamo_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

// calendarTables gives minidyn, and dynalite when DYNALITE_ENDPOINT is set (make test-dynalite).
func calendarTables(t *testing.T) map[string]func(t *testing.T) (dynamotest.API, string) {
	m := map[string]func(t *testing.T) (dynamotest.API, string){
		"minidyn": func(t *testing.T) (dynamotest.API, string) {
			client, _ := dynamotest.Minidyn(t)
			return client, dynamotest.NewStore(t, client).Table()
		},
	}
	if endpoint := os.Getenv("DYNALITE_ENDPOINT"); endpoint != "" {
		m["dynalite"] = func(t *testing.T) (dynamotest.API, string) {
			client := dynamotest.NewClient(endpoint)
			return client, dynamotest.NewStore(t, client).Table()
		}
	}
	return m
}

// An older build reads the calendar a newer one wrote: during a rolling deploy (sam deploy
// replaces functions one by one, and warm environments of the release before keep serving) both
// builds book on the one item. The release before reads nextAt with strconv.ParseInt (whole epoch
// milliseconds); this one writes milliseconds with decimals whenever the spacing is not whole (5 s
// ledgers over 64 channels: 78.125 ms), so every queued booking of an older environment applies
// (its slot used up, its channel idle for it) and then fails to parse its answer: it leases
// unscheduled, the collisions the calendar exists to avoid, until it is replaced.
func TestAnOlderBuildReadsTheCalendarANewerOneWrote(t *testing.T) {
	ctx := context.Background()
	for name, newTable := range calendarTables(t) {
		t.Run(name, func(t *testing.T) {
			client, table := newTable(t)
			l := dynamo.NewChannelLeases(client, table)
			const spacing = 78125 * time.Microsecond // 5 s over 64 channels
			for range 2 {
				if _, _, _, err := l.TakeTicket(ctx, t0, spacing, time.Hour); err != nil {
					t.Fatal(err)
				}
			}
			out, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
				Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey}}})
			if err != nil {
				t.Fatal(err)
			}
			v, ok := out.Item[dynamo.AttrTicketNextAt].(*types.AttributeValueMemberN)
			if !ok {
				t.Fatalf("item %v has no numeric nextAt", out.Item)
			}
			if _, err := strconv.ParseInt(v.Value, 10, 64); err != nil {
				t.Errorf("nextAt %q: the release before cannot read it (%v): its queued bookings apply and then fail", v.Value, err)
			}
		})
	}
}

// A calendar time the item holds is read, or restarted over, whatever its digits: negative, far
// beyond int64 nanoseconds, more decimals than six, a tiny fraction. None refuses the calendar
// for good (the pool always passes a horizon).
func TestACalendarTimeOfAnyDigitsIsReadOrRestarted(t *testing.T) {
	ctx := context.Background()
	const spacing = 1250 * time.Millisecond
	from := t0
	fromMs := from.UnixMilli()
	for name, newTable := range calendarTables(t) {
		for _, c := range []struct {
			nextAt    string
			wantAt    time.Time
			restarted bool
		}{
			{"-1", from, true},
			{"-0.000001", from, true},
			{"0.0000001", from, true},
			{"1E+125", from, true},
			{"99999999999999999999999999999999999999", from, true},
			{strconv.FormatInt(fromMs+10, 10) + ".1234567", from.Add(10*time.Millisecond + 123456*time.Nanosecond), false},
			{strconv.FormatInt(fromMs, 10) + ".0000009", from, false},
			{strconv.FormatInt(fromMs-1, 10) + ".9999999", from, true},
			{strconv.FormatInt(fromMs-1, 10) + ".999999", from, true}, // six decimals, as the calendar writes
		} {
			t.Run(name+"/"+c.nextAt, func(t *testing.T) {
				client, table := newTable(t)
				setCalendar(t, client, table, 7, c.nextAt)
				l := dynamo.NewChannelLeases(client, table)
				n, at, restarted, err := l.TakeTicket(ctx, from, spacing, time.Hour)
				if err != nil || n != 7 || !at.Equal(c.wantAt) || restarted != c.restarted {
					t.Errorf("nextAt %s: ticket %d at %v restarted %v, %v; want 7 at %v restarted %v",
						c.nextAt, n, at.Sub(from), restarted, err, c.wantAt.Sub(from), c.restarted)
				}
			})
		}
	}
}

// The calendar adds its spacing exactly, as DynamoDB adds decimals (38 digits): a round of count
// slots spans count spacings to the nanosecond whatever the spacing (interval / count rounded up
// to the nanosecond: 5 s over 3 channels is 1666.666667 ms), so a channel's next slot is never
// in the ledger of its last. A store that adds in binary floating point (float64 at today's epoch
// milliseconds has steps of 244 ns) drifts from DynamoDB, and the contract suite run on it
// cannot tell a right calendar from a wrong one below that step.
func TestACalendarAddsItsSpacingExactly(t *testing.T) {
	ctx := context.Background()
	for name, newTable := range calendarTables(t) {
		for _, spacing := range []time.Duration{1666666667, 833333334, 7812500, 39062500} {
			t.Run(name+"/"+spacing.String(), func(t *testing.T) {
				client, table := newTable(t)
				l := dynamo.NewChannelLeases(client, table)
				for i := range 4 {
					_, at, _, err := l.TakeTicket(ctx, t0, spacing, time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					if want := t0.Add(time.Duration(i) * spacing); !at.Equal(want) {
						t.Errorf("ticket %d at %v, want %v (off by %v)", i, at.Sub(t0), want.Sub(t0), at.Sub(want))
					}
				}
			})
		}
	}
}
