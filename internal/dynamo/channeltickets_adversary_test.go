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
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

// The calendar promises that a channel's slots come at least one ledger interval apart (ticket n
// and ticket n + channels lease the same channel): spacing is interval / channels, which is not a
// whole number of milliseconds at 1 s ledgers over 128 channels (7.8125 ms). Rounded down, the
// 128 slots of a round span 896 ms, and a channel's next slot comes before its transfer can land.
func TestChannelSlotsComeAtLeastAnIntervalApart(t *testing.T) {
	ctx := context.Background()
	client, _ := dynamotest.Minidyn(t)
	l := dynamo.NewChannelLeases(client, dynamotest.NewStore(t, client).Table())
	for _, c := range []struct {
		interval time.Duration
		channels int
	}{{time.Second, 128}, {5 * time.Second, 3}, {time.Second, 7}} {
		spacing := c.interval / time.Duration(c.channels)
		now := t0.Add(time.Hour * time.Duration(c.channels)) // each case on an idle calendar
		var first time.Time
		for i := 0; i <= c.channels; i++ {
			_, at, _, _, err := l.TakeTicket(ctx, now, spacing, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = at
			}
			if i == c.channels {
				if got := at.Sub(first); got < c.interval {
					t.Errorf("%v ledgers over %d channels: a channel's next slot came %v after its last, want at least %v",
						c.interval, c.channels, got, c.interval)
				}
			}
		}
	}
}

// setCalendar writes the calendar item as an operator (or a process with a wrong clock) could
// leave it: next and nextAt (epoch milliseconds).
func setCalendar(t *testing.T, client dynamotest.API, table string, next int64, nextAtMs string) {
	t.Helper()
	_, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		dynamo.AttrPK:           &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey},
		dynamo.AttrTicketNext:   &types.AttributeValueMemberN{Value: strconv.FormatInt(next, 10)},
		dynamo.AttrTicketNextAt: &types.AttributeValueMemberN{Value: nextAtMs},
	}})
	if err != nil {
		t.Fatal(err)
	}
}

// A calendar booked far ahead of now (an operator's edit, a process whose clock ran a day fast,
// or an overload's slots left unused by environments Lambda reaped) would answer every caller
// CHANNELS_BUSY until real time caught up with it, every channel idle: a calendar more than the
// horizon ahead is stale and is restarted at now, so callers wait at most the horizon.
func TestCalendarFarAheadIsRestartedAtNow(t *testing.T) {
	ctx := context.Background()
	const spacing, horizon = 1250 * time.Millisecond, 80 * time.Second
	for _, ahead := range []time.Duration{horizon + time.Second, 24 * time.Hour, 100 * 365 * 24 * time.Hour} {
		client, _ := dynamotest.Minidyn(t)
		table := dynamotest.NewStore(t, client).Table()
		setCalendar(t, client, table, 40, strconv.FormatInt(t0.Add(ahead).UnixMilli(), 10))
		l := dynamo.NewChannelLeases(client, table)
		n, at, _, _, err := l.TakeTicket(ctx, t0, spacing, horizon)
		if err != nil {
			t.Fatal(err)
		}
		if !at.Equal(t0) || n != 40 {
			t.Errorf("calendar %v ahead: ticket %d at now%+v, want ticket 40 at now", ahead, n, at.Sub(t0))
		}
		if _, at, _, _, _ = l.TakeTicket(ctx, t0, spacing, horizon); !at.Equal(t0.Add(spacing)) {
			t.Errorf("calendar %v ahead: the booking after the restart at now%+v, want now+%v", ahead, at.Sub(t0), spacing)
		}
	}
	// Within the horizon the queue is kept: those slots are callers' turns.
	client, _ := dynamotest.Minidyn(t)
	table := dynamotest.NewStore(t, client).Table()
	setCalendar(t, client, table, 40, strconv.FormatInt(t0.Add(horizon).UnixMilli(), 10))
	l := dynamo.NewChannelLeases(client, table)
	if n, at, _, _, err := l.TakeTicket(ctx, t0, spacing, horizon); err != nil || n != 40 || !at.Equal(t0.Add(horizon)) {
		t.Errorf("calendar at the horizon: ticket %d at now%+v (%v), want ticket 40 at now+%v", n, at.Sub(t0), err, horizon)
	}
}

// A calendar whose ticket number has run past the largest int64 (an operator's edit: at 52
// bookings a second it would take billions of years; DynamoDB keeps 38 digits) still books: only
// n mod channels matters, and a calendar that erred on every booking would cost every call a
// write and the fallback to the unscheduled pool, forever. (minidyn keeps numbers as float64, so
// only the first booking past the edit is exercised here.)
func TestCalendarPastTheLargestTicketKeepsBooking(t *testing.T) {
	ctx := context.Background()
	for _, next := range []string{"9223372036854775808", "99999999999999999999999999999999999999"} {
		client, _ := dynamotest.Minidyn(t)
		table := dynamotest.NewStore(t, client).Table()
		_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
			dynamo.AttrPK:           &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey},
			dynamo.AttrTicketNext:   &types.AttributeValueMemberN{Value: next},
			dynamo.AttrTicketNextAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(t0.UnixMilli(), 10)},
		}})
		if err != nil {
			t.Fatal(err)
		}
		l := dynamo.NewChannelLeases(client, table)
		n, at, _, _, err := l.TakeTicket(ctx, t0, time.Second, time.Hour)
		if err != nil || n < 0 || !at.Equal(t0) {
			t.Errorf("next %s: ticket %d at now%+v, %v; want a non-negative ticket at now", next, n, at.Sub(t0), err)
		}
	}
}

// An operator who deletes the calendar item while processes book restarts it at ticket 0: a
// booking never fails for it.
func TestCalendarDeletedIsStartedAgain(t *testing.T) {
	ctx := context.Background()
	client, _ := dynamotest.Minidyn(t)
	table := dynamotest.NewStore(t, client).Table()
	l := dynamo.NewChannelLeases(client, table)
	for range 5 {
		if _, _, _, _, err := l.TakeTicket(ctx, t0, time.Second, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(table),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey}}}); err != nil {
		t.Fatal(err)
	}
	n, at, _, _, err := l.TakeTicket(ctx, t0, time.Second, time.Hour)
	if err != nil || n != 0 || !at.Equal(t0) {
		t.Fatalf("after the delete: ticket %d at now%+v, %v; want ticket 0 at now", n, at.Sub(t0), err)
	}
}
