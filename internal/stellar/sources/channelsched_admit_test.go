package sources

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// admitPool is scheduledPool with a latest ledger close (lastClose; zero: none known) for admit.
func admitPool(t *testing.T, clock *vclock.Clock, leases LeaseStore, tickets TicketStore, count int, lastClose time.Time) (signing.Keys, []*keypair.Full, *ChannelPool) {
	t.Helper()
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	chans, err := ChannelKeys(keys, count)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Tickets: tickets, Count: count, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second },
		LatestClose:    func(context.Context) time.Time { return lastClose }})
	if err != nil {
		t.Fatal(err)
	}
	return keys, chans, pool
}

func wantBusy(t *testing.T, err error, retryAfter time.Duration) {
	t.Helper()
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy || ue.RetryAfter != retryAfter {
		t.Fatalf("%v, want CHANNELS_BUSY with Retry-After %v", err, retryAfter)
	}
}

// A slot beyond the wait is answered CHANNELS_BUSY by admit, before any claim: no lease written,
// no time waited, Retry-After the time to the slot. The process keeps the slot: a later call's
// admission asks the calendar nothing, and the call at the slot's time is admitted and leases the
// slot's channel with the one booking made.
func TestAdmitAnswersBusyWithNoLeaseAndKeepsTheSlot(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases := &sourcestest.Leases{}
	tickets := &memTickets{next: 6, nextAt: start.Add(20 * time.Second)}
	// Ledgers close 4 s before start, every 5 s: the release points (0.6 into a ledger, from a
	// second after its close time: closeStampLag) fall on start + 5k s, so the slot at start + 20 s
	// stays there.
	keys, chans, pool := admitPool(t, clock, leases, tickets, 4, start.Add(-4*time.Second))
	ctx := context.Background()
	maxTime := func() time.Time { return clock.Now().Add(60 * time.Second) }
	_, err := pool.Admit(ctx, chans, maxTime())
	wantBusy(t, err, 20*time.Second)
	_ = clock.Sleep(ctx, 5*time.Second)
	_, err = pool.Admit(ctx, chans, maxTime())
	wantBusy(t, err, 15*time.Second)
	if len(leases.Granted()) != 0 || clock.Now().Sub(start) != 5*time.Second {
		t.Fatalf("busy admissions wrote leases %v or waited", leases.Granted())
	}
	_ = clock.Sleep(ctx, 15*time.Second)
	actx, err := pool.Admit(ctx, chans, maxTime())
	if err != nil {
		t.Fatalf("at the slot's time: %v", err)
	}
	now := clock.Now()
	lease, err := pool.Acquire(actx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now.Add(-4 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if want := chans[6%4].Address(); lease.Account != want {
		t.Errorf("leased %s, want ticket 6's channel %s", lease.Account, want)
	}
	if n := tickets.booked(); n != 1 {
		t.Errorf("%d bookings for three calls, want 1", n)
	}
	if st := pool.Stats(); st.Tickets != 1 || st.Busy != 2 || st.Leases != 1 || st.Reused != 2 || st.Collisions != 0 {
		t.Errorf("stats %+v, want 1 ticket, 2 busy, 1 lease, 2 reused, no collision", st)
	}
}

// admit answers what the acquire after a claim would have: two processes on calendars in the
// same state, one asked by admit, the other by acquire, give the same Retry-After.
func TestAdmitAnswersWhatTheAcquireWould(t *testing.T) {
	for _, ahead := range []time.Duration{7 * time.Second, 12*time.Second + 300*time.Millisecond, 31 * time.Second} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		start := clock.Now()
		lastClose := start.Add(-1200 * time.Millisecond)
		_, chans, admitting := admitPool(t, clock, &sourcestest.Leases{}, &memTickets{next: 3, nextAt: start.Add(ahead)}, 4, lastClose)
		keys, _, acquiring := admitPool(t, clock, &sourcestest.Leases{}, &memTickets{next: 3, nextAt: start.Add(ahead)}, 4, lastClose)
		maxTime := start.Add(60 * time.Second)
		_, err := admitting.Admit(context.Background(), chans, maxTime)
		_, want := acquiring.Acquire(context.Background(), keys, LeaseTerms{Until: maxTime, MaxTime: maxTime, LedgerClose: lastClose})
		var a, b *transfer.UnavailableError
		if !errors.As(err, &a) || !errors.As(want, &b) || a.Code != b.Code || a.RetryAfter != b.RetryAfter {
			t.Errorf("calendar %v ahead: admit %v, acquire %v", ahead, err, want)
		}
		if clock.Now() != start {
			t.Errorf("calendar %v ahead: the answers took %v", ahead, clock.Now().Sub(start))
		}
	}
}

// A slot within the wait is admitted, and the call's acquire leases it: one booking per call,
// not one by the admission and another by the acquire.
func TestAdmitWithinTheWaitBooksOnceForTheCall(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &memTickets{}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, clock.Now().Add(-time.Second))
	ctx := context.Background()
	now := clock.Now()
	actx, err := pool.Admit(ctx, chans, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := pool.Acquire(actx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Account != chans[0].Address() || tickets.booked() != 1 {
		t.Errorf("leased %s after %d bookings, want ticket 0's channel %s after 1", lease.Account, tickets.booked(), chans[0].Address())
	}
	if st := pool.Stats(); st.Tickets != 1 || st.Reused != 0 || st.Busy != 0 {
		t.Errorf("stats %+v", st)
	}
}

// admit decides nothing where it cannot: with no ledger close known (a new process whose read of
// the latest ledger failed), or with a calendar that fails. The acquire after the claim decides.
func TestAdmitDecidesNothingItCannotKnow(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	ctx := context.Background()
	tickets := &memTickets{next: 6, nextAt: clock.Now().Add(20 * time.Second)}
	_, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, time.Time{})
	if _, err := pool.Admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil || tickets.booked() != 0 {
		t.Fatalf("no ledger close known: %v after %d bookings, want nil after none", err, tickets.booked())
	}
	failing := &memTickets{fail: errors.New("ThrottlingException")}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, failing, 4, clock.Now().Add(-time.Second))
	if _, err := pool.Admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("a failing calendar: %v, want nil", err)
	}
	now := clock.Now()
	if _, err := pool.Acquire(ctx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now.Add(-time.Second)}); err != nil {
		t.Fatalf("the acquire after a failed admission booking: %v, want an unscheduled lease", err)
	}
	noCalendar, err := NewChannelPool(ChannelPoolConfig{Leases: &sourcestest.Leases{}, Count: 4, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noCalendar.Admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("no calendar: %v, want nil", err)
	}
}

// One process serving concurrent callers: the slot admit gives a call is that call's alone. A
// second call admitted meanwhile books a slot of its own rather than take the first call's, and
// each call's acquire leases its own slot's channel; no call is answered busy.
func TestAnAdmittedSlotIsItsCallsAlone(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &memTickets{}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, clock.Now().Add(-time.Second))
	ctx := context.Background()
	now := clock.Now()
	maxTime := now.Add(30 * time.Second)
	first, err := pool.Admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	second, err := pool.Admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	terms := LeaseTerms{Until: maxTime, MaxTime: maxTime, LedgerClose: now.Add(-time.Second)}
	b, err := pool.Acquire(second, keys, terms)
	if err != nil {
		t.Fatal(err)
	}
	a, err := pool.Acquire(first, keys, terms)
	if err != nil {
		t.Fatal(err)
	}
	if a.Account != chans[0].Address() || b.Account != chans[1].Address() {
		t.Errorf("the first call leased %s, the second %s; want tickets 0 and 1: %s and %s", a.Account, b.Account, chans[0].Address(), chans[1].Address())
	}
	if n := tickets.booked(); n != 2 {
		t.Errorf("%d bookings for two calls, want 2", n)
	}
	if _, ok := pool.admittedFrom(first); ok {
		t.Error("an admitted slot was taken twice")
	}
}

// A call admitted whose claim then loses (a replay) never leases: when it ends, Release keeps its
// slot for the process's next call, which is admitted on it without booking and leases its
// channel. A slot the call's acquire took is not kept again.
func TestAnUnusedAdmittedSlotIsKeptForTheNextCall(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	tickets := &memTickets{next: 6, nextAt: start.Add(2 * time.Second)}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, start.Add(-4*time.Second))
	ctx := context.Background()
	maxTime := start.Add(60 * time.Second)
	replay, err := pool.Admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	pool.Unadmit(replay) // the claim lost to a settled item: no acquire
	next, err := pool.Admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	lease, err := pool.Acquire(next, keys, LeaseTerms{Until: maxTime, MaxTime: maxTime, LedgerClose: now.Add(-4 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	pool.Unadmit(next)
	if lease.Account != chans[6%4].Address() || tickets.booked() != 1 {
		t.Errorf("leased %s after %d bookings, want the replay's slot (ticket 6: %s) after 1", lease.Account, tickets.booked(), chans[6%4].Address())
	}
	if _, ok := pool.reserved(clock.Now(), time.Hour); ok {
		t.Error("a slot its call leased was kept again")
	}
}

// While the calendar has room (this process's last booking found its slot within the wait), admit
// books nothing and the call claims first: a replay or a duplicate of a request in flight, whose
// claim loses, then costs no slot. Once a booking (here the acquire's, after a claim) finds the
// calendar full, admit books again and answers busy before the claim.
func TestAdmitBooksNothingWhileTheCalendarHasRoom(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	tickets := &memTickets{}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, start.Add(-4*time.Second))
	ctx := context.Background()
	maxTime := func() time.Time { return clock.Now().Add(60 * time.Second) }
	first, err := pool.Admit(ctx, chans, maxTime())
	if err != nil {
		t.Fatal(err)
	}
	pool.Unadmit(first) // a replay: its slot is kept for the next call
	if _, ok := pool.reserved(clock.Now(), time.Hour); !ok {
		t.Fatal("the replay's slot was not kept")
	} // taken: by the process's next call
	if actx, err := pool.Admit(ctx, chans, maxTime()); err != nil || actx != ctx || tickets.booked() != 1 {
		t.Fatalf("with room: %v after %d bookings, want nil and no slot after 1 (no booking before the claim)", err, tickets.booked())
	}
	tickets.mu.Lock()
	tickets.nextAt = clock.Now().Add(20 * time.Second) // other processes fill the calendar
	tickets.mu.Unlock()
	now := clock.Now()
	_, err = pool.Acquire(ctx, keys, LeaseTerms{Until: maxTime(), MaxTime: maxTime(), LedgerClose: now.Add(-4 * time.Second)})
	wantBusy(t, err, 20*time.Second)
	if _, ok := pool.reserved(clock.Now(), time.Hour); !ok {
		t.Fatal("the busy call's slot was not kept")
	} // taken: by the client's retry
	_, err = pool.Admit(ctx, chans, maxTime())
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy || ue.RetryAfter < 20*time.Second {
		t.Fatalf("the calendar full: %v, want CHANNELS_BUSY at least 20 s ahead", err)
	}
	if n := tickets.booked(); n != 3 {
		t.Fatalf("%d bookings, want 3: the first admission, the acquire's, the admission once full", n)
	}
}
