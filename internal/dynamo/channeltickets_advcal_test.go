package dynamo_test

import (
	"context"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

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

// exactTables is calendarTables without minidyn, which compares and adds numbers as float64 (its
// mapper parses them with strconv.ParseFloat: about 244 ns of resolution at today's epoch
// milliseconds), where DynamoDB's numbers are exact decimals, as dynalite's are: the cases that
// tell an exact sum from a rounded one run on dynalite (make test-dynalite).
func exactTables(t *testing.T) map[string]func(t *testing.T) (dynamotest.API, string) {
	m := calendarTables(t)
	delete(m, "minidyn")
	return m
}

// A calendar time the item holds is read, or restarted over, whatever its digits: negative, far
// beyond int64 nanoseconds, more decimals than six, a tiny fraction. None refuses the calendar
// for good (the pool always passes a horizon).
func TestACalendarTimeOfAnyDigitsIsReadOrRestartedOnDynalite(t *testing.T) {
	ctx := context.Background()
	const spacing = 1250 * time.Millisecond
	from := t0
	fromMs := from.UnixMilli()
	for name, newTable := range exactTables(t) {
		for _, c := range []struct {
			nextAt    string
			wantAt    time.Time
			restarted bool
			was       time.Time // the time the restart answers it had: clamped to int64 nanoseconds
		}{
			{"-1", from, true, time.Unix(0, -1e6).UTC()},
			{"-0.000001", from, true, time.Unix(0, -1).UTC()},
			{"0.0000001", from, true, time.Unix(0, 0).UTC()},
			{"1E+125", from, true, time.Unix(0, math.MaxInt64).UTC()},
			{"99999999999999999999999999999999999999", from, true, time.Unix(0, math.MaxInt64).UTC()},
			{"-99999999999999999999999999999999999999", from, true, time.Unix(0, math.MinInt64).UTC()},
			{strconv.FormatInt(fromMs+10, 10) + ".1234567", from.Add(10*time.Millisecond + 123456*time.Nanosecond), false, time.Time{}},
			{strconv.FormatInt(fromMs, 10) + ".0000009", from, false, time.Time{}},
			{strconv.FormatInt(fromMs-1, 10) + ".9999999", from, true, from.Add(-time.Nanosecond)},
			{strconv.FormatInt(fromMs-1, 10) + ".999999", from, true, from.Add(-time.Nanosecond)}, // six decimals, as the calendar writes
		} {
			t.Run(name+"/"+c.nextAt, func(t *testing.T) {
				client, table := newTable(t)
				setCalendar(t, client, table, 7, c.nextAt)
				l := dynamo.NewChannelLeases(client, table)
				n, at, restarted, was, err := l.TakeTicket(ctx, from, spacing, time.Hour)
				if err != nil || n != 7 || !at.Equal(c.wantAt) || restarted != c.restarted || !was.Equal(c.was) {
					t.Errorf("nextAt %s: ticket %d at %v restarted %v was %v, %v; want 7 at %v restarted %v was %v",
						c.nextAt, n, at.Sub(from), restarted, was, err, c.wantAt.Sub(from), c.restarted, c.was)
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
func TestACalendarAddsItsSpacingExactlyOnDynalite(t *testing.T) {
	ctx := context.Background()
	for name, newTable := range exactTables(t) {
		for _, spacing := range []time.Duration{1666666667, 833333334, 7812500, 39062500} {
			t.Run(name+"/"+spacing.String(), func(t *testing.T) {
				client, table := newTable(t)
				l := dynamo.NewChannelLeases(client, table)
				for i := range 4 {
					_, at, _, _, err := l.TakeTicket(ctx, t0, spacing, time.Hour)
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
