package sources

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A calendar that answers a slot centuries ahead (a store that does not bound it, a booking made
// by a process whose clock is wrong by that much) must not become CHANNELS_BUSY with a
// Retry-After that is false (the slot's distance overflowed to 1 s: clients told to come back
// every second, forever) nor a slot kept that answers every later call busy while every channel
// is idle: the pool takes such a slot as a calendar failure and leases unscheduled.
func TestCalendarFarAheadNeverAnswersAFalseRetryAfter(t *testing.T) {
	for _, years := range []int{0, 300} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		start := clock.Now()
		at := start.AddDate(years, 0, 0).Add(time.Hour)
		ahead := at.Sub(start)
		tickets := &memTickets{next: 3, nextAt: at}
		leases := &sourcestest.Leases{}
		keys, _, pool := scheduledPool(t, clock, leases, tickets, 4)
		ctx := context.Background()
		for i := range 3 {
			now := clock.Now()
			lease, err := pool.Acquire(ctx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now})
			var ue *transfer.UnavailableError
			if errors.As(err, &ue) {
				t.Fatalf("calendar %v ahead, call %d: %v (Retry-After %v), want a lease: every channel is idle", ahead, i+1, err, ue.RetryAfter)
			}
			if err != nil {
				t.Fatal(err)
			}
			pool.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
		}
	}
}

// slotRetryAfter is never later than the slot nor more than a second before it (at least a
// second), whatever the distance, the largest Duration included (no overflow).
func TestSlotRetryAfterIsWithinASecondBeforeTheSlot(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, 2 * time.Second, time.Hour, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - time.Second/2} {
		got := slotRetryAfter(d)
		if got <= 0 || d >= time.Second && (got > d || got <= d-time.Second) || d < time.Second && got != time.Second {
			t.Errorf("slotRetryAfter(%v) = %v, want within a second before the slot, at least 1 s", d, got)
		}
	}
}

// A slot kept for a later call names its ticket, not an index into the channel list of the call
// that booked it: with CHANNEL_COUNT 0 (every listed channel) the list is the secret's, and a
// secret rotated to fewer channelSeeds between the two calls must lease ticket n's channel among
// the channels now listed, never index past them (a panic: a 500 for nothing the client did).
func TestKeptSlotSurvivesAShorterChannelList(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	keys := sourcestest.Keys(t)
	all, err := DeriveChannelKeys(keys.ChannelMaster, 8)
	if err != nil {
		t.Fatal(err)
	}
	keys.ChannelMaster = signing.MasterSeed{}
	keys.Channels = all
	leases := &sourcestest.Leases{}
	tickets := &memTickets{next: 7, nextAt: start.Add(20 * time.Second)}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Tickets: tickets, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	terms := func() LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second)}
	}
	var ue *transfer.UnavailableError
	if _, err := pool.Acquire(ctx, keys, terms()); !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
		t.Fatalf("first call: %v, want CHANNELS_BUSY (ticket 7 kept)", err)
	}
	_ = clock.Sleep(ctx, 20*time.Second)
	keys.Channels = all[:4] // the secret rotated to 4 channelSeeds
	lease, err := pool.Acquire(ctx, keys, terms())
	if err != nil {
		t.Fatal(err)
	}
	if want := all[7%4].Address(); lease.Account != want {
		t.Errorf("leased %s, want ticket 7's channel among 4: %s", lease.Account, want)
	}
}

// A caller answered CHANNELS_BUSY that comes back after exactly its Retry-After is served by the
// slot its process kept, and books nothing: the Retry-After is the slot's time. HTTP's
// Retry-After is whole seconds; rounded up, the caller comes back up to a second after its slot,
// past the slot's grace (half a ledger) at 1 s ledgers, and the slot is dropped: it books at the
// end of the queue and is answered busy again, every time (at 1 s ledgers the run of
// TestMixedDeploymentsBoundWritesAndStarveNoOne leased 16 channel-ledgers of 96). Rounded down,
// it comes back within a second before its slot, which the call's wait (a ledger) covers.
func TestCallerBackAtRetryAfterMeetsItsSlot(t *testing.T) {
	for _, interval := range []time.Duration{time.Second, 5 * time.Second} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		start := clock.Now()
		spacing := interval / 4
		tickets := &memTickets{next: 9, nextAt: start.Add(2*interval + 300*time.Millisecond)}
		leases := &sourcestest.Leases{}
		keys, chans, pool := scheduledPool(t, clock, leases, tickets, 4)
		pool.cfg.LedgerInterval = func() time.Duration { return interval }
		ctx := context.Background()
		terms := func() LeaseTerms {
			now := clock.Now()
			return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second)}
		}
		_, err := pool.Acquire(ctx, keys, terms())
		var ue *transfer.UnavailableError
		if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
			t.Fatalf("%v ledgers: first call %v, want CHANNELS_BUSY", interval, err)
		}
		// Other processes queue behind it meanwhile.
		for range 8 {
			if _, _, _, _, err := tickets.TakeTicket(ctx, clock.Now(), spacing, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		_ = clock.Sleep(ctx, ue.RetryAfter)
		lease, err := pool.Acquire(ctx, keys, terms())
		if err != nil {
			t.Fatalf("%v ledgers: the call back after Retry-After %v: %v, want its kept slot's lease", interval, ue.RetryAfter, err)
		}
		if want := chans[9%4].Address(); lease.Account != want {
			t.Errorf("%v ledgers: leased %s, want ticket 9's channel %s", interval, lease.Account, want)
		}
		if st := pool.Stats(); st.Tickets != 1 || st.Reused != 1 {
			t.Errorf("%v ledgers: stats %+v, want one booking and its slot reused", interval, st)
		}
	}
}

// A slot's release point is that of the ledger it falls in, however far the latest close reads
// ahead of this process's clock (a network close time years off, read from a misconfigured node,
// steps back in one go rather than a ledger at a time): 4 s after a close on the grid of that
// close, in the ledger that holds the slot.
func TestReleasePointWithACloseFarAhead(t *testing.T) {
	const iv = 5 * time.Second
	at := time.Unix(1_800_000_000, 0)
	for _, ahead := range []time.Duration{0, 3 * time.Second, time.Hour, 10 * 365 * 24 * time.Hour} {
		lastClose := at.Add(ahead)
		start := ledgerStart(at, lastClose, iv)
		got := releasePoint(start, lastClose, iv)
		if start.After(at) || !start.Add(iv).After(at) || got.Sub(start) != 4*time.Second || lastClose.Sub(start)%iv != 0 {
			t.Errorf("close %v ahead: the ledger from at%+v, its point at%+v; want the ledger holding at, its point 4 s in", ahead, start.Sub(at), got.Sub(at))
		}
	}
}

// lostLeaseAnswers applies every lease and then reports an error that is no failed condition (a
// timeout: the answer lost after the write applied).
type lostLeaseAnswers struct{ *sourcestest.Leases }

func (l lostLeaseAnswers) LeaseChannel(ctx context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error {
	if err := l.Leases.LeaseChannel(ctx, channel, owner, now, until, maxTime, ledgerClose); err != nil {
		return err
	}
	return errors.New("read tcp: i/o timeout (the lease applied, its answer lost)")
}

// A lease write whose answer is lost (the SDK gave up after it applied) is answered
// STORE_UNAVAILABLE, nothing submitted, and that is true: no envelope was built. The lease it
// may have written names an owner nobody will use, and would keep the channel from every slot
// until a ledger closed after its maxTime; the call releases it (a conditional delete on its own
// owner, a no-op when the write did not apply), on the calendar and off it.
func TestLostLeaseAnswerLeavesNoChannelHeld(t *testing.T) {
	for _, scheduled := range []bool{true, false} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		start := clock.Now()
		leases := &sourcestest.Leases{}
		var tickets TicketStore = &memTickets{}
		if !scheduled {
			tickets = nil
		}
		keys, _, pool := scheduledPool(t, clock, lostLeaseAnswers{leases}, tickets, 2)
		_, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(60 * time.Second), LedgerClose: start})
		var ue *transfer.UnavailableError
		if !errors.As(err, &ue) || ue.Code != transfer.CodeStoreUnavailable {
			t.Fatalf("scheduled %v: %v, want STORE_UNAVAILABLE", scheduled, err)
		}
		if n := leases.Leased(); n != 0 {
			t.Errorf("scheduled %v: %d channels left leased by a call that submitted nothing, want 0", scheduled, n)
		}
	}
}
