package sources

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A channel is never leased before its previous transfer is released: a calendar restarted at
// the start of a ledger makes only the restarted slot's channel two ledgers back. The slots after
// it in the run's first round (leased at their booked time when it comes before the release
// point) may have their channel's previous slot in the ledger before, whose transfer landed at
// this ledger's opening close and is released 2.7 s after it, after the slot's booked time. The
// restart's answer (the calendar's time before it) tells them apart.
//
// 4 channels, 5 s ledgers (spacing 1.25 s), closes at T, T+5. Process A books tickets 0 (T,
// restarted, leased at T+0.5, channel 0) and 1 (T+1.25, leased then, channel 1); nobody books
// more, so the calendar's next time is T+2.5, behind T+5. Both transfers land at T+5 and are
// released at T+7.7. At T+7.5 process B books three slots: ticket 2 (restarted at T+5, the
// calendar's time before it T+2.5, channel 2), 3 (T+6.25, channel 3, whose previous slot would
// have been at T-1.25, two ledgers back) and 4 (T+7.5, channel 0, whose previous slot, ticket 0
// at T, is a ledger back and still held by A). Right: B's first two calls lease at once, the
// third waits for the release point of its ledger (T+9: 0.6 into it from a second after its
// close time), after A's release, and leases channel 0 with no failed lease write. The lease's
// conditional write still decides (both lease stores refuse the held channel), so what goes
// wrong is a failed write and a slot lost, not a second envelope.
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleased(t *testing.T) {
	for name, stores := range calendarStores() {
		t.Run(name, func(t *testing.T) { previousTransferReleasedCase(t, stores) })
	}
}

func previousTransferReleasedCase(t *testing.T, newStores func(t *testing.T) (LeaseStore, TicketStore)) {

	const interval, settle = 5 * time.Second, 2700 * time.Millisecond
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	first := clock.Now() // a close
	leases, tickets := newStores(t)
	keysA, chans, poolA := scheduledPool(t, clock, leases, tickets, 4)
	_, _, poolB := scheduledPool(t, clock, leases, tickets, 4)
	ctx := context.Background()
	terms := func(lastClose time.Time) LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: lastClose}
	}

	clock.Advance(500 * time.Millisecond)
	a0, err := poolA.Acquire(ctx, keysA, terms(first))
	if err != nil || a0.Account != chans[0].Address() {
		t.Fatalf("A's first call: %s, %v; want channel 0", a0.Account, err)
	}
	clock.Advance(800 * time.Millisecond) // T+1.3
	a1, err := poolA.Acquire(ctx, keysA, terms(first))
	if err != nil || a1.Account != chans[1].Address() {
		t.Fatalf("A's second call: %s, %v; want channel 1", a1.Account, err)
	}
	// Both land at T+5 and are released settle after it.
	var once sync.Once
	clock.OnAdvance(func(now time.Time) {
		if !now.Before(first.Add(interval + settle)) {
			once.Do(func() {
				poolA.Release(ctx, a0, transfer.Envelope{Channel: a0.Account})
				poolA.Release(ctx, a1, transfer.Envelope{Channel: a1.Account})
			})
		}
	})
	clock.Advance(first.Add(7500 * time.Millisecond).Sub(clock.Now()))
	second := first.Add(interval)
	for i, want := range []int{2, 3, 0} {
		l, err := poolB.Acquire(ctx, keysA, terms(second))
		if err != nil {
			t.Fatalf("B's call %d: %v", i, err)
		}
		if l.Account != chans[want].Address() {
			t.Errorf("B's call %d leased %s at T+%v, want channel %d", i, l.Account, clock.Now().Sub(first), want)
		}
	}
	if st := poolB.Stats(); st.Collisions != 0 {
		t.Errorf("B's stats %+v: a lease written on a channel whose transfer (landed at T+5) was still held until T+7.7", st)
	}
}

// A slot never leases a channel before its previous transfer is released when the close time
// the network reports is not the instant the ledger closed: core writes the close time of the
// value it nominated, in whole seconds rounded down, up to about a second before the ledger
// actually closes (closeStampLag). The previous transfer on the channel landed at the real close
// and is released 2.7 s after it; the release point (0.6 into the ledger: 3 s at 5 s ledgers) is
// timed from a second after the reported close, the latest the ledger can have closed.
//
// 4 channels, 5 s ledgers, reported closes at T and T+5, real ones lag after them (up to 999 ms).
// Process A leases the four channels in the ledger reported at T (calls at T+3.6, the first round
// of a new calendar, leased at once): they land at the real close T+5+lag and are released 2.7 s
// later. Process B calls at
// T+8 and books ticket 4 (channel 0). Right: B leases channel 0 with no failed lease write,
// waiting for the release point T+9. Timed from the reported close, the point was T+8, and with
// lags of 0.5 s (released at T+8.2), 0.9 s and 999 ms B wrote a lease on a held channel there.
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleasedWhateverTheReportedCloseTime(t *testing.T) {
	for name, stores := range calendarStores() {
		t.Run(name, func(t *testing.T) { reportedCloseTimeCase(t, stores) })
	}
}

func reportedCloseTimeCase(t *testing.T, newStores func(t *testing.T) (LeaseStore, TicketStore)) {
	for _, lag := range []time.Duration{0, 200 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond, 999 * time.Millisecond} {
		t.Run(lag.String(), func(t *testing.T) {
			const interval, settle = 5 * time.Second, 2700 * time.Millisecond
			clock := vclock.New(time.Unix(1_800_000_000, 0))
			first := clock.Now() // a reported close
			leases, tickets := newStores(t)
			keys, chans, poolA := scheduledPool(t, clock, leases, tickets, 4)
			_, _, poolB := scheduledPool(t, clock, leases, tickets, 4)
			ctx := context.Background()
			terms := func(lastClose time.Time) LeaseTerms {
				now := clock.Now()
				return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: lastClose}
			}
			clock.Advance(3600 * time.Millisecond)
			var held []Lease
			for i := range 4 {
				l, err := poolA.Acquire(ctx, keys, terms(first))
				if err != nil || l.Account != chans[i].Address() {
					t.Fatalf("A's call %d: %s, %v; want channel %d", i, l.Account, err, i)
				}
				held = append(held, l)
			}
			var once sync.Once
			clock.OnAdvance(func(now time.Time) {
				if !now.Before(first.Add(interval + lag + settle)) {
					once.Do(func() {
						for _, l := range held {
							poolA.Release(ctx, l, transfer.Envelope{Channel: l.Account})
						}
					})
				}
			})
			clock.Advance(first.Add(8 * time.Second).Sub(clock.Now()))
			l, err := poolB.Acquire(ctx, keys, terms(first.Add(interval)))
			if err != nil {
				t.Fatalf("B's call at T+%v: %v; stats %+v (A released at T+%v)", clock.Now().Sub(first), err, poolB.Stats(), interval+lag+settle)
			}
			if st := poolB.Stats(); st.Collisions != 0 || l.Account != chans[0].Address() {
				t.Errorf("B leased %s at T+%v, stats %+v; want channel 0 with no failed lease write (A released at T+%v)",
					l.Account, clock.Now().Sub(first), st, interval+lag+settle)
			}
		})
	}
}

// calendarStores are the lease and calendar stores the tests above run on: in memory
// (sourcestest's leases, memTickets) and internal/dynamo's ChannelLeases on minidyn, which keeps
// both in the table as DynamoDB does.
func calendarStores() map[string]func(t *testing.T) (LeaseStore, TicketStore) {
	return map[string]func(t *testing.T) (LeaseStore, TicketStore){
		"memory": func(t *testing.T) (LeaseStore, TicketStore) { return &sourcestest.Leases{}, &memTickets{} },
		"minidyn": func(t *testing.T) (LeaseStore, TicketStore) {
			client, _ := dynamotest.Minidyn(t)
			l := dynamo.NewChannelLeases(client, dynamotest.NewStore(t, client).Table())
			return l, l
		},
	}
}

// The tests above on dynalite at $DYNALITE_ENDPOINT (make test-dynalite), whose numbers are exact
// decimals as DynamoDB's are (minidyn's are float64).
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleasedOnDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set: make test-dynalite starts dynalite and sets it")
	}
	client := dynamotest.NewClient(endpoint)
	stores := func(t *testing.T) (LeaseStore, TicketStore) {
		l := dynamo.NewChannelLeases(client, dynamotest.NewStore(t, client).Table())
		return l, l
	}
	t.Run("restarted calendar", func(t *testing.T) { previousTransferReleasedCase(t, stores) })
	t.Run("reported close time", func(t *testing.T) { reportedCloseTimeCase(t, stores) })
}

// The start of the ledger a time falls in is the close that began it, whichever side of the
// latest close the time is on: a close ahead of the process's clock (the network's close times
// run ahead of it) gives the ledger before, never one that has not begun by this clock; a close
// many ledgers old is extrapolated by whole intervals; a time on a close is that close's ledger.
func TestALedgerStartsAtTheCloseThatBeganIt(t *testing.T) {
	const interval = 5 * time.Second
	c := time.Unix(1_800_000_000, 0)
	for _, tc := range []struct {
		name string
		t    time.Time
		want time.Time
	}{
		{"on the close", c, c},
		{"just after", c.Add(time.Nanosecond), c},
		{"just before the next", c.Add(interval - time.Nanosecond), c},
		{"on the next", c.Add(interval), c.Add(interval)},
		{"close ahead by half a ledger", c.Add(-interval / 2), c.Add(-interval)},
		{"close ahead by a whole ledger", c.Add(-interval), c.Add(-interval)},
		{"close ahead by a nanosecond", c.Add(-time.Nanosecond), c.Add(-interval)},
		{"close 10,000 ledgers old", c.Add(10000*interval + 3*time.Second), c.Add(10000 * interval)},
	} {
		if got := ledgerStart(tc.t, c, interval); !got.Equal(tc.want) {
			t.Errorf("%s: ledgerStart = close%+v, want close%+v", tc.name, got.Sub(c), tc.want.Sub(c))
		}
	}
	if got := ledgerStart(c, time.Time{}, interval); !got.Equal(c) {
		t.Errorf("no close known: %v, want the time itself", got)
	}
}
