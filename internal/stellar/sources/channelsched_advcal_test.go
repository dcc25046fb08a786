package sources

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A channel is never leased before its previous transfer is released: a calendar restarted at
// the start of a ledger makes only the restarted slot's channel two ledgers back. The slots after
// it in the run's first round (leased at their booked time when it comes before the release
// point) have their channel's previous slot in the ledger before, whose transfer landed at this
// ledger's opening close and is released 2.7 s after it, after the slot's booked time.
//
// 4 channels, 5 s ledgers (spacing 1.25 s), closes at T, T+5. Process A books tickets 0 (T,
// restarted, leased at T+0.5, channel 0) and 1 (T+1.25, leased then, channel 1); nobody books
// more, so the calendar's next time is T+2.5, behind T+5. Both transfers land at T+5 and are
// released at T+7.7. At T+7.5 process B books three slots: ticket 2 (restarted at T+5, channel
// 2), 3 (T+6.25, channel 3), 4 (T+7.5, channel 0). Ticket 4's channel is still held by A; the
// release point of its ledger is T+8, after A's release. Right: B's third call leases channel 0
// with no failed lease write. The lease's conditional write still decides (the in-memory lease store refuses the
// held channel), so what goes wrong is a failed write and a slot lost, not a second envelope.
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleased(t *testing.T) {
	t.Skip("open: a restarted calendar's first round leases at its booked time though a channel's previous slot may be a ledger back; fix: the restart answers the calendar's old time (ReturnValues ALL_OLD) and slotTime leases such a slot at its release point. Until then the lease's conditional write refuses the held channel: a failed lease write, never a second envelope")
	const interval, settle = 5 * time.Second, 2700 * time.Millisecond
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	first := clock.Now() // a close
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
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
// the network reports is not the instant the ledger closed: core writes the close time SCP
// nominated, in whole seconds, up to about a second before the ledger actually closes. The
// release point (0.6 into the ledger: 3 s at 5 s ledgers) is taken from the reported close; the
// previous transfer on the channel landed at the real close and is released 2.7 s after it.
//
// 4 channels, 5 s ledgers, reported closes at T and T+5, real ones lag after them. Process A
// leases the four channels in the ledger reported at T (calls at T+3.6, past its point): they
// land at the real close T+5+lag and are released 2.7 s later. Process B calls at T+8, the
// release point of the ledger reported at T+5, and books ticket 4 (channel 0). Right: B leases
// channel 0 with no failed lease write (waiting for its release). With lag 0 the release is at
// T+7.7 and B meets a free channel; with 0.5 s (T+8.2) and 0.9 s (T+8.6) B writes a lease on a
// held channel at T+8.
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleasedWhateverTheReportedCloseTime(t *testing.T) {
	t.Skip("open: the release point is timed from core's close time (whole seconds, up to a second before the ledger closed), not from when the process saw the close; a lagging close costs failed lease writes and a CHANNELS_BUSY answer, never a second envelope")
	for _, lag := range []time.Duration{0, 200 * time.Millisecond, 500 * time.Millisecond, 900 * time.Millisecond} {
		t.Run(lag.String(), func(t *testing.T) {
			const interval, settle = 5 * time.Second, 2700 * time.Millisecond
			clock := vclock.New(time.Unix(1_800_000_000, 0))
			first := clock.Now() // a reported close
			leases, tickets := &sourcestest.Leases{}, &memTickets{}
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
