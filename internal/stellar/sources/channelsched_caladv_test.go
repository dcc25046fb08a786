package sources

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A calendar idle for centuries (its time as far back as a stored value can say: internal/dynamo
// clamps a time past int64 nanoseconds to 1677) restarts with every channel's previous slot long
// gone: the first round of the restarted run leases at its booked times (the restarted slot at
// once), as on a calendar idle for a minute, never at the release point. The ledger a time that
// far back falls in is found without wrapping a Duration (ledgerStart), never placed centuries
// ahead, which would hold the restarted slot to the release point.
func TestARunRestartedOnACalendarIdleForCenturiesLeasesItsFirstRoundAtItsBookedTimes(t *testing.T) {
	for name, back := range map[string]time.Time{
		"a minute":            time.Unix(1_800_000_000, 0).Add(-time.Minute),
		"int64 nanoseconds":   time.Unix(0, -1<<63).UTC(),
		"four hundred years":  time.Unix(1_800_000_000, 0).AddDate(-400, 0, 0),
		"the first of year 1": time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
	} {
		t.Run(name, func(t *testing.T) {
			centuriesCase(t, &sourcestest.Leases{}, &memTickets{next: 7, nextAt: back})
		})
	}
	// The item as DynamoDB keeps it, its time past int64 nanoseconds (minidyn's numbers are
	// float64: a negative 1E+20 ms is within their range).
	client, _ := dynamotest.Minidyn(t)
	t.Run("minidyn", func(t *testing.T) { centuriesStoreCase(t, client, "-1E+20") })
}

// The store case on dynalite at $DYNALITE_ENDPOINT (make test-dynalite), whose numbers are exact
// decimals of 38 digits as DynamoDB's are.
func TestARunRestartedOnACalendarIdleForCenturiesLeasesItsFirstRoundAtItsBookedTimesOnDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set: make test-dynalite starts dynalite and sets it")
	}
	for _, nextAt := range []string{"-1E+20", "-99999999999999999999999999999999999999"} {
		t.Run(nextAt, func(t *testing.T) { centuriesStoreCase(t, dynamotest.NewClient(endpoint), nextAt) })
	}
}

func centuriesStoreCase(t *testing.T, client dynamotest.API, nextAtMs string) {
	table := dynamotest.NewStore(t, client).Table()
	if _, err := client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: map[string]types.AttributeValue{
		dynamo.AttrPK:           &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey},
		dynamo.AttrTicketNext:   &types.AttributeValueMemberN{Value: "7"},
		dynamo.AttrTicketNextAt: &types.AttributeValueMemberN{Value: nextAtMs},
	}}); err != nil {
		t.Fatal(err)
	}
	l := dynamo.NewChannelLeases(client, table)
	centuriesCase(t, l, l)
}

// centuriesCase: 4 channels, 5 s ledgers, a close at T; the calendar at ticket 7, its time long
// gone. Four calls from T+0.5 book tickets 7 to 10 at T, T+1.25, T+2.5, T+3.75 and lease each
// then (the first at once), on the tickets' channels.
func centuriesCase(t *testing.T, leases LeaseStore, tickets TicketStore) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	first := clock.Now() // a close
	keys, chans, pool := scheduledPool(t, clock, leases, tickets, 4)
	clock.Advance(500 * time.Millisecond)
	called := clock.Now()
	for i := range 4 {
		l, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: called.Add(30 * time.Second), MaxTime: called.Add(30 * time.Second), LedgerClose: first})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if want := chans[(7+i)%4].Address(); l.Account != want {
			t.Errorf("call %d leased %s, want ticket %d's channel", i, l.Account, 7+i)
		}
		want := later(called, first.Add(time.Duration(i)*1250*time.Millisecond))
		if !clock.Now().Equal(want) {
			t.Fatalf("call %d leased at T+%v, want T+%v: the channels' previous slots are long gone", i, clock.Now().Sub(first), want.Sub(first))
		}
	}
}

// Consecutive bookings go to distinct channels (ticketChannel), also across ticket 0 from below:
// a calendar whose number an operator set negative (internal/dynamo reads it as it is) books
// tickets -2, -1, 0 on 3 channels, and a pool whose channels are all free leases the three in
// one ledger, three different channels, no lease write failed. Taken as unsigned, -1 names the
// channel of 0 at 3 channels (2^64 - 1 is a multiple of 3), and the third call met a channel the
// first round still held.
func TestConsecutiveTicketsNameDistinctChannelsAcrossZero(t *testing.T) {
	for _, count := range []int{3, 5, 7} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		first := clock.Now()
		tickets := &memTickets{next: -2}
		keys, _, pool := scheduledPool(t, clock, &sourcestest.Leases{}, tickets, count)
		clock.Advance(500 * time.Millisecond)
		seen := map[string]bool{}
		for i := range 3 {
			now := clock.Now()
			l, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: first})
			if err != nil {
				t.Fatalf("%d channels, call %d: %v", count, i, err)
			}
			if seen[l.Account] {
				t.Errorf("%d channels, call %d (ticket %d) leased %s again", count, i, i-2, l.Account)
			}
			seen[l.Account] = true
		}
		if st := pool.Stats(); st.Collisions != 0 {
			t.Errorf("%d channels: stats %+v, want no failed lease write", count, st)
		}
	}
	for n := int64(-10); n < 10; n++ {
		if a, b := ticketChannel(n, 3), ticketChannel(n+1, 3); a == b || a < 0 || a >= 3 || (b-a+3)%3 != 1 {
			t.Errorf("tickets %d and %d name channels %d and %d of 3, want the next one", n, n+1, a, b)
		}
	}
}
