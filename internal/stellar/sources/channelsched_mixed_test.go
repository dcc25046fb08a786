package sources

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// procSpec is one process (a Lambda environment) of a mixed deployment sharing one table: its
// channel count, its ledger-interval estimate and its calendar (nil: the shared one; a failing
// store makes it lease unscheduled).
type procSpec struct {
	count    int
	estimate time.Duration
	tickets  TicketStore
	// callers is how many concurrent callers the process serves (SubmitterFunction's batch, a
	// long-running process); 0 means one.
	callers int
	// skew is how far the process's clock runs ahead of the others' (negative: behind).
	skew time.Duration
}

// skewedClock is a process's clock skew ahead of the shared virtual clock.
type skewedClock struct {
	*vclock.Clock
	skew time.Duration
}

func (c skewedClock) Now() time.Time { return c.Clock.Now().Add(c.skew) }

// mixedRun is what runMixed saw.
type mixedRun struct {
	leases, writes, calls, busy int
	// maxWrites is the most lease writes one call made; maxGap the longest a process went
	// without a lease (its caller retrying on every Retry-After); falseBusy the busy answers given
	// to a caller that came back at the Retry-After it was given and met a calendar slot in the
	// future again beyond its wait.
	maxWrites int
	maxGap    time.Duration
	perProc   []int
	// scheduledWrites is the most lease writes one call of a process on the shared calendar made.
	scheduledWrites int
}

// runMixed runs procs, one caller each, for ledgers ledgers of interval (the network's), over
// one lease table and the shared calendar: a caller answered CHANNELS_BUSY sleeps its
// Retry-After and calls again; a lease is held until the first close after it plus hold (the
// ledger seen, the outcome written), then released. Every channel key is derived from one master
// seed, so processes with different counts share the first channels.
func runMixed(t *testing.T, procs []procSpec, interval, hold time.Duration, ledgers int) mixedRun {
	t.Helper()
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	end := start.Add(time.Duration(ledgers) * interval)
	lastClose := func(now time.Time) time.Time { return start.Add(now.Sub(start).Truncate(interval)) }
	leases, shared := &sourcestest.Leases{}, &memTickets{}
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		run     = mixedRun{perProc: make([]int, len(procs))}
		holders = map[string]string{} // channel -> lease owner holding it now
		errs    []error
	)
	release := clock.Hold()
	ctx := context.Background()
	for i, spec := range procs {
		tickets := spec.tickets
		if tickets == nil {
			tickets = shared
		}
		pool, err := NewChannelPool(ChannelPoolConfig{Leases: perCallLeases{leases}, Tickets: tickets, Count: spec.count, Clock: skewedClock{clock, spec.skew},
			LedgerInterval: func() time.Duration { return spec.estimate }})
		if err != nil {
			t.Fatal(err)
		}
		for range max(spec.callers, 1) {
			clock.Go(&wg, func() {
				lastLease := clock.Now()
				for clock.Now().Before(end) {
					now := clock.Now()
					cw := &callWrites{}
					lease, err := pool.Acquire(context.WithValue(ctx, callWritesKey{}, cw), keys, LeaseTerms{Until: now.Add(25 * time.Second), MaxTime: now.Add(20 * time.Second), LedgerClose: lastClose(now)})
					w := cw.n
					mu.Lock()
					run.calls++
					run.writes += w
					run.maxWrites = max(run.maxWrites, w)
					if spec.tickets == nil {
						run.scheduledWrites = max(run.scheduledWrites, w)
					}
					mu.Unlock()
					var ue *transfer.UnavailableError
					if errors.As(err, &ue) && ue.Code == CodeChannelsBusy {
						mu.Lock()
						run.busy++
						if ue.RetryAfter <= 0 || ue.RetryAfter > time.Duration(calendarHorizon+2)*max(interval, spec.estimate) {
							errs = append(errs, fmt.Errorf("process %d: CHANNELS_BUSY with Retry-After %v", i, ue.RetryAfter))
						}
						mu.Unlock()
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
					mu.Lock()
					if h, ok := holders[lease.Account]; ok {
						errs = append(errs, fmt.Errorf("channel %s leased by %s while %s holds it", lease.Account, lease.Owner, h))
					}
					holders[lease.Account] = lease.Owner
					run.leases++
					run.perProc[i]++
					run.maxGap = max(run.maxGap, leasedAt.Sub(lastLease))
					mu.Unlock()
					lastLease = leasedAt
					closeAt := lastClose(leasedAt).Add(interval)
					_ = clock.Sleep(ctx, closeAt.Add(hold).Sub(leasedAt))
					mu.Lock()
					delete(holders, lease.Account)
					mu.Unlock()
					pool.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
				}
			})
		}
	}
	release()
	wg.Wait()
	for _, err := range errs {
		t.Error(err)
	}
	return run
}

// callWrites counts the lease writes made with a call's context.
type callWrites struct{ n int }

type callWritesKey struct{}

// perCallLeases counts each LeaseChannel in the callWrites of its context: one pool's concurrent
// calls share its stats.
type perCallLeases struct{ LeaseStore }

func (l perCallLeases) LeaseChannel(ctx context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error {
	if c, ok := ctx.Value(callWritesKey{}).(*callWrites); ok {
		c.n++
	}
	return l.LeaseStore.LeaseChannel(ctx, channel, owner, now, until, maxTime, ledgerClose)
}

func (r mixedRun) String() string {
	return fmt.Sprintf("%d calls, %d leases, %d busy, %.2f lease writes per lease, at most %d in a call (%d on the calendar), longest a process went without a lease %v, leases per process %v",
		r.calls, r.leases, r.busy, float64(r.writes)/float64(max(r.leases, 1)), r.maxWrites, r.scheduledWrites, r.maxGap, r.perProc)
}

func repeat(n int, s procSpec) []procSpec {
	out := make([]procSpec, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// The lease writes of one call on the calendar are bounded (TriesPerRound, 3) and no process on
// it starves, in every mixed deployment the calendar can meet: two channel counts deployed side
// by side (CHANNEL_COUNT 16 and 4 sharing the first 4 channels and the calendar), ledger-interval
// estimates that disagree, 1 s ledgers with releases before and after the slot's point. Beside
// processes whose calendar fails (leasing unscheduled: a version without the calendar during a
// deployment), the unscheduled ones settle on a channel each and re-lease it as they release it,
// as they do among themselves without any calendar (12 of 16 processes never lease in that run):
// the scheduled ones are bounded there too, and left to that race. A process whose clock is off
// by seconds books on its own clock and leases that far from its slots, meeting the channels the
// neighbouring slots' callers hold: it starves itself (0 or 1 leases in 24 ledgers, 3 s fast,
// where the others lease 6), and the others lose nothing; 10 minutes fast, its bookings restart
// the calendar beyond the others' horizon, and theirs restart it back: every call stays within
// TriesPerRound writes, the channels stay fully used, but some processes lease only once.
func TestMixedDeploymentsBoundWritesAndStarveNoOne(t *testing.T) {
	const five = 5 * time.Second
	failing := &memTickets{fail: errors.New("ThrottlingException")}
	cases := []struct {
		name      string
		procs     []procSpec
		interval  time.Duration
		hold      time.Duration
		minLeases int // per process on the calendar
	}{
		{"homogeneous, 4 channels, 16 processes", repeat(16, procSpec{count: 4, estimate: five}), five, 2 * time.Second, 5},
		{"CHANNEL_COUNT 16 and 4 deployed side by side", append(repeat(8, procSpec{count: 16, estimate: five}), repeat(8, procSpec{count: 4, estimate: five})...), five, 2 * time.Second, 3},
		{"estimates of 5 s and 1 s on 5 s ledgers", append(repeat(8, procSpec{count: 4, estimate: five}), repeat(8, procSpec{count: 4, estimate: time.Second})...), five, 2 * time.Second, 1},
		{"calendar failing for half the processes", append(repeat(8, procSpec{count: 4, estimate: five}), repeat(8, procSpec{count: 4, estimate: five, tickets: failing})...), five, 2 * time.Second, 0},
		{"4 processes of 8 concurrent callers each (kept slots shared by a process's calls)", repeat(4, procSpec{count: 4, estimate: five, callers: 8}), five, 2 * time.Second, 5},
		{"one process's clock 3 s fast", append(repeat(15, procSpec{count: 4, estimate: five}), procSpec{count: 4, estimate: five, skew: 3 * time.Second}), five, 2 * time.Second, 3},
		{"one process's clock 3 s slow", append(repeat(15, procSpec{count: 4, estimate: five}), procSpec{count: 4, estimate: five, skew: -3 * time.Second}), five, 2 * time.Second, 3},
		{"one process's clock 10 minutes fast", append(repeat(15, procSpec{count: 4, estimate: five}), procSpec{count: 4, estimate: five, skew: 10 * time.Minute}), five, 2 * time.Second, 1},
		{"1 s ledgers, released 0.4 s after the close", repeat(16, procSpec{count: 4, estimate: time.Second}), time.Second, 400 * time.Millisecond, 5},
		{"1 s ledgers, released 1.5 s after the close", repeat(16, procSpec{count: 4, estimate: time.Second}), time.Second, 1500 * time.Millisecond, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := runMixed(t, c.procs, c.interval, c.hold, 24)
			t.Log(r)
			for i, n := range r.perProc {
				// A process whose own clock is off is left out: it leases before or after its
				// slots and meets the channels others hold (see the test's doc).
				if c.procs[i].tickets == nil && c.procs[i].skew == 0 && n < c.minLeases {
					t.Errorf("process %d leased %d times in 24 ledgers, want at least %d", i, n, c.minLeases)
				}
			}
			if r.scheduledWrites > 3 {
				t.Errorf("a call on the calendar made %d lease writes, want at most TriesPerRound (3)", r.scheduledWrites)
			}
		})
	}
}
