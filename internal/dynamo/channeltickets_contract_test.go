package dynamo_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
)

// TestChannelTicketsMinidyn runs the calendar contract against minidyn in-process.
func TestChannelTicketsMinidyn(t *testing.T) {
	runTicketContract(t, func(t *testing.T) (dynamotest.API, string) {
		client, _ := dynamotest.Minidyn(t)
		return client, dynamotest.NewStore(t, client).Table()
	})
}

// TestChannelTicketsDynalite runs it against dynalite at $DYNALITE_ENDPOINT (make test-dynalite).
func TestChannelTicketsDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set: start dynalite with .ci/dynalite/run.sh PORT and set DYNALITE_ENDPOINT=http://127.0.0.1:PORT")
	}
	client := dynamotest.NewClient(endpoint)
	runTicketContract(t, func(t *testing.T) (dynamotest.API, string) {
		return client, dynamotest.NewStore(t, client).Table()
	})
}

// lostAnswers applies every UpdateItem and then, for the first n, reports a timeout as if the
// answer were lost: what the SDK's retry of an applied write meets.
type lostAnswers struct {
	dynamotest.API
	mu sync.Mutex
	n  int
}

func (c *lostAnswers) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, o ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := c.API.(dynamo.TicketClient).UpdateItem(ctx, in, o...)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && c.n > 0 {
		c.n--
		return nil, errors.New("read tcp: i/o timeout (answer lost)")
	}
	return out, err
}

func runTicketContract(t *testing.T, newTable func(t *testing.T) (dynamotest.API, string)) {
	ctx := context.Background()
	newCalendar := func(t *testing.T) (*dynamo.ChannelLeases, dynamotest.API, string) {
		client, table := newTable(t)
		return dynamo.NewChannelLeases(client, table), client, table
	}
	const spacing = 1250 * time.Millisecond // 5 s ledgers over 4 channels

	t.Run("consecutive tickets, spaced from now, restarting after an idle spell, and saying so with the time it had", func(t *testing.T) {
		l, _, _ := newCalendar(t)
		type booking struct {
			n         int64
			at        time.Time
			restarted bool
			was       time.Time
		}
		var got []booking
		for _, now := range []time.Time{t0, t0, t0.Add(time.Second), t0.Add(time.Minute), t0.Add(time.Minute), t0.Add(time.Minute + 2*spacing)} {
			n, at, restarted, was, err := l.TakeTicket(ctx, now, spacing, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, booking{n, at, restarted, was})
		}
		want := []booking{
			{0, t0, true, time.Time{}},                               // a new calendar: now, restarted, no time before
			{1, t0.Add(spacing), false, time.Time{}},                 // queued behind the first
			{2, t0.Add(2 * spacing), false, time.Time{}},             // still ahead of now (t0 + 1 s)
			{3, t0.Add(time.Minute), true, t0.Add(3 * spacing)},      // idle since: restarted at now; ticket 3 would have been at t0 + 3 spacings
			{4, t0.Add(time.Minute + spacing), false, time.Time{}},   //
			{5, t0.Add(time.Minute + 2*spacing), false, time.Time{}}, // at exactly from, queued: no restart
		}
		for i := range want {
			if got[i].n != want[i].n || !got[i].at.Equal(want[i].at) || got[i].restarted != want[i].restarted || !got[i].was.Equal(want[i].was) {
				t.Errorf("booking %d = %d at %v restarted %v (was %v), want %d at %v restarted %v (was %v)", i, got[i].n, got[i].at.Sub(t0), got[i].restarted, got[i].was,
					want[i].n, want[i].at.Sub(t0), want[i].restarted, want[i].was)
			}
		}
	})

	t.Run("one request per booking, at light load and under load", func(t *testing.T) {
		_, client, table := newCalendar(t)
		counting := dynamotest.NewCountingClient(client)
		l := dynamo.NewChannelLeases(counting, table)
		// Under load: the calendar ahead of now, queued on.
		for i := range 4 {
			if _, _, _, _, err := l.TakeTicket(ctx, t0, spacing, 0); err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				// The first booking of a new calendar restarts it (two requests), so the second
				// tries a restart first (two): the process learns the calendar is ahead.
				counting.Reset()
			}
		}
		if n := counting.Count("UpdateItem"); n != 2 {
			t.Errorf("two bookings on a calendar ahead of now took %d requests, want 2", n)
		}
		// Light load: every booking finds the calendar behind now, restarted first.
		counting.Reset()
		for i := range 3 {
			if _, at, _, _, err := l.TakeTicket(ctx, t0.Add(time.Duration(i+1)*time.Minute), spacing, 0); err != nil || !at.Equal(t0.Add(time.Duration(i+1)*time.Minute)) {
				t.Fatalf("idle booking %d: %v, %v", i, at, err)
			}
		}
		if n := counting.Count("UpdateItem"); n > 4 {
			t.Errorf("three bookings an idle minute apart took %d requests, want at most 4 (the first may guess wrong)", n)
		}
	})

	t.Run("concurrent bookings get distinct numbers and distinct times", func(t *testing.T) {
		l, _, _ := newCalendar(t)
		var (
			mu   sync.Mutex
			nums []int64
			ats  = map[int64]bool{}
			wg   sync.WaitGroup
		)
		for range 8 {
			wg.Go(func() {
				for range 5 {
					n, at, _, _, err := l.TakeTicket(ctx, t0, spacing, 0)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					nums = append(nums, n)
					ats[at.UnixMilli()] = true
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(nums)
		for i, n := range nums {
			if n != int64(i) {
				t.Fatalf("numbers %v, want 0..39 each once", nums)
			}
		}
		if len(ats) != 40 {
			t.Errorf("%d distinct times for 40 bookings", len(ats))
		}
	})

	t.Run("a booking whose answer was lost skips a ticket and nothing else", func(t *testing.T) {
		_, client, table := newCalendar(t)
		l := dynamo.NewChannelLeases(&lostAnswers{API: client, n: 1}, table)
		if _, _, _, _, err := l.TakeTicket(ctx, t0, spacing, 0); err == nil {
			t.Fatal("a lost answer reported success")
		}
		// The caller (or the SDK) books again: the applied booking is skipped, never handed out twice.
		n, at, _, _, err := l.TakeTicket(ctx, t0, spacing, 0)
		if err != nil || n != 1 || !at.Equal(t0.Add(spacing)) {
			t.Fatalf("after a lost answer: %d at %v, %v; want ticket 1 one spacing after now", n, at.Sub(t0), err)
		}
	})

	t.Run("a round of slots spans its spacings exactly, below the millisecond", func(t *testing.T) {
		// 5 s ledgers over 64 channels: 78.125 ms. A round of 64 tickets spans exactly one
		// ledger, so ticket 64 (channel 0 again) is the first of the next ledger, and ticket
		// 63 the last of this one; kept in whole milliseconds, rounded up, it would be 56 ms late.
		l, _, _ := newCalendar(t)
		const fine = 78125 * time.Microsecond
		var ats []time.Time
		for range 65 {
			_, at, _, _, err := l.TakeTicket(ctx, t0, fine, 0)
			if err != nil {
				t.Fatal(err)
			}
			ats = append(ats, at)
		}
		if !ats[63].Equal(t0.Add(63*fine)) || !ats[64].Equal(t0.Add(5*time.Second)) {
			t.Errorf("tickets 63 and 64 at %v and %v, want %v and 5s", ats[63].Sub(t0), ats[64].Sub(t0), 63*fine)
		}
	})

	t.Run("a calendar time in whole milliseconds is read as it was written", func(t *testing.T) {
		// Items written with whole milliseconds (and a from with a sub-millisecond part) book on.
		_, client, table := newCalendar(t)
		ms := t0.Add(10 * time.Second).UnixMilli()
		if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: map[string]types.AttributeValue{
			"pk":                    &types.AttributeValueMemberS{Value: dynamo.ChannelTicketsKey},
			dynamo.AttrTicketNext:   &types.AttributeValueMemberN{Value: "7"},
			dynamo.AttrTicketNextAt: &types.AttributeValueMemberN{Value: strconv.FormatInt(ms, 10)},
		}}); err != nil {
			t.Fatal(err)
		}
		l := dynamo.NewChannelLeases(client, table)
		from := t0.Add(1500 * time.Microsecond)
		for i, want := range []time.Duration{10 * time.Second, 10*time.Second + 1250*time.Microsecond} {
			n, at, _, _, err := l.TakeTicket(ctx, from, 1250*time.Microsecond, 0)
			if err != nil || n != int64(7+i) || !at.Equal(t0.Add(want)) {
				t.Errorf("booking %d: %d at %v, %v; want %d at %v", i, n, at.Sub(t0), err, 7+i, want)
			}
		}
	})

	t.Run("a client without UpdateItem has no calendar", func(t *testing.T) {
		_, client, table := newCalendar(t)
		l := dynamo.NewChannelLeases(withoutUpdate{client}, table)
		if _, _, _, _, err := l.TakeTicket(ctx, t0, spacing, 0); !errors.Is(err, dynamo.ErrNoTickets) {
			t.Fatalf("TakeTicket = %v, want ErrNoTickets", err)
		}
	})
}

// withoutUpdate hides UpdateItem.
type withoutUpdate struct{ c dynamo.Client }

func (w withoutUpdate) PutItem(ctx context.Context, in *dynamodb.PutItemInput, o ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return w.c.PutItem(ctx, in, o...)
}

func (w withoutUpdate) GetItem(ctx context.Context, in *dynamodb.GetItemInput, o ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return w.c.GetItem(ctx, in, o...)
}

func (w withoutUpdate) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, o ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return w.c.DeleteItem(ctx, in, o...)
}

func (w withoutUpdate) Query(ctx context.Context, in *dynamodb.QueryInput, o ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return w.c.Query(ctx, in, o...)
}
