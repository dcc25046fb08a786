package sources

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/tools/stellar-hd-wallet/crypto/derivation"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// CodeChannelsBusy is the *transfer.UnavailableError code when no channel account could be leased
// in time (503, retryable: nothing was built or sent).
const CodeChannelsBusy = transfer.CodeChannelsBusy

// ErrNoChannels is wrapped when channel accounts are configured but the keys hold none (no
// channelSeeds and no channelMasterSeed), or hold no fee key to pay their fee bumps.
var ErrNoChannels = errors.New("stellar: no channel keys")

// LeaseStore keeps channel leases, one conditional write each (internal/dynamo/doc.go,
// "Table layout": items
// `channel:<G...>` in the transfers table). internal/dynamo's ChannelLeases implements it.
type LeaseStore interface {
	// LeaseChannel gives channel to owner until `until`, quarantined until maxTime, if no
	// unexpired lease holds it at now and its last quarantine (the maxTime of the last envelope
	// built on it) is before ledgerClose, the close time of the latest ledger: an envelope that
	// could still land keeps its channel. Times are compared in milliseconds (leases) and epoch
	// seconds (quarantine). transfer.ErrConditionFailed (wrapped or not) when the channel is taken.
	LeaseChannel(ctx context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error
	// ReleaseChannel ends owner's lease and its quarantine: the envelope's fate is decided.
	// transfer.ErrConditionFailed when owner no longer holds the channel.
	ReleaseChannel(ctx context.Context, channel, owner string) error
}

// ChannelPoolConfig configures a ChannelPool.
type ChannelPoolConfig struct {
	// Leases stores the leases; required.
	Leases LeaseStore
	// Count is how many channels to use (CHANNEL_COUNT): the first Count listed in channelSeeds,
	// or Count derived from channelMasterSeed (SEP-5). 0 means every listed channel.
	Count int
	// Clock is the time leases are judged by; nil means the system clock.
	Clock transfer.Clock
	// LedgerInterval returns the network's ledger interval as this process sees it (the time
	// between two ledger closes); nil, or a result <= 0, means DefaultLedgerInterval. It sets the
	// default Wait and the Retry-After of CHANNELS_BUSY (see Acquire). It is called on every
	// Acquire, so a process-wide cadence estimate can be passed.
	LedgerInterval func() time.Duration
	// Wait, when set, bounds how long Prepare waits for a free channel; 0 means one ledger
	// interval (LedgerInterval), so that an overloaded pool answers CHANNELS_BUSY at once rather
	// than hold the invocation. It never waits past 10 s (two ledgers) before the envelope's
	// maxTime.
	Wait time.Duration
	// WaitLedgers, when Wait is 0, is how many ledger intervals Prepare waits for a free channel;
	// 0 means 1. SubmitterFunction waits longer than the API (wiring.SubmitterChannelWaitLedgers).
	WaitLedgers int
	// TriesPerRound is how many free-looking channels one round tries before it backs off;
	// 0 means 3. With Tickets, it bounds the lease writes of one call.
	TriesPerRound int
	// Tickets, when set, schedules every lease on the channel calendar it keeps (see
	// acquireScheduled): internal/dynamo's ChannelLeases. Nil, or a calendar that fails, leases
	// unscheduled (channels tried in random order).
	Tickets TicketStore
	// LatestClose, when set, returns the close time of the latest ledger this process has seen
	// (the process-wide transfer.Cadence's), reading it from the network when it has seen none;
	// zero when unknown. The admission (admit) aligns the slot it books with the later of it and
	// the close read by the pool's last acquire, and decides nothing without one.
	LatestClose func(ctx context.Context) time.Time
	// ReleaseTimeout bounds the DeleteItem that ends a lease (Release, and the release of a lease
	// whose write failed), measured on the context's own timer, not Clock: it is written even
	// when the call's context is ending, so it needs a bound of its own. 0 means
	// DefaultReleaseTimeout. A simulation whose Clock is virtual (internal/loadtest) sets it long,
	// since its round trips of virtual time can outlast 2 s of real time.
	ReleaseTimeout time.Duration
}

// DefaultReleaseTimeout is ChannelPoolConfig.ReleaseTimeout's default: a DeleteItem answers in
// milliseconds, and a release that fails only keeps the channel until its quarantine ends.
const DefaultReleaseTimeout = 2 * time.Second

// TicketStore books slots of the channel calendar shared by every process of a deployment
// (internal/dynamo/channeltickets.go: one item, one UpdateItem per booking). internal/dynamo's
// ChannelLeases implements it.
type TicketStore interface {
	// TakeTicket books the next slot: ticket number n (consecutive across every process, but a
	// number may be skipped) and its time at, spacing after the previous slot's time and never
	// before from (the pool passes the start of the ledger the call falls in). A calendar behind
	// from, or more than horizon ahead of it (stale), is restarted: the slot is at from, and
	// restarted is true. No slot is ever booked more than horizon ahead of from.
	//
	// A restart also answers the calendar's time before it (was): the time slot n would have had
	// queued, so slot n-1 was booked one spacing before it, and the slots before n (whose
	// channels the first slots of the restarted run name again) are known in time without a
	// read (slotTime). was is zero when the calendar had no time (a new or deleted item), and
	// for a booking not restarted.
	TakeTicket(ctx context.Context, from time.Time, spacing, horizon time.Duration) (n int64, at time.Time, restarted bool, was time.Time, err error)
}

// DefaultLedgerInterval is the ledger interval assumed when none is configured: the domain's
// (transfer.DefaultLedgerInterval, 5 s), which the process-wide Cadence also starts from.
const DefaultLedgerInterval = transfer.DefaultLedgerInterval

// minValidity is how long before its maxTime an envelope must be sent to land (two ledgers): the
// wait for a channel ends that long before maxTime.
const minValidity = 10 * time.Second

// PoolStats counts what a ChannelPool did.
type PoolStats struct {
	// Leases won; Collisions are lease writes another holder won (condition failed); Waits are
	// rounds that found nothing and backed off; Releases are leases released by Done; Busy are
	// acquires that ended in CHANNELS_BUSY.
	Leases, Collisions, Waits, Releases, Busy int64
	// Tickets are slots booked on the channel calendar (TicketStore requests that answered);
	// Reused are calls served by a slot an earlier call of this process booked and left
	// (CHANNELS_BUSY), without booking.
	Tickets, Reused int64
}

// ChannelPool leases channel accounts as transaction sources. With Tickets (as wiring builds it)
// every lease is scheduled on the deployment's channel calendar: ticket n leases channel n mod
// count at the slot's time, and a slot beyond the wait answers CHANNELS_BUSY at once
// (acquireScheduled, channelsched.go, where the design is argued). Without it, or when the
// calendar fails, channels are tried in random order: concurrent invocations (separate Lambda instances) share no memory, so any
// deterministic order, least-recently-used included, sends them all to the same channel first;
// a random order spreads them (see the benchmark in internal/loadtest). Two things bend it
// (tryOrder): the channels this process released (and has not since found leased elsewhere)
// come first, so that processes that run side by side for a while (SubmitterFunction's
// concurrent invocations, each leasing a batch's worth every ledger) settle on disjoint sets
// instead of colliding again every ledger; and a channel one call found leased elsewhere comes
// last for the rest of that call. Channels this process holds are skipped without asking
// DynamoDB. Safe for concurrent use.
type ChannelPool struct {
	cfg ChannelPoolConfig

	mu      sync.Mutex
	held    map[string]heldLease // channels this process leased and has not released
	derived derivedKeys
	// queue holds the tickets of this process's callers waiting for a channel, oldest first:
	// only as many of them as there are channels neither held by this process nor known leased
	// elsewhere try at a time (myTurn), so a freed channel goes to the longest waiter rather than
	// the luckiest poller.
	queue tickets
	// elsewhere maps the channels a call of this process found leased by another process (a lease
	// write whose condition failed) to when it last found them so: for one ledger interval after
	// that, myTurn does not count them as free.
	elsewhere map[string]time.Time
	// mine maps the channels this process released and has not since found leased elsewhere to
	// when it released them: tried first (tryOrder), and a waiter's backoff ends when one is
	// released for it (nap).
	mine map[string]time.Time
	// crowded is when a call of this process last answered CHANNELS_BUSY after finding channels
	// leased elsewhere: for one ledger interval after it, Acquire backs off between rounds even
	// while some channel is unasked (see Acquire).
	crowded time.Time

	// reservations are calendar slots this process booked and has not used (a call answered
	// CHANNELS_BUSY left its slot for a later call of the process): see acquireScheduled.
	reservations []reservation
	// seen is what this process knows of the calendar beyond its slots: where a run of bookings
	// began and which channels' last slots were its own, released (see slotTime).
	seen calendarSeen
	// lastClose is the latest ledger close time an acquire was given: what admit aligns with,
	// before the call has read the network.
	lastClose time.Time
	// room is whether this process's last booking found its slot within the wait: admit books
	// only while it is false (see admit).
	room bool

	leases, collisions, waits, releases, busy, tickets, reused atomic.Int64
}

// heldLease is a lease this process holds. Past expires (its deadline or maxTime, and a margin)
// the store decides again: the envelope may be in doubt and its quarantine is ledger time.
type heldLease struct {
	owner, inner string
	expires      time.Time
	// ticket is the calendar slot the lease was written for, when scheduled is set.
	ticket    int64
	scheduled bool
}

type derivedKeys struct {
	fingerprint [32]byte
	count       int
	keys        []*keypair.Full
}

// NewChannelPool checks cfg and returns a pool. It makes no call.
func NewChannelPool(cfg ChannelPoolConfig) (*ChannelPool, error) {
	if cfg.Leases == nil {
		return nil, errors.New("stellar: a channel pool needs a lease store")
	}
	if cfg.Count < 0 {
		return nil, fmt.Errorf("stellar: channel count %d is negative", cfg.Count)
	}
	if cfg.Clock == nil {
		cfg.Clock = transfer.SystemClock{}
	}
	if cfg.Wait < 0 {
		cfg.Wait = 0
	}
	if cfg.TriesPerRound <= 0 {
		cfg.TriesPerRound = 3
	}
	if cfg.ReleaseTimeout <= 0 {
		cfg.ReleaseTimeout = DefaultReleaseTimeout
	}
	return &ChannelPool{cfg: cfg, held: map[string]heldLease{}, mine: map[string]time.Time{}, elsewhere: map[string]time.Time{}}, nil
}

// Stats returns the pool's counters so far.
func (p *ChannelPool) Stats() PoolStats {
	return PoolStats{Leases: p.leases.Load(), Collisions: p.collisions.Load(), Waits: p.waits.Load(), Releases: p.releases.Load(),
		Busy: p.busy.Load(), Tickets: p.tickets.Load(), Reused: p.reused.Load()}
}

// Leases is the lease store the pool writes to (ChannelPoolConfig.Leases).
func (p *ChannelPool) Leases() LeaseStore { return p.cfg.Leases }

// Channels returns the channel keys the pool uses with keys (see ChannelKeys), derived once per
// master seed.
func (p *ChannelPool) Channels(keys signing.Keys) ([]*keypair.Full, error) {
	if len(keys.Channels) > 0 || !keys.ChannelMaster.IsSet() {
		return ChannelKeys(keys, p.cfg.Count)
	}
	fp := sha256.Sum256(keys.ChannelMaster.Bytes())
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.derived.keys != nil && p.derived.fingerprint == fp && p.derived.count == p.cfg.Count {
		return p.derived.keys, nil
	}
	k, err := ChannelKeys(keys, p.cfg.Count)
	if err != nil {
		return nil, err
	}
	p.derived = derivedKeys{fingerprint: fp, count: p.cfg.Count, keys: k}
	return k, nil
}

// ChannelKeys returns count channel keys: the first count of keys.Channels (all of them when
// count is 0), or, when the secret lists none, count keys derived from keys.ChannelMaster by
// SEP-5 (SLIP-0010 ed25519, path m/44'/148'/i' for i = 0 .. count-1). Errors wrap ErrNoChannels
// or name the problem; they never show key material.
func ChannelKeys(keys signing.Keys, count int) ([]*keypair.Full, error) {
	switch {
	case len(keys.Channels) > 0:
		if count == 0 {
			return keys.Channels, nil
		}
		if count > len(keys.Channels) {
			return nil, fmt.Errorf("%w: CHANNEL_COUNT is %d but the secret lists %d channelSeeds", ErrNoChannels, count, len(keys.Channels))
		}
		return keys.Channels[:count], nil
	case keys.ChannelMaster.IsSet():
		if count <= 0 {
			return nil, fmt.Errorf("%w: channelMasterSeed needs CHANNEL_COUNT > 0", ErrNoChannels)
		}
		return DeriveChannelKeys(keys.ChannelMaster, count)
	default:
		return nil, ErrNoChannels
	}
}

// DeriveChannelKeys derives n keys from a SEP-5 master seed (the BIP-39 seed bytes): key i is at
// m/44'/148'/i'. The derivation is go-stellar-sdk's SLIP-0010 implementation (the one behind
// stellar-hd-wallet), checked against SEP-5's published vectors in the tests.
func DeriveChannelKeys(master signing.MasterSeed, n int) ([]*keypair.Full, error) {
	seed := master.Bytes()
	if len(seed) == 0 {
		return nil, ErrNoChannels
	}
	out := make([]*keypair.Full, 0, n)
	for i := range n {
		k, err := derivation.DeriveForPath(fmt.Sprintf(derivation.StellarAccountPathFormat, i), seed)
		if err != nil {
			return nil, fmt.Errorf("stellar: deriving channel %d: %w", i, err)
		}
		kp, err := keypair.FromRawSeed(k.RawSeed())
		if err != nil {
			return nil, fmt.Errorf("stellar: deriving channel %d: %w", i, err)
		}
		out = append(out, kp)
	}
	return out, nil
}

// Acquire leases a channel: on the calendar when the pool has one (acquireScheduled); else, or
// when the calendar cannot book, rounds of up to TriesPerRound channels in random order, skipping the
// ones this process holds, until a channel is won or the wait ends (Wait, by default one ledger
// interval). Between rounds it backs off on the pool's clock: 100 ms doubling to 1 s while rounds
// meet leases held elsewhere (each try is a conditional write) and every channel this process does
// not hold was found leased elsewhere in this call; 100 ms after a round that asked the store
// nothing (it costs nothing, and a channel this process releases is taken up at once) or while
// some channel has not been asked yet (concurrent processes that start together, as a burst's
// first SubmitterFunction invocations do, fill every channel in a few rounds instead of guessing
// at random for a ledger: at most one failed write per channel before the backoff grows), unless
// a call of this process answered CHANNELS_BUSY within the last ledger interval: the pool is
// full, and asking about every channel would cost a failed conditional write per channel on
// every waiting call of an overload (a write is billed, and throttled, whether or not its
// condition holds), where the doubling backoff costs about 8 rounds whatever the count.
//
// When the wait ends it answers *transfer.UnavailableError CHANNELS_BUSY at once, nothing built
// or sent, with RetryAfter estimated from the transfers ahead of this one:
//
//	RetryAfter = (ahead + taken) / channels * interval + UntilNextClose
//
// where ahead is the number of this process's callers before this one in its ticket queue, taken
// the number of distinct channels this call found leased by another process (a lease write whose
// condition failed), channels the pool's channel count, interval the ledger interval
// (LedgerInterval) and UntilNextClose the time from now to the next ledger close expected after
// the latest one read before the wait (terms.LedgerClose; one interval when unknown). Each
// channel carries one transaction per ledger (stellar-core queues one transaction per source
// account), so the transfers ahead take that many ledgers, from the next close on.
func (p *ChannelPool) Acquire(ctx context.Context, keys signing.Keys, terms LeaseTerms) (Lease, error) {
	feeKey, vaultKey := keys.FeeKey(), keys.VaultKey()
	if feeKey == nil {
		return Lease{}, fmt.Errorf("%w: no fee account key (feeSeed, or FEE_KMS_KEY_ID) to pay the channels' fee bumps", ErrNoChannels)
	}
	if vaultKey == nil {
		return Lease{}, errors.New("no vault key")
	}
	// The operations' source is the vault account, which the vault key signs for: its master key,
	// or (SIGNER=kms) a signer added to it. Never empty: that would make the channel the source.
	vault := terms.Vault
	if vault == "" {
		vault = vaultKey.Address()
	}
	chans, err := p.Channels(keys)
	if err != nil {
		return Lease{}, err
	}
	clock := p.cfg.Clock
	interval := LedgerInterval(p.cfg.LedgerInterval)
	waitUntil := p.waitUntil(clock.Now(), interval, terms.MaxTime)
	p.mu.Lock()
	if terms.LedgerClose.After(p.lastClose) {
		p.lastClose = terms.LedgerClose
	}
	p.mu.Unlock()
	if p.cfg.Tickets != nil {
		if lease, done, err := p.acquireScheduled(ctx, chans, terms, interval, waitUntil, func(ch *keypair.Full) Lease {
			return Lease{Account: ch.Address(), OpSource: vault, Signers: []signing.Signer{signing.SeedSigner{KP: ch}, vaultKey}, FeeSource: feeKey}
		}); done {
			return lease, err
		}
	}
	backoff := firstRound
	ticket := p.enqueue()
	defer p.dequeue(ticket)
	taken := map[string]bool{} // channels found leased by another process
	for {
		now := clock.Now()
		order := p.tryOrder(chans, taken)
		tried := 0
		if !p.myTurn(ticket, chans, now, interval) {
			order = nil
		}
		for _, i := range order {
			if tried == p.cfg.TriesPerRound {
				break
			}
			ch := chans[i]
			if !p.hold(ch.Address(), now) {
				continue
			}
			tried++
			owner := newLeaseOwner()
			err := p.cfg.Leases.LeaseChannel(ctx, ch.Address(), owner, now, terms.Until, terms.MaxTime, terms.LedgerClose)
			if err == nil {
				p.leases.Add(1)
				p.mu.Lock()
				p.held[ch.Address()] = heldLease{owner: owner, expires: later(terms.Until, terms.MaxTime).Add(HeldMargin)}
				delete(p.elsewhere, ch.Address())
				p.mu.Unlock()
				return Lease{Account: ch.Address(), OpSource: vault,
					Signers: []signing.Signer{signing.SeedSigner{KP: ch}, vaultKey}, FeeSource: feeKey, Owner: owner}, nil
			}
			p.unhold(ch.Address())
			if !errors.Is(err, transfer.ErrConditionFailed) {
				p.dropLost(ctx, ch.Address(), owner)
				return Lease{}, &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable,
					Detail: "the channel lease store is unavailable; nothing was submitted",
					Err:    fmt.Errorf("stellar: leasing channel %s: %w", ch.Address(), err)}
			}
			taken[ch.Address()] = true
			p.mu.Lock()
			delete(p.mine, ch.Address())
			p.elsewhere[ch.Address()] = clock.Now()
			p.mu.Unlock()
			p.collisions.Add(1)
		}
		p.waits.Add(1)
		if !clock.Now().Add(backoff).Before(waitUntil) {
			now := clock.Now()
			retry := BusyRetryAfter(p.ahead(ticket)+len(taken), len(chans), interval, UntilNextClose(terms.LedgerClose, now, interval))
			p.busy.Add(1)
			if len(taken) > 0 {
				p.mu.Lock()
				p.crowded = now
				p.mu.Unlock()
			}
			return Lease{}, &transfer.UnavailableError{Code: CodeChannelsBusy, RetryAfter: retry,
				Detail: "every channel account is busy; nothing was submitted"}
		}
		if err := p.nap(ctx, ticket, backoff); err != nil {
			return Lease{}, err
		}
		if now := clock.Now(); tried > 0 && (!p.unasked(chans, taken, now) || p.crowdedAt(now, interval)) {
			// Backing off spares the store; a round that asked it nothing (every channel held by
			// this process, or not this caller's turn) costs nothing, so the next one comes soon
			// and a channel this process frees is leased again within firstRound; nor does one
			// while channels remain that this call has not asked about, unless the pool was
			// found full within the last ledger (crowded).
			backoff = min(2*backoff, time.Second)
		} else {
			backoff = firstRound
		}
	}
}

// waitUntil is when a call starting at start, for an envelope valid until maxTime, stops waiting
// for a channel: Wait after start (by default WaitLedgers intervals, one when 0), and never later
// than minValidity before maxTime.
func (p *ChannelPool) waitUntil(start time.Time, interval time.Duration, maxTime time.Time) time.Time {
	wait := p.cfg.Wait
	if wait <= 0 {
		wait = interval * time.Duration(max(p.cfg.WaitLedgers, 1))
	}
	until := start.Add(wait)
	if last := maxTime.Add(-minValidity); last.Before(until) {
		until = last
	}
	return until
}

// nap sleeps d on the pool's clock, in steps of firstRound, and ends early once this process
// releases a channel for ticket: fewer of its callers are queued before ticket than there are
// channels it released since the nap began and does not hold. The longest waiter thus leases a
// channel its process frees within firstRound, however far its backoff has grown, instead of
// leaving it idle while newer callers wait their turn (myTurn). A step asks the store nothing.
func (p *ChannelPool) nap(ctx context.Context, ticket uint64, d time.Duration) error {
	since := p.cfg.Clock.Now()
	for d > 0 {
		step := min(d, firstRound)
		if err := p.cfg.Clock.Sleep(ctx, step); err != nil {
			return err
		}
		d -= step
		if d > 0 && p.releasedFor(ticket, since) {
			return nil
		}
	}
	return nil
}

// releasedFor reports whether fewer callers are queued before ticket than there are channels
// this process released at or after since (mine) and does not hold.
func (p *ChannelPool) releasedFor(ticket uint64, since time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	freed := 0
	for a, at := range p.mine {
		if _, ok := p.held[a]; !ok && !at.Before(since) {
			freed++
		}
	}
	return p.queue.ahead(ticket) < freed
}

// crowdedAt reports whether a call of this process answered CHANNELS_BUSY after finding channels
// leased elsewhere less than interval before now.
func (p *ChannelPool) crowdedAt(now time.Time, interval time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.crowded.IsZero() && now.Before(p.crowded.Add(interval))
}

// unasked reports whether some channel is neither held by this process at now nor in taken (found
// leased elsewhere by this call).
func (p *ChannelPool) unasked(chans []*keypair.Full, taken map[string]bool, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range chans {
		a := c.Address()
		if h, ok := p.held[a]; (!ok || !now.Before(h.expires)) && !taken[a] {
			return true
		}
	}
	return false
}

// tryOrder is the order in which one round of Acquire tries chans (indexes): the channels this
// process released and has not since found leased elsewhere (mine), then the others, each group in
// random order, and last the ones this call found leased by another process (taken), which are
// held until their transfers settle, about a ledger.
func (p *ChannelPool) tryOrder(chans []*keypair.Full, taken map[string]bool) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	rank := func(i int) int {
		switch a := chans[i].Address(); {
		case taken[a]:
			return 2
		case !p.mine[a].IsZero():
			return 0
		}
		return 1
	}
	order := mrand.Perm(len(chans))
	slices.SortStableFunc(order, func(i, j int) int { return rank(i) - rank(j) })
	return order
}

// firstRound is the pause after Acquire's first round, and after every round that asked the
// lease store nothing.
const firstRound = 100 * time.Millisecond

// HeldMargin is how long past a held lease's deadline and maxTime this process still skips the
// channel without asking the store: about two ledgers, for the quarantine to end.
const HeldMargin = 10 * time.Second

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (p *ChannelPool) enqueue() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queue.add()
}

// ahead is the number of this process's callers queued before ticket.
func (p *ChannelPool) ahead(ticket uint64) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.queue.ahead(ticket)
}

func (p *ChannelPool) dequeue(ticket uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue.remove(ticket)
}

// myTurn reports whether ticket is among the oldest waiters, as many as there are channels that
// look free at now, and never fewer than one: channels neither held by this process nor found
// leased by another process less than interval before now (one ledger: a channel carries one
// transaction per ledger, and a served transfer holds it about that long; README.md,
// "Capacity"). Counting a channel held elsewhere as free would let a newcomer take a channel
// this process has just released while an older waiter sleeps out its backoff
// (TestPoolFreedChannelGoesToTheLongestWaiter); the oldest waiter always tries, so a channel
// freed elsewhere is still found.
func (p *ChannelPool) myTurn(ticket uint64, chans []*keypair.Full, now time.Time, interval time.Duration) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	free := 0
	for _, c := range chans {
		a := c.Address()
		if h, ok := p.held[a]; ok && now.Before(h.expires) {
			continue
		}
		if at, ok := p.elsewhere[a]; ok {
			if now.Before(at.Add(interval)) {
				continue
			}
			delete(p.elsewhere, a) // stale: its transfer has likely settled
		}
		free++
	}
	return p.queue.index(ticket) < max(free, 1)
}

// tickets is a first-in first-out queue of waiting callers, by ticket number: the channel pool
// and the vault's slot each serve their oldest waiters first. Its owner's mutex guards it.
type tickets struct {
	next  uint64
	queue []uint64 // oldest first
}

// add queues a new caller and returns its ticket.
func (q *tickets) add() uint64 {
	q.next++
	q.queue = append(q.queue, q.next)
	return q.next
}

// remove takes ticket out of the queue, wherever it is.
func (q *tickets) remove(ticket uint64) {
	if i := slices.Index(q.queue, ticket); i >= 0 {
		q.queue = slices.Delete(q.queue, i, i+1)
	}
}

// index is ticket's place in the queue (0: the oldest), -1 if it is not queued.
func (q *tickets) index(ticket uint64) int { return slices.Index(q.queue, ticket) }

// ahead is the number of callers queued before ticket (0 if it is not queued).
func (q *tickets) ahead(ticket uint64) int { return max(q.index(ticket), 0) }

// hold marks channel as being leased by this process; false if this process holds it already.
func (p *ChannelPool) hold(channel string, now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.held[channel]; ok && now.Before(h.expires) {
		return false
	}
	p.held[channel] = heldLease{expires: now.Add(time.Hour)}
	return true
}

func (p *ChannelPool) unhold(channel string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.held, channel)
}

func (p *ChannelPool) Bind(lease Lease, env transfer.Envelope) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.held[lease.Account]; ok && h.owner == lease.Owner {
		h.inner = env.InnerHash
		p.held[lease.Account] = h
	}
}

// Release ends the lease of env's channel if this process granted it: by lease (Prepare failed)
// or by env's inner hash (Done). A lease granted elsewhere (a take-over's envelope) is left to
// expire: its quarantine already keeps it until the envelope is dead. A failed release is
// harmless for the same reason.
func (p *ChannelPool) Release(ctx context.Context, lease Lease, env transfer.Envelope) {
	p.mu.Lock()
	h, ok := p.held[env.Channel]
	ours := ok && h.owner != "" && (h.owner == lease.Owner || lease.Owner == "" && h.inner == env.InnerHash && env.InnerHash != "")
	if ours {
		delete(p.held, env.Channel)
	}
	p.mu.Unlock()
	if !ours {
		return
	}
	owner := h.owner
	// The release is written even when the invocation's context is ending: it only frees the
	// channel sooner.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.ReleaseTimeout)
	defer cancel()
	if err := p.cfg.Leases.ReleaseChannel(rctx, env.Channel, owner); err == nil {
		p.releases.Add(1)
		p.mu.Lock()
		p.mine[env.Channel] = p.cfg.Clock.Now()
		if h.scheduled {
			p.seen.freed(env.Channel, h.ticket)
		}
		p.mu.Unlock()
	}
}

// newLeaseOwner returns a unique lease owner ID: 16 random bytes in hex.
func newLeaseOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var _ Source = (*ChannelPool)(nil)
