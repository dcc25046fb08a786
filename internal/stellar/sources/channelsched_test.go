package sources

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// memTickets is the channel calendar in memory, as internal/dynamo's TakeTicket keeps it: the
// next number, and the time booked for it, never before from; a restart answers the time it had.
type memTickets struct {
	mu     sync.Mutex
	next   int64
	nextAt time.Time
	// fail is returned without booking (a throttled or failed request); lose counts bookings
	// that apply but whose answer is lost (the caller sees an error, the number is used up).
	fail  error
	lose  int
	calls int
	// failFrom, when positive, fails every booking from that call on (1: the first).
	failFrom int
}

func (m *memTickets) TakeTicket(_ context.Context, from time.Time, spacing, horizon time.Duration) (int64, time.Time, bool, time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls++
	if m.fail != nil {
		return 0, time.Time{}, false, time.Time{}, m.fail
	}
	if m.failFrom > 0 && m.calls >= m.failFrom {
		return 0, time.Time{}, false, time.Time{}, errors.New("ThrottlingException")
	}
	n, at, restarted, was := m.next, m.nextAt, false, time.Time{}
	if at.Before(from) || horizon > 0 && at.After(from.Add(horizon)) {
		was = at                   // zero on a new calendar
		at, restarted = from, true // behind from, or stale (more than horizon ahead): restarted
	}
	m.next, m.nextAt = n+1, at.Add(spacing)
	if m.lose > 0 {
		m.lose--
		return 0, time.Time{}, false, time.Time{}, errors.New("read tcp: i/o timeout (the booking applied, its answer lost)")
	}
	return n, at, restarted, was, nil
}

func (m *memTickets) booked() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls
}

// scheduledPool is a pool of count channels on leases and the calendar tickets, 5 s ledgers.
func scheduledPool(t *testing.T, clock *vclock.Clock, leases LeaseStore, tickets TicketStore, count int) (signing.Keys, []*keypair.Full, *ChannelPool) {
	t.Helper()
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	chans, err := ChannelKeys(keys, count)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Tickets: tickets, Count: count, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	return keys, chans, pool
}

// Many processes, one calendar: 16 pools (Lambda environments: no shared memory) on 4 channels,
// one caller each, sending back to back; a transfer holds its channel until the first ledger
// close after its lease plus 2 s (the ledger shown by RPC, the outcome written), and a caller
// answered CHANNELS_BUSY sleeps its Retry-After. Scheduled, the slots of a channel come a ledger
// apart, aligned past the release, and calls beyond the wait answer at once: at most 0.05 failed
// lease writes per lease and every channel used every ledger. Unscheduled (Tickets nil, the pool
// before the calendar) the same run costs about 34 failed writes per lease.
func TestScheduledPoolSpreadsProcessesWithoutCollisions(t *testing.T) {
	const channels, processes, ledgers = 4, 16, 12
	interval := 5 * time.Second
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
	start := clock.Now()
	end := start.Add(ledgers * interval)
	lastClose := func(now time.Time) time.Time { return start.Add(now.Sub(start).Truncate(interval)) }
	pools := make([]*ChannelPool, processes)
	var keys signing.Keys
	for i := range pools {
		keys, _, pools[i] = scheduledPool(t, clock, leases, tickets, channels)
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		landed  = map[string]map[int64]bool{} // channel -> ledgers (by index) it carried a transfer in
		errs    []error
		release = clock.Hold()
	)
	ctx := context.Background()
	for _, pool := range pools {
		clock.Go(&wg, func() {
			for clock.Now().Before(end) {
				now := clock.Now()
				lease, err := pool.Acquire(ctx, keys, LeaseTerms{Until: now.Add(25 * time.Second), MaxTime: now.Add(20 * time.Second), LedgerClose: lastClose(now)})
				var ue *transfer.UnavailableError
				if errors.As(err, &ue) && ue.Code == CodeChannelsBusy {
					if ue.RetryAfter <= 0 {
						mu.Lock()
						errs = append(errs, fmt.Errorf("CHANNELS_BUSY without a Retry-After"))
						mu.Unlock()
					}
					_ = clock.Sleep(ctx, ue.RetryAfter)
					continue
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				leasedAt := clock.Now()
				closeAt := lastClose(leasedAt).Add(interval) // the transfer lands at the next close
				mu.Lock()
				if landed[lease.Account] == nil {
					landed[lease.Account] = map[int64]bool{}
				}
				ledger := int64(closeAt.Sub(start) / interval)
				if landed[lease.Account][ledger] {
					errs = append(errs, fmt.Errorf("channel %s carried two transfers into ledger %d", lease.Account, ledger))
				}
				landed[lease.Account][ledger] = true
				mu.Unlock()
				_ = clock.Sleep(ctx, closeAt.Add(2*time.Second).Sub(leasedAt))
				pool.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
			}
		})
	}
	release()
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d errors, first: %v", len(errs), errs[0])
	}
	var st PoolStats
	for _, p := range pools {
		s := p.Stats()
		st.Leases += s.Leases
		st.Collisions += s.Collisions
		st.Busy += s.Busy
		st.Waits += s.Waits
		st.Releases += s.Releases
		st.Tickets += s.Tickets
		st.Reused += s.Reused
	}
	used, first, last := 0, int64(1<<62), int64(0)
	for _, ls := range landed {
		used += len(ls)
		for l := range ls {
			first, last = min(first, l), max(last, l)
		}
	}
	failed := float64(st.Collisions) / float64(max(st.Leases, 1))
	share := float64(used) / float64(channels*(last-first+1))
	t.Logf("%d processes on %d channels over %d ledgers: %+v; %.3f failed lease writes per lease; channel-ledgers used %d (%.2f of the bound); %d bookings",
		processes, channels, ledgers, st, failed, used, share, tickets.booked())
	if failed > 0.05 {
		t.Errorf("%.3f failed lease writes per lease, want at most 0.05", failed)
	}
	if share < 0.9 {
		t.Errorf("%.2f of the channel bound used, want at least 0.9", share)
	}
}

// A slot more than the wait ahead is answered CHANNELS_BUSY at once: no time waited, no lease
// written, Retry-After the time to the slot. The process keeps the slot: its next call asks the
// calendar nothing (answered busy again while the slot is ahead), and the call that comes at the
// slot's time leases its channel without booking another.
func TestScheduledBusyAnswersAtOnceAndKeepsTheSlot(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases := &sourcestest.Leases{}
	tickets := &memTickets{next: 6, nextAt: start.Add(20 * time.Second)} // the calendar booked 20 s ahead
	keys, chans, pool := scheduledPool(t, clock, leases, tickets, 4)
	ctx := context.Background()
	terms := func() LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second)}
	}
	for i, want := range []time.Duration{20 * time.Second, 15 * time.Second} {
		_, err := pool.Acquire(ctx, keys, terms())
		var ue *transfer.UnavailableError
		if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy || ue.RetryAfter != want {
			t.Fatalf("call %d: %v, want CHANNELS_BUSY with Retry-After %v", i+1, err, want)
		}
		if waited := clock.Now().Sub(start); waited != time.Duration(i)*5*time.Second {
			t.Errorf("call %d answered after %v of waiting", i+1, waited-time.Duration(i)*5*time.Second)
		}
		_ = clock.Sleep(ctx, 5*time.Second)
	}
	if len(leases.Granted()) != 0 || pool.Stats().Collisions != 0 {
		t.Fatalf("busy calls wrote leases: granted %v, stats %+v", leases.Granted(), pool.Stats())
	}
	_ = clock.Sleep(ctx, 10*time.Second) // the slot's time
	lease, err := pool.Acquire(ctx, keys, terms())
	if err != nil {
		t.Fatal(err)
	}
	if want := chans[6%4].Address(); lease.Account != want {
		t.Errorf("leased %s, want ticket 6's channel %s", lease.Account, want)
	}
	if n := tickets.booked(); n != 1 {
		t.Errorf("%d bookings for three calls, want 1 (the slot kept by the process)", n)
	}
	if st := pool.Stats(); st.Reused != 2 || st.Tickets != 1 || st.Busy != 2 || st.Leases != 1 {
		t.Errorf("stats %+v", st)
	}
}

// A slot whose channel is still quarantined (its lease expired, its envelope could land until a
// ledger closes after maxTime: a holder that died in doubt) costs one failed lease write, and the
// call books the next slot, another channel; the quarantined channel is not leased.
func TestScheduledSlotOnAQuarantinedChannelMovesOn(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases := &sourcestest.Leases{}
	tickets := &memTickets{}
	keys, chans, pool := scheduledPool(t, clock, leases, tickets, 2)
	ctx := context.Background()
	// A dead holder's lease on ticket 0's channel: expired, quarantined until start + 20 s.
	if err := leases.LeaseChannel(ctx, chans[0].Address(), "dead-process", start.Add(-time.Minute), start.Add(-time.Second), start.Add(20*time.Second), start.Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	lease, err := pool.Acquire(ctx, keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second), LedgerClose: start})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Account != chans[1].Address() {
		t.Errorf("leased %s, want the next slot's channel %s", lease.Account, chans[1].Address())
	}
	if st := pool.Stats(); st.Collisions != 1 || st.Tickets != 2 {
		t.Errorf("stats %+v, want one failed write and two bookings", st)
	}
	// The quarantine ends only with a ledger closed after its maxTime.
	later := start.Add(21 * time.Second)
	if err := leases.LeaseChannel(ctx, chans[0].Address(), "x", later, later.Add(time.Minute), later.Add(time.Minute), start.Add(20*time.Second)); !errors.Is(err, transfer.ErrConditionFailed) {
		t.Errorf("quarantined channel leased: %v", err)
	}
}

// A slot on a held channel, then the calendar throttled: the call leases unscheduled (the free
// channel), rather than answering STORE_UNAVAILABLE.
func TestScheduledCalendarFailingAfterACollision(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	leases := &sourcestest.Leases{}
	tickets := &memTickets{failFrom: 2}
	keys, chans, pool := scheduledPool(t, clock, leases, tickets, 2)
	ctx := context.Background()
	if err := leases.LeaseChannel(ctx, chans[0].Address(), "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
		t.Fatal(err)
	}
	lease, err := pool.Acquire(ctx, keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second), LedgerClose: start})
	if err != nil {
		t.Fatalf("acquire = %v, want the free channel leased unscheduled", err)
	}
	if lease.Account != chans[1].Address() {
		t.Errorf("leased %s, want %s", lease.Account, chans[1].Address())
	}
}

// A process that leased a slot's channel and died (no release; its lease runs to its deadline):
// the channel's next slot meets the live lease, one failed write, and the call leases the next
// slot's channel. Once the lease has expired and a ledger has closed past its envelope's maxTime,
// the channel's slot leases it again.
func TestScheduledCrashedHolder(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
	keys, chans, dead := scheduledPool(t, clock, leases, tickets, 2)
	_, _, live := scheduledPool(t, clock, leases, tickets, 2)
	ctx := context.Background()
	terms := func() LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(14 * time.Second), MaxTime: now.Add(12 * time.Second), LedgerClose: now.Add(-time.Second)}
	}
	// The dead lease runs 30 s (its envelope's maxTime 28 s): longer than the three calls below
	// take, however soon their slots come.
	start := clock.Now()
	held, err := dead.Acquire(ctx, keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(28 * time.Second),
		LedgerClose: start.Add(-time.Second)}) // ticket 0, then the process dies
	if err != nil || held.Account != chans[0].Address() {
		t.Fatalf("dead process: %s, %v", held.Account, err)
	}
	// acquire answers a lease, sleeping out CHANNELS_BUSY's Retry-After as a client would.
	acquire := func() Lease {
		t.Helper()
		for range 10 {
			l, err := live.Acquire(ctx, keys, terms())
			var ue *transfer.UnavailableError
			if errors.As(err, &ue) && ue.Code == CodeChannelsBusy {
				_ = clock.Sleep(ctx, ue.RetryAfter)
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			return l
		}
		t.Fatal("ten calls answered CHANNELS_BUSY")
		return Lease{}
	}
	got := []string{}
	for range 3 { // channel 0's slots meet the dead lease: only channel 1 is leased
		l := acquire()
		if !clock.Now().Before(start.Add(30 * time.Second)) {
			t.Fatalf("a call leased at %v, after the dead lease ended", clock.Now().Sub(start))
		}
		got = append(got, l.Account)
		live.Release(ctx, l, transfer.Envelope{Channel: l.Account})
	}
	for i, a := range got {
		if a != chans[1].Address() {
			t.Errorf("call %d leased %s while the dead process holds channel 0", i+1, a)
		}
	}
	if st := live.Stats(); st.Collisions < 1 || st.Collisions > st.Leases {
		t.Errorf("stats %+v: want one failed write per slot on the held channel", st)
	}
	// 32 s after it, the dead lease has expired and a ledger closed after its maxTime.
	_ = clock.Sleep(ctx, start.Add(32*time.Second).Sub(clock.Now()))
	seen := map[string]bool{}
	for range 2 {
		l := acquire()
		seen[l.Account] = true
		live.Release(ctx, l, transfer.Envelope{Channel: l.Account})
	}
	if !seen[chans[0].Address()] {
		t.Errorf("the dead process's channel never leased again after its lease and quarantine ended: %v", seen)
	}
}

// The calendar failing (throttled, unavailable) costs no transfer: the call leases unscheduled, as
// the pool did before. A booking that applied but whose answer was lost skips one ticket: the next
// booking is the one after it, and nobody holds the skipped one.
func TestScheduledCalendarFailureLeasesUnscheduled(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases := &sourcestest.Leases{}
	tickets := &memTickets{fail: errors.New("ProvisionedThroughputExceededException")}
	keys, chans, pool := scheduledPool(t, clock, leases, tickets, 2)
	ctx := context.Background()
	now := clock.Now()
	terms := LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second)}
	l, err := pool.Acquire(ctx, keys, terms)
	if err != nil {
		t.Fatalf("calendar throttled: %v, want an unscheduled lease", err)
	}
	pool.Release(ctx, l, transfer.Envelope{Channel: l.Account})
	if st := pool.Stats(); st.Leases != 1 || st.Tickets != 0 {
		t.Errorf("stats %+v", st)
	}
	tickets.mu.Lock()
	tickets.fail, tickets.lose = nil, 1
	tickets.mu.Unlock()
	if l, err = pool.Acquire(ctx, keys, terms); err != nil { // ticket 0 applied, its answer lost: unscheduled
		t.Fatal(err)
	}
	pool.Release(ctx, l, transfer.Envelope{Channel: l.Account})
	if l, err = pool.Acquire(ctx, keys, terms); err != nil {
		t.Fatal(err)
	}
	if l.Account != chans[1].Address() {
		t.Errorf("leased %s, want ticket 1's channel %s (ticket 0 skipped)", l.Account, chans[1].Address())
	}
}

// A slot's release point is 0.6 into the ledger its time falls in, timed from a second after the
// ledger's close time (closeStampLag), within half the rest of the ledger: at 5 s ledgers 4 s
// after the close time, at 1 s ledgers 0.8 s after it; the slot's own time when no close is known.
func TestReleasePointOfASlotsLedger(t *testing.T) {
	close0 := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		iv, at, want time.Duration // at and want from close0
	}{
		{5 * time.Second, 0, 4 * time.Second},
		{5 * time.Second, 4 * time.Second, 4 * time.Second},
		{5 * time.Second, 5*time.Second - 1, 4 * time.Second},
		{5 * time.Second, 5 * time.Second, 9 * time.Second},
		{5 * time.Second, -7 * time.Second, -6 * time.Second}, // before the close read: the point of that ledger
		{5 * time.Second, -9 * time.Second, -6 * time.Second},
		{5 * time.Second, 12 * time.Second, 14 * time.Second},
		{5 * time.Second, 40*time.Second + 1, 44 * time.Second},
		{time.Second, 0, 800 * time.Millisecond},
		{time.Second, 2500 * time.Millisecond, 2800 * time.Millisecond},
		{10 * time.Second, 0, 7 * time.Second},
	} {
		got := releasePoint(ledgerStart(close0.Add(c.at), close0, c.iv), close0, c.iv)
		if !got.Equal(close0.Add(c.want)) {
			t.Errorf("%v ledgers: the release point of close+%v = close+%v, want close+%v", c.iv, c.at, got.Sub(close0), c.want)
		}
	}
	if at := close0.Add(time.Second); !releasePoint(ledgerStart(at, time.Time{}, 5*time.Second), time.Time{}, 5*time.Second).Equal(at) {
		t.Error("no close known: the slot's own time")
	}
}
