package sources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Channel assignment across processes.
//
// Lambda runs each concurrent invocation in an execution environment of its own: the pool's
// processes share nothing but the table. Left to guess, they collide: at 4 callers per channel,
// one environment per caller, channels tried in random order cost 28 to 92 failed lease writes
// per lease and 64 to 192 DynamoDB requests per transfer at 4 to 64 channels (internal/loadtest's
// BenchmarkChannelsLambda with BENCH_UNSCHEDULED=1). So every lease is
// scheduled on a calendar kept in one item (TicketStore; internal/dynamo/channeltickets.go), a
// virtual scheduler (the generic cell rate algorithm): each booking gets the next ticket n and a
// time, spacing = interval / channels after the previous booking's and never before the start of
// the ledger the call falls in (the latest close). Ticket n leases channel n mod channels in the
// ledger its time falls in. So:
//
//   - consecutive bookings, from any processes, go to distinct channels, and a ledger has count
//     tickets, one per channel: a channel's slots come one interval apart, so in consecutive
//     ledgers, as often as it can carry a transaction (stellar-core queues one per source
//     account). A slot leases at 0.6 into its ledger, timed from a second after the ledger's
//     close time (the release point: releasePoint), when the transfer of the channel's previous
//     slot, which landed at the ledger's opening close, has been seen and released; at once when
//     that point has passed, or when the process knows the channel idle (slotTime);
//   - the calendar is a queue in arrival order across every process: a booking more than the wait
//     (about a ledger) ahead is answered CHANNELS_BUSY at once, no lease write made, with the
//     Retry-After its slot's time gives: the time the pool has for it, not a guess;
//   - the process keeps that slot (reservations) and gives it to its next call, which then asks
//     nothing until the slot's time: a Lambda environment takes its next invocation as soon as it
//     is idle, so an environment under overload answers CHANNELS_BUSY from its reservation with no
//     request, and leases at the slot's time with one write. Bookings are at most one per waiting
//     call, not one per poll;
//   - the booking and that decision come before the call claims its idempotency key (admit, asked
//     through the ledger's Admit, the orchestrator's transfer.Admission): a call the calendar has
//     no slot for within the wait is answered busy after one read of its key; claiming first
//     would cost the claim and its release. With 4 callers per channel about one call in two is
//     answered busy whatever the Retry-After (each transfer spends about 3 ledgers outside its
//     calls, a call waits one), so this spares about one request in eight
//     (BenchmarkChannelsLambda: 8.0 requests per transfer with BENCH_CLAIM_FIRST=1, 7.1 with the
//     admission).
//
// The alternatives weighed: ranges of channels per environment need a count of environments,
// which nothing knows (Lambda adds and reaps them); one pool item of free channels puts every
// lease and release on one item that grows with the channels (a write costs a unit per KB: 8 units
// per write at 64 channels, every write on one partition's 1,000 units a second) and makes a read
// before every lease; a queue of free channels (SQS) loses a channel whose holder dies until a
// sweep puts it back, and adds a service. A calendar slot costs one small UpdateItem per booking,
// keeps the lease items and every lease rule unchanged (the lease's conditional write still decides
// who holds a channel: quarantine, one envelope per channel, lost answers), and degrades to the
// unscheduled pool when the calendar fails.
//
// A ledger's tickets lease in that ledger. SubmitterFunction's invocations book BatchSize
// tickets at once, one per run, each of MaxConcurrency environments, BatchSize x MaxConcurrency
// being the channel count, and an invocation lasts until its last transfer settles. Booked from
// now and leased at the release point at or after their times, a batch's slots spread over
// BatchSize spacings, the later ones fall in the next ledger, and the invocation lasts two
// ledgers instead of one; meanwhile nobody books, and a calendar restarted at now loses the
// ledger's tickets before now: async bursts reach 0.56 to 0.71 of the bound
// (internal/loadtest's BenchmarkAsync; traced at 16 channels, 8 x 2, 10 transfers each: batches
// straddled a close, and invocations lasted 6.5 to 11.2 s at 5 s ledgers). Booked from the ledger's
// start and leased at their own ledger's release point, every batch of an invocation that starts
// once the previous one settled (about half a ledger in) lands at the next close: 1.00 of the
// bound at 4, 16 and 64 channels (TestALedgersTicketsAllLeaseInThatLedger). A slot restarted at
// the ledger's start is safe to lease at once: the calendar was behind it, so the count slots
// before it span a ledger and end before this one, and its channel's previous slot is two ledgers
// back.
//
// Weighed for it: a batch booking (one UpdateItem giving an invocation k consecutive tickets at
// one time) needs the invocation's runs, separate goroutines each with its own call, to gather
// into one booking, and k slots at one time put a channel's next slot less than an interval after
// its last unless the time is a ledger's (which is this rule); a calendar kept in ledgers (ticket
// n in ledger n / count) needs a ledger numbering every process agrees on, which the close times
// give only approximately, and an item of another shape; a burst tolerance (slots up to a bound
// before their time) is this rule with the bound set to the ledger's start, which also keeps a
// channel's two slots in distinct ledgers. Not pushing slots to the next ledger's point alone
// (0.71 to 0.75) and twice the MaxConcurrency (0.77 to 0.93, at 1.5 to 1.6x the billed ms) were
// measured and left.

// reservation is a calendar slot: ticket n and its time. Its channel is n mod the channels of
// the call that uses it (ticketChannel), not of the one that booked it: with CHANNEL_COUNT 0 the
// list is the secret's, which may change between the two.
type reservation struct {
	n  int64
	at time.Time
}

// admittedKey is the context key of the slot admit set aside for its call (admittedSlot).
type admittedKey struct{}

// admittedSlot is the slot admit gave one call, carried by the context it returned to the call's
// acquire, which alone may take it: other calls of the process (one process serving concurrent
// callers) never see it, so it cannot be taken from the call it was booked for.
type admittedSlot struct {
	pool *ChannelPool
	mu   sync.Mutex
	r    reservation
	used bool
}

// admittedFrom takes the slot admit set aside in ctx for p, once.
func (p *ChannelPool) admittedFrom(ctx context.Context) (reservation, bool) {
	h, _ := ctx.Value(admittedKey{}).(*admittedSlot)
	if h == nil || h.pool != p {
		return reservation{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.used {
		return reservation{}, false
	}
	h.used = true
	return h.r, true
}

// calendarTerms are the calendar's terms at interval with count channels: the spacing between
// slots (interval / count, rounded up to the nanosecond so that count of them span a ledger at
// least, and a channel's two slots never share one); the grace after which a kept slot left
// unused is dropped (by then the channel's next slot, an interval later, is near, and leasing it
// late would meet that slot's caller); and the horizon beyond which the calendar is stale, in
// default ledgers at the least, so that processes whose estimates differ (one just started at
// the default, one that has seen 1 s ledgers) agree on it and do not restart each other's queue.
func calendarTerms(interval time.Duration, count int) (spacing, grace, horizon time.Duration) {
	spacing = (interval + time.Duration(count) - 1) / time.Duration(count)
	return spacing, interval / 2, calendarHorizon * max(interval, DefaultLedgerInterval)
}

// ticketChannel is the index of ticket n's channel among count channels: n modulo count, in
// [0, count) for a negative n too (a number an operator set below zero), so that consecutive
// tickets name consecutive channels across 0 as everywhere else.
func ticketChannel(n int64, count int) int {
	c := int64(count)
	return int((n%c + c) % c)
}

// acquireScheduled leases a channel on the calendar (see above). done is false when the calendar
// could not book a slot (an error other than a failed condition: throttled, unavailable, its
// answer lost) or booked one beyond the horizon: Acquire then leases unscheduled, so a calendar outage costs the old collisions,
// not transfers.
// A call makes at most TriesPerRound lease writes: a slot whose channel is still held (its
// transfer not settled yet, its envelope in quarantine, or its holder dead with the lease not
// expired) is a failed write, after which the call books the next slot. build makes the lease of a
// channel key (everything but its owner).
func (p *ChannelPool) acquireScheduled(ctx context.Context, chans []*keypair.Full, terms LeaseTerms, interval time.Duration, waitUntil time.Time,
	build func(*keypair.Full) Lease) (Lease, bool, error) {
	clock := p.cfg.Clock
	spacing, grace, horizon := calendarTerms(interval, len(chans))
	taken := map[string]bool{}
	writes := 0
	for {
		now := clock.Now()
		r, ok := p.admittedFrom(ctx)
		if ok && now.After(r.at.Add(grace)) {
			// Past its grace, as a kept slot is dropped (reserved): the call waited on a holder
			// of its own request after its admission, and leasing the slot's channel now would
			// meet the caller of that channel's next slot. It books anew.
			ok = false
		}
		if !ok {
			if r, ok = p.reserved(now, grace); ok {
				p.reused.Add(1)
			}
		}
		if !ok {
			n, at, restarted, was, err := p.cfg.Tickets.TakeTicket(ctx, ledgerStart(now, terms.LedgerClose, interval), spacing, horizon)
			if err != nil {
				if ctx.Err() != nil {
					return Lease{}, true, ctx.Err()
				}
				return Lease{}, false, nil
			}
			p.tickets.Add(1)
			if at.Sub(now) > horizon+interval {
				// The store bounds its calendar by the horizon (a stale calendar is restarted), so
				// a slot beyond it (and an alignment) was booked on another clock or by a store that
				// does not bound it: no caller's turn. Kept, it would answer every later call of the
				// process busy, every channel idle; leasing unscheduled costs collisions at worst.
				return Lease{}, false, nil
			}
			r = reservation{n: n, at: p.slotTime(n, at, restarted, was, now, chans[ticketChannel(n, len(chans))].Address(), len(chans), terms.LedgerClose, interval)}
			p.booked(r, waitUntil)
		}
		if r.at.After(waitUntil) || writes >= p.cfg.TriesPerRound {
			if writes >= p.cfg.TriesPerRound {
				// The calendar's slots keep meeting held channels (quarantined envelopes, dead
				// holders): the slot is kept for a later call, this one answers busy.
				r.at = later(r.at, now.Add(interval))
			}
			p.keep(r)
			p.busy.Add(1)
			p.waits.Add(1)
			if len(taken) > 0 {
				p.mu.Lock()
				p.crowded = now
				p.mu.Unlock()
			}
			return Lease{}, true, &transfer.UnavailableError{Code: CodeChannelsBusy, RetryAfter: slotRetryAfter(r.at.Sub(now)),
				Detail: "every channel account is busy; nothing was submitted"}
		}
		if d := r.at.Sub(now); d > 0 {
			p.waits.Add(1)
			if err := clock.Sleep(ctx, d); err != nil {
				p.keep(r)
				return Lease{}, true, err
			}
		}
		now = clock.Now()
		ch := chans[ticketChannel(r.n, len(chans))]
		if !p.hold(ch.Address(), now) {
			continue // another call of this process holds it: the next slot, without a write
		}
		owner := newLeaseOwner()
		writes++
		err := p.cfg.Leases.LeaseChannel(ctx, ch.Address(), owner, now, terms.Until, terms.MaxTime, terms.LedgerClose)
		if err == nil {
			p.leases.Add(1)
			p.mu.Lock()
			p.held[ch.Address()] = heldLease{owner: owner, expires: later(terms.Until, terms.MaxTime).Add(HeldMargin), ticket: r.n, scheduled: true}
			delete(p.elsewhere, ch.Address())
			p.mu.Unlock()
			l := build(ch)
			l.Owner = owner
			return l, true, nil
		}
		p.unhold(ch.Address())
		if !errors.Is(err, transfer.ErrConditionFailed) {
			p.dropLost(ctx, ch.Address(), owner)
			return Lease{}, true, &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable,
				Detail: "the channel lease store is unavailable; nothing was submitted",
				Err:    fmt.Errorf("stellar: leasing channel %s: %w", ch.Address(), err)}
		}
		taken[ch.Address()] = true
		p.mu.Lock()
		delete(p.mine, ch.Address())
		p.elsewhere[ch.Address()] = now
		p.mu.Unlock()
		p.collisions.Add(1)
	}
}

// admit decides, before a call claims its idempotency key, whether the calendar gives the call one
// of chans within its wait (for an envelope valid until maxTime: acquire's wait, by default one
// ledger): it takes this process's earliest kept slot, or books one with TakeTicket (one
// UpdateItem), and times it as acquireScheduled would. A slot beyond the wait is kept for the
// process's next call and admit answers *transfer.UnavailableError CHANNELS_BUSY with that slot's
// Retry-After: the answer acquire would give after the claim, so the caller can answer it with
// no claim written and none released (common.Admit, transfer.Admission). A slot within the wait
// is set aside for the call in the context admit returns (admittedSlot), and the call's acquire
// leases it: the booking moves before the claim, it is not made twice, and no other call of the
// process can take it meanwhile.
//
// The slot is timed with the latest ledger close this process knows (LatestClose, or its last
// acquire's), not one read for the call: on a regular clock the alignment is the same, since a
// channel's slots come whole intervals apart; on an irregular one a stale close can misplace a
// slot by a fraction of a ledger, which costs a failed lease write at worst (the lease's condition
// still decides who holds the channel).
//
// A call admitted whose claim then loses (a replay, another call of its request in flight) never
// acquires: its slot is kept for the process's next call when the call ends (unadmit), and goes
// unused, its channel idle for that slot, only if no call comes within its grace, as for a busy
// call whose client never comes back.
//
// admit books only while the calendar is full, as this process last found it: once a booking
// (admit's, or acquire's after a claim) finds a slot within the wait, admit books nothing and
// answers ctx and nil, and the call claims first, until a booking finds the calendar full again
// (booked). On a pool with room a booking before the claim would save nothing, and a call whose
// claim loses would have booked a slot it never uses: every duplicate of a request in flight
// and every replay. A process that has booked nothing yet admits.
//
// admit answers ctx and nil, deciding nothing, when the pool has no calendar, when it knows no
// ledger close, and when the booking fails or lands beyond the calendar's horizon (the call's
// acquire then books again and, failing, leases unscheduled).
func (p *ChannelPool) Admit(ctx context.Context, chans []*keypair.Full, maxTime time.Time) (context.Context, error) {
	if p.cfg.Tickets == nil || len(chans) == 0 {
		return ctx, nil
	}
	p.mu.Lock()
	lastClose := p.lastClose
	p.mu.Unlock()
	interval := LedgerInterval(p.cfg.LedgerInterval)
	now := p.cfg.Clock.Now()
	waitUntil := p.waitUntil(now, interval, maxTime)
	spacing, grace, horizon := calendarTerms(interval, len(chans))
	r, ok := p.reserved(now, grace)
	if ok {
		p.reused.Add(1)
	} else {
		p.mu.Lock()
		room := p.room
		p.mu.Unlock()
		if room {
			// The calendar had room at this process's last booking: the call claims first and
			// books in Prepare, so that a call whose claim loses (a replay, a duplicate) books
			// nothing. A booking there that finds the calendar full turns admission back on.
			return ctx, nil
		}
		if p.cfg.LatestClose != nil {
			if c := p.cfg.LatestClose(ctx); c.After(lastClose) {
				lastClose = c
			}
		}
		if lastClose.IsZero() {
			return ctx, nil
		}
		n, at, restarted, was, err := p.cfg.Tickets.TakeTicket(ctx, ledgerStart(now, lastClose, interval), spacing, horizon)
		if err != nil {
			return ctx, nil
		}
		p.tickets.Add(1)
		if at.Sub(now) > horizon+interval {
			return ctx, nil
		}
		r = reservation{n: n, at: p.slotTime(n, at, restarted, was, now, chans[ticketChannel(n, len(chans))].Address(), len(chans), lastClose, interval)}
		p.booked(r, waitUntil)
	}
	if r.at.After(waitUntil) {
		p.keep(r)
		p.busy.Add(1)
		p.waits.Add(1)
		return ctx, &transfer.UnavailableError{Code: CodeChannelsBusy, RetryAfter: slotRetryAfter(r.at.Sub(now)),
			Detail: "every channel account is busy; nothing was submitted"}
	}
	return context.WithValue(ctx, admittedKey{}, &admittedSlot{pool: p, r: r}), nil
}

// booked records what a booking found: room when its slot r is within the wait (waitUntil),
// which turns admit off until a booking finds the calendar full again.
func (p *ChannelPool) booked(r reservation, waitUntil time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.room = !r.at.After(waitUntil)
}

// Unadmit keeps the slot Admit set aside in ctx for this process's next call, unless the call's
// acquire took it.
func (p *ChannelPool) Unadmit(ctx context.Context) {
	if r, ok := p.admittedFrom(ctx); ok {
		p.keep(r)
	}
}

// calendarHorizon is how many ledger intervals (of 5 s at the least) ahead of now the calendar
// may run before it is taken as stale and restarted at now (TakeTicket's horizon): twice the
// queue of the heaviest overload measured (16 callers per channel, one environment each: 16
// intervals of slots; README.md, "Lambda-shaped throughput"). A calendar left further ahead by slots nobody will use
// (environments reaped while keeping them, an operator's edit, a fast clock) answers callers
// CHANNELS_BUSY for at most this long instead of until real time catches up with it.
const calendarHorizon = 32

// releaseOffset is how far into a ledger a slot's lease is written, as a share of the interval,
// from the close (releasePoint): the previous slot's transfer on the channel, sent a ledger
// earlier, landed at the close that began the ledger, and its caller releases the channel once
// the ledger shows through RPC or Horizon (1 to 3 s after the close at 5 s ledgers) and it has
// written the outcome; there is still time to build and send before the next close.
const releaseOffset = 0.6

// slotTime is when the slot n, booked at at (restarted: on a calendar behind the start of the
// ledger of now, whose time was then was) by a call at now, leases on channel (ticket n's among
// count), never before now:
//
//   - at the release point of the ledger at falls in (0.6 into it, releasePoint), where the
//     transfer of the channel's previous slot, a ledger earlier, has been released; at once when
//     that point has passed;
//   - but at at, or the point if earlier, when the process knows the channel's previous slot is
//     not in flight: the slot is among the first count of a run this process began by a restart
//     and the channel's previous slot, booked before the restart, is at least two ledgers before
//     at's ledger (calendarSeen.idleBefore: its transfer landed at the close that ended its
//     ledger, and was released in the ledger after it, before at's ledger began); or the
//     channel's previous slot (n - count) was this process's and its lease is released.
//
// The restarted slot itself is always such a slot when the calendar was behind the ledger's start
// (was before it): its channel's previous slot came count slots before it, a ledger before was.
// The ones after it in the run are not always: the calendar may have stopped a few slots short of
// the ledger's start, and the slot n+k names the channel of the slot count-k spacings before was,
// which can fall in the ledger before this one, its transfer still held
// (TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleased). The restart's answer gives that
// slot's time without a read: the calendar's time before it, less the spacings between (every
// booking adds one spacing; a process whose estimate of the interval differed spaced its slots
// otherwise, which misplaces the estimate by the difference: a failed lease write at worst). A
// calendar restarted because it ran stale, beyond the horizon, says nothing of which channels are
// in flight: its slots lease at the release point.
//
// The calendar keeps one time and one number, not who used which slot, so without these it
// cannot tell a full pool from an idle one whose calendar runs a few slots ahead: a follow-up
// call after a call refused before sending (its lease released unused, every channel free) books
// a slot a spacing ahead, which the release point would hold back up to 0.6 of a ledger, or (one
// channel, its next slot a ledger ahead) past the wait: answered CHANNELS_BUSY with every
// channel free (TestALoneCallerIsNeverBusyWithChannelsFree). With them it leases the slot as
// booked: the calendar's spreading is untouched (the slot, its channel and its ledger are the
// ones booked), and the lease's conditional write still decides who holds the channel, so
// knowledge gone wrong (a process with another channel count leasing the channel from a slot
// between) costs one failed write, never a transfer.
//
// The other choices weighed: leasing at the booked time whenever the alignment alone passes the
// wait keeps the false answer away from callers on other processes too, but on a full pool
// (BenchmarkChannelsLambda) the slot's channel is in flight until the release point: it cost
// failed writes and wasted slots (bound share 1.00 to 0.93 at 4 channels, 0.99 to 0.96 at 16).
// Keeping every run's first ticket on the calendar item, so that a process knows the first round
// of runs other processes began, leaves many more slots unaligned there: leased late in a ledger,
// their channels' next slots align a ledger later (0.93 and 0.95 of the bound).
// Aligning only a slot about an interval ahead of now (the calendar a round ahead) leaves a pool
// under moderate load (a queue shorter than a ledger that never empties) unaligned: the channel's
// previous slot is then exactly an interval earlier, its transfer released 1 to 3 s after the
// close between, and slots early in a ledger meet held channels. Telling a restart by a slot at
// the ledger's start, not by the store's answer, takes the first slot of every full round for
// one (a round spans a ledger exactly), leasing it and its run at once while the channels'
// previous transfers settle.
func (p *ChannelPool) slotTime(n int64, at time.Time, restarted bool, was, now time.Time, channel string, count int, lastClose time.Time, interval time.Duration) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	spacing, _, _ := calendarTerms(interval, count)
	if restarted {
		p.seen.run(n, was, spacing)
	}
	start := ledgerStart(at, lastClose, interval)
	point := releasePoint(start, lastClose, interval)
	if p.seen.idleBefore(n, count, start, lastClose, interval) || p.seen.wasFreed(channel, n, count) {
		return later(now, earlier(at, point))
	}
	return later(now, point)
}

// releasePoint is when the slots of the ledger that began at start (a close time on the grid of
// lastClose, the latest known) lease: releaseOffset into the ledger, timed from the latest instant
// the ledger can have closed (closeStampLag after its close time) but by no more than half the
// rest of the ledger, the other half left to build and send before the next close (4 s into a
// 5 s ledger, 0.8 s into a 1 s one); start itself when no close is known (no alignment).
func releasePoint(start, lastClose time.Time, interval time.Duration) time.Time {
	if lastClose.IsZero() || interval <= 0 {
		return start
	}
	offset := time.Duration(float64(interval) * releaseOffset)
	return start.Add(offset + min(closeStampLag, (interval-offset)/2))
}

// closeStampLag is how long after its close time a ledger can close: the close time is not when
// the ledger closed but when the validator whose value was chosen began nominating it, in whole
// seconds rounded down (stellar-core, src/herder/HerderImpl.cpp, HerderImpl::triggerNextLedger:
// nextCloseTime = VirtualClock::to_time_t(system_now()), "We don't know how much time it will take
// to reach consensus so this is the most appropriate value to use as closeTime"); the ledger
// closes once SCP externalises that value and it is applied (src/ledger/LedgerManagerImpl.cpp,
// LedgerManagerImpl::valueExternalized, applyLedger): up to a second of rounding later, and the
// consensus round more. The previous slot's transfer landed at that close, and its caller
// releases the channel once it sees the ledger, 1 to 3 s after the close (releaseOffset): timed
// from the close time, the release point would come up to a second early for it on a clock whose
// closes fall between whole seconds
// (TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleasedWhateverTheReportedCloseTime).
//
// Timed instead from when this process saw the close, it would count the ingestion lag of RPC or
// Horizon, which the release offset already counts, twice (4 to 6 s into a 5 s ledger on the
// local network, past the next close), and would follow whenever the process happened to read:
// an environment that read a ledger late would lease late in every ledger after it. The second
// bounds the rounding, not the consensus round, which only the offset's margin covers. At ledgers
// under 5 s the bound does not fit in half the rest of the ledger, and a channel's previous
// transfer may still be held at the point: the lease's condition refuses it (a failed write,
// never a second envelope).
const closeStampLag = time.Second

// earlier is the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// ledgerStart is the close that began the ledger t falls in, ledgers closing every interval from
// lastClose on (earlier or later than t): t itself when lastClose is unknown. A t more than
// about 292 years from lastClose (a calendar time read from the store: Duration's range) gets the
// close that far on its side, never one on the other: the step back to the ledger's start is
// taken on the time, where multiplying it into the Duration would wrap past its minimum.
func ledgerStart(t, lastClose time.Time, interval time.Duration) time.Time {
	if lastClose.IsZero() || interval <= 0 {
		return t
	}
	d := t.Sub(lastClose)
	start := lastClose.Add(d / interval * interval)
	if d < 0 && d%interval != 0 {
		start = start.Add(-interval)
	}
	return start
}

// calendarSeen is what a process knows of the calendar beyond its slots (slotTime). Guarded by
// the pool's mu.
type calendarSeen struct {
	// from is the slot this process booked by restarting the calendar: a run of consecutive
	// slots began there; known is false until one was. was is the calendar's time before that
	// restart (zero when it had none: no slot before the run) and spacing this process's spacing
	// then, so the slot from - j was booked about was - j x spacing.
	from    int64
	known   bool
	was     time.Time
	spacing time.Duration
	// last maps a channel to the slot of this process's last lease on it, once released.
	last map[string]int64
}

// run records that slot n began a run, the calendar restarted from was, slots spacing apart.
func (s *calendarSeen) run(n int64, was time.Time, spacing time.Duration) {
	s.from, s.known, s.was, s.spacing = n, true, was, spacing
}

// idleBefore reports whether slot n, in the ledger that began at start, is among the first count
// slots of the run this process began (fewer than count slots were booked, by any process, since
// the restart: the ticket numbers are consecutive across processes, and a later run only makes
// n's position in its own run smaller) and its channel's previous slot, n - count, booked before
// the run, fell at least two ledgers before start. That slot was booked count - (n - from)
// spacings before the calendar's time at the restart; a calendar with no time had no slot.
func (s *calendarSeen) idleBefore(n int64, count int, start, lastClose time.Time, interval time.Duration) bool {
	if !s.known || n < s.from || n-s.from >= int64(count) {
		return false
	}
	if s.was.IsZero() {
		return true
	}
	prev := s.was.Add(-time.Duration(int64(count)-(n-s.from)) * s.spacing)
	return ledgerStart(prev, lastClose, interval).Before(start.Add(-interval))
}

// freed records that this process released its lease of slot n on channel.
func (s *calendarSeen) freed(channel string, n int64) {
	if s.last == nil {
		s.last = map[string]int64{}
	}
	s.last[channel] = n
}

// wasFreed reports whether channel's previous slot before n (n - count) was this process's,
// released: no other slot names the channel in between, so nothing holds it.
func (s *calendarSeen) wasFreed(channel string, n int64, count int) bool {
	m, ok := s.last[channel]
	return ok && m == n-int64(count)
}

// reserved takes this process's earliest kept slot, dropping those more than grace past their
// time.
func (p *ChannelPool) reserved(now time.Time, grace time.Duration) (reservation, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservations = slices.DeleteFunc(p.reservations, func(r reservation) bool { return now.After(r.at.Add(grace)) })
	if len(p.reservations) == 0 {
		return reservation{}, false
	}
	i := 0
	for j, r := range p.reservations {
		if r.at.Before(p.reservations[i].at) {
			i = j
		}
	}
	r := p.reservations[i]
	p.reservations = slices.Delete(p.reservations, i, i+1)
	return r, true
}

// keep gives r back to the process for a later call.
func (p *ChannelPool) keep(r reservation) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reservations = append(p.reservations, r)
}

// slotRetryAfter is the Retry-After of a call whose slot is d away: d in whole seconds (HTTP's
// unit), rounded down, at least one. Rounded down, a caller that comes back then is at most a
// second early, and its call waits the rest (the wait is a ledger); rounded up, it would come back
// up to a second late, past the slot's grace at ledgers under 2 s, and the slot would be dropped
// (TestCallerBackAtRetryAfterMeetsItsSlot).
func slotRetryAfter(d time.Duration) time.Duration {
	return max(time.Second, d.Truncate(time.Second))
}

// dropLost releases the lease owner may hold on channel after a lease write that failed other
// than by its condition (throttled, timed out, its answer lost): the write may have applied, and
// the lease, which no envelope will ever use, would keep the channel until a ledger closed after
// its maxTime. The release is conditional on owner, unique to this attempt, so it deletes nothing
// when the write did not apply; when it fails too, the lease still ends as it would have.
func (p *ChannelPool) dropLost(ctx context.Context, channel, owner string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.ReleaseTimeout)
	defer cancel()
	_ = p.cfg.Leases.ReleaseChannel(rctx, channel, owner)
}
