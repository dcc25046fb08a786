package sources

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// lonePool is a pool of count channels on leases and the calendar tickets, ledgers every
// interval (the pool's Wait left at its default: one interval).
func lonePool(t *testing.T, clock *vclock.Clock, leases LeaseStore, tickets TicketStore, count int, interval time.Duration) (signing.Keys, []*keypair.Full, *ChannelPool) {
	t.Helper()
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	chans, err := ChannelKeys(keys, count)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Tickets: tickets, Count: count, Clock: clock,
		LedgerInterval: func() time.Duration { return interval }})
	if err != nil {
		t.Fatal(err)
	}
	return keys, chans, pool
}

// A lone caller is never answered CHANNELS_BUSY while every channel account is free: the first
// call leases and is refused before sending (Prepare's FEE_ACCOUNT_UNDERFUNDED, the vault short),
// its lease released, and the same client's next call comes at once, nothing else on the pool.
//
// The first call books the idle calendar from the start of the ledger it falls in (the latest
// close) and leases at once; the calendar's next time is that close + spacing (interval /
// channels), and the refusal returns the channel, not the calendar time. The second call books
// that slot: queued, so it would lease at its ledger's release point, 0.6 into the ledger, up to
// a ledger ahead when the slot falls in the next one (one channel), and the call would wait for a
// free channel or, past the wait, be answered CHANNELS_BUSY with every channel free. slotTime
// leases it as booked, or at once when its time has passed: the slot is in the first round of the
// run the process saw begin (its channel's previous slot before the run), or with one channel its
// previous slot was the process's own, released.
//
// The cases: 1 s and 5 s ledgers, 1, 4, 8 (the local stack's) and 64 channels, the calls at
// several phases of the ledger they fall in (the share of the interval since its close). The
// right wait is to the booked slot, the latest close + interval / channels, none when it has
// passed. The channel is the one the calendar booked: ticket 1's, the second channel (the first
// again with one channel).
func TestALoneCallerIsNeverBusyWithChannelsFree(t *testing.T) {
	for _, interval := range []time.Duration{time.Second, 5 * time.Second} {
		for _, channels := range []int{1, 4, 8, 64} {
			// 0.5 at 5 s ledgers and 8 channels is the local stack's failure: the 0.6 point 0.5 s
			// after the calls, inside the 625 ms spacing, the slot moved to now + 5.5 s.
			for _, phase := range []float64{0, 0.3, 0.5, 0.55, 0.59, 0.6, 0.7, 0.95} {
				t.Run(fmt.Sprintf("ledger=%v/channels=%d/phase=%.2f", interval, channels, phase), func(t *testing.T) {
					loneCallerCase(t, interval, channels, phase)
				})
			}
		}
	}
}

func loneCallerCase(t *testing.T, interval time.Duration, channels int, phase float64) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
	keys, chans, pool := lonePool(t, clock, leases, tickets, channels, interval)
	ctx := context.Background()
	lastClose := start.Add(-time.Duration(phase * float64(interval)))
	terms := LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second), LedgerClose: lastClose}

	first, err := pool.Acquire(ctx, keys, terms)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	if first.Account != chans[0].Address() || !clock.Now().Equal(start) {
		t.Fatalf("first call leased %s after %v, want the first channel at once", first.Account, clock.Now().Sub(start))
	}
	// Refused before sending (withSource's build failed): the lease is released, nothing bound.
	pool.Release(ctx, first, transfer.Envelope{Channel: first.Account})

	spacing := interval / time.Duration(channels)
	booked := max(lastClose.Add(spacing).Sub(start), 0)
	// Where the alignment would put the slot: the release point of the ledger it falls in.
	point := releasePoint(lastClose, lastClose, interval)
	if channels == 1 {
		point = point.Add(interval)
	}

	second, err := pool.Acquire(ctx, keys, terms)
	var ue *transfer.UnavailableError
	if errors.As(err, &ue) && ue.Code == CodeChannelsBusy {
		t.Fatalf("second call answered CHANNELS_BUSY (Retry-After %v) with all %d channels free; stats %+v",
			ue.RetryAfter, channels, pool.Stats())
	}
	if err != nil {
		t.Fatalf("second call: %v", err)
	}
	if waited := clock.Now().Sub(start); waited != booked {
		t.Errorf("second call leased after %v, want the booked slot's %v (its ledger's release point %v ahead)",
			waited, booked, point.Sub(start))
	}
	if wantCh := chans[1%channels].Address(); second.Account != wantCh {
		t.Errorf("second call leased %s, want ticket 1's channel %s", second.Account, wantCh)
	}
	if st := pool.Stats(); st.Leases != 2 || st.Collisions != 0 || st.Busy != 0 || st.Tickets != 2 {
		t.Errorf("stats %+v, want 2 leases on 2 tickets, no collision, no busy", st)
	}
	pool.Release(ctx, second, transfer.Envelope{Channel: second.Account})
}

// What the process does not know keeps the alignment: one channel, leased by another process
// (its transfer in flight), the slot a caller books an interval ahead is moved to the release
// point, past the wait, and the call answers CHANNELS_BUSY at once, no lease write made, with the
// Retry-After of its slot (5.5 s away: 5 s), keeping the slot for the process's next call, which
// leases at that point once the other process has released the channel.
func TestSlotOnAChannelHeldElsewhereKeepsItsAlignment(t *testing.T) {
	const interval = 5 * time.Second
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
	keys, chans, pool := lonePool(t, clock, leases, tickets, 1, interval)
	_, _, other := lonePool(t, clock, leases, tickets, 1, interval) // another process
	ctx := context.Background()
	// The latest close 3.5 s ago: the release point (0.6 into the ledger, from a second after its
	// close time) 0.5 s ahead, so the booked slot (now + 1.5 s, in the next ledger) aligns to
	// now + 5.5 s, past the wait.
	terms := LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second),
		LedgerClose: start.Add(-3500 * time.Millisecond)}

	held, err := other.Acquire(ctx, keys, terms)
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	_, err = pool.Acquire(ctx, keys, terms)
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
		t.Fatalf("second call on a channel held elsewhere: %v, want CHANNELS_BUSY", err)
	}
	if ue.RetryAfter != 5*time.Second || !clock.Now().Equal(start) {
		t.Errorf("Retry-After %v after %v, want 5s at once (the slot 5.5 s away)", ue.RetryAfter, clock.Now().Sub(start))
	}
	if st := pool.Stats(); st.Leases != 0 || st.Collisions != 0 || st.Busy != 1 || st.Tickets != 1 {
		t.Errorf("stats %+v, want 1 busy on 1 ticket, no lease write", st)
	}
	if got := leases.Owner(chans[0].Address()); got != held.Owner {
		t.Errorf("the channel's lease is %q's, want the first call's %q", got, held.Owner)
	}

	// The other process's transfer lands at the close 1.5 s ahead and is released; the caller
	// comes back at its Retry-After and leases at the kept slot's release point.
	clock.Advance(4 * time.Second)
	other.Release(ctx, held, transfer.Envelope{Channel: held.Account})
	clock.Advance(time.Second)
	lease, err := pool.Acquire(ctx, keys, terms)
	if err != nil {
		t.Fatalf("call back at Retry-After: %v", err)
	}
	if at := clock.Now().Sub(start); at != 5500*time.Millisecond {
		t.Errorf("leased at now + %v, want the release point now + 5.5s", at)
	}
	if st := pool.Stats(); st.Leases != 1 || st.Reused != 1 || st.Tickets != 1 || st.Collisions != 0 {
		t.Errorf("stats %+v, want the kept slot leased, no new ticket, no failed write", st)
	}
	pool.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
}

// slotTime leases a queued slot as booked only on what the process saw: slots among the first
// count after a booking it made on the idle calendar, or a slot whose channel's previous slot
// (n - count) was its own lease, released. Past the first round, or after another process's
// slot on the channel, the slot leases at the release point of the ledger it falls in (here 4
// channels at 5 s ledgers, the latest close 3.5 s before now: release points, 0.6 into a ledger
// from a second after its close time, at now + 0.5 s + k x 5 s; the next ledger begins at
// now + 1.5 s).
func TestSlotTimeLeavesOnlyKnownIdleChannelsUnaligned(t *testing.T) {
	const interval, count = 5 * time.Second, 4
	now := time.Unix(1_800_000_000, 0)
	const restart = -3500 * time.Millisecond // the slot at the ledger's start: restarted
	lastClose := now.Add(restart)
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: &sourcestest.Leases{}, Count: count})
	if err != nil {
		t.Fatal(err)
	}
	slot := func(n int64, ahead time.Duration) time.Duration {
		return pool.slotTime(n, now.Add(ahead), ahead == restart, time.Time{}, now, fmt.Sprintf("channel-%d", n%count), count, lastClose, interval).Sub(now)
	}
	// Nothing seen: a queued slot in the next ledger (3 s ahead) aligns to its point, 5.5 s ahead;
	// one booked at the ledger's start, the calendar restarted, leases now.
	if got := slot(41, 3*time.Second); got != 5500*time.Millisecond {
		t.Errorf("queued slot, nothing seen: leases at now + %v, want 5.5s", got)
	}
	if got := slot(40, restart); got != 0 {
		t.Errorf("slot at the ledger's start: leases at now + %v, want now", got)
	}
	// Slot 40 was booked at the ledger's start: 41 to 43 are its run's first round, 44 (channel 0
	// again) is not.
	for n := int64(41); n <= 43; n++ {
		if got := slot(n, 3*time.Second); got != 3*time.Second {
			t.Errorf("slot %d of the first round: leases at now + %v, want as booked, 3s", n, got)
		}
	}
	if got := slot(44, 3*time.Second); got != 5500*time.Millisecond {
		t.Errorf("slot 44, past the first round: leases at now + %v, want aligned, 5.5s", got)
	}
	// The process released its lease of slot 42 (channel 2): slot 46 leases as booked, slot 45
	// (channel 1, whose previous slot another process may hold) aligns, and so does slot 50 (slot
	// 46's own lease on channel 2 not released).
	pool.mu.Lock()
	pool.seen.freed("channel-2", 42)
	pool.mu.Unlock()
	if got := slot(46, 3*time.Second); got != 3*time.Second {
		t.Errorf("slot 46 after the process released slot 42's lease: leases at now + %v, want as booked, 3s", got)
	}
	if got := slot(45, 3*time.Second); got != 5500*time.Millisecond {
		t.Errorf("slot 45: leases at now + %v, want aligned, 5.5s", got)
	}
	if got := slot(50, 4*time.Second); got != 5500*time.Millisecond {
		t.Errorf("slot 50: leases at now + %v, want aligned, 5.5s", got)
	}
}
