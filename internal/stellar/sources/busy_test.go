package sources

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

func TestUntilNextClose(t *testing.T) {
	close0 := time.Unix(1_000, 0)
	for _, c := range []struct {
		name      string
		lastClose time.Time
		now       time.Time
		want      time.Duration
	}{
		{"just after a close", close0, close0.Add(time.Second), 4 * time.Second},
		{"at a close", close0, close0, 5 * time.Second},
		{"two ledgers and a half later", close0, close0.Add(12500 * time.Millisecond), 2500 * time.Millisecond},
		{"unknown close", time.Time{}, close0, 5 * time.Second},
		{"close ahead of the clock", close0.Add(time.Second), close0, 5 * time.Second},
	} {
		if got := UntilNextClose(c.lastClose, c.now, 5*time.Second); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestBusyRetryAfter(t *testing.T) {
	for _, c := range []struct {
		ahead, sources int
		untilNext      time.Duration
		want           time.Duration
	}{
		{0, 1, 2 * time.Second, 2 * time.Second},
		{0, 1, 1500 * time.Millisecond, 2 * time.Second}, // whole seconds, rounded up
		{3, 1, time.Second, 16 * time.Second},            // three ledgers ahead, then the next close
		{8, 16, time.Second, 4 * time.Second},            // half a ledger's worth: 2.5 s + 1 s
		{32, 16, 4 * time.Second, 14 * time.Second},
		{5, 0, time.Second, 26 * time.Second}, // no sources counted: as one
	} {
		if got := BusyRetryAfter(c.ahead, c.sources, 5*time.Second, c.untilNext); got != c.want {
			t.Errorf("BusyRetryAfter(%d, %d, 5s, %v) = %v, want %v", c.ahead, c.sources, c.untilNext, got, c.want)
		}
	}
}

// Every channel is leased by another process: the pool gives up after one ledger interval (as
// LedgerInterval says, here 4 s) instead of the invocation's budget, and its Retry-After counts the
// two channels found taken over the two channels, one ledger, plus the time to the next close.
func TestChannelsBusyAfterOneLedger(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases := &sourcestest.Leases{}
	keys := sourcestest.Keys(t)
	chans, err := ChannelKeys(keys, 2)
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	for _, ch := range chans {
		if err := leases.LeaseChannel(context.Background(), ch.Address(), "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
			t.Fatal(err)
		}
	}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: 2, Clock: clock,
		LedgerInterval: func() time.Duration { return 4 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	lastClose := start.Add(-time.Second)
	_, err = pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second), LedgerClose: lastClose})
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
		t.Fatalf("acquire = %v, want CHANNELS_BUSY", err)
	}
	waited := clock.Now().Sub(start)
	if waited > 4*time.Second || waited < 3*time.Second {
		t.Errorf("waited %v for a channel, want about one ledger (4 s)", waited)
	}
	// Backoff rounds at 0, 0.1, 0.3, 0.7, 1.5, 2.5 and 3.5 s: it gives up at 3.5 s, 4.5 s after the
	// last close, so 3.5 s before the next; (0 ahead + 2 taken) / 2 channels = one ledger more.
	if want := 8 * time.Second; ue.RetryAfter != want || waited != 3500*time.Millisecond {
		t.Errorf("after %v: RetryAfter %v, want %v", waited, ue.RetryAfter, want)
	}
	if st := pool.Stats(); st.Busy != 1 || st.Leases != 0 {
		t.Errorf("stats %+v", st)
	}
	// An explicit Wait still overrides the ledger interval.
	pool.cfg.Wait = 10 * time.Second
	start = clock.Now()
	if _, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(time.Minute), MaxTime: start.Add(time.Minute)}); !errors.As(err, &ue) {
		t.Fatalf("acquire = %v", err)
	}
	if waited := clock.Now().Sub(start); waited < 8*time.Second || waited > 10*time.Second {
		t.Errorf("waited %v with Wait 10 s", waited)
	}
	// WaitLedgers (SubmitterFunction's wait) waits that many ledger intervals instead of one.
	pool.cfg.Wait, pool.cfg.WaitLedgers = 0, 3
	start = clock.Now()
	if _, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(time.Minute), MaxTime: start.Add(time.Minute)}); !errors.As(err, &ue) {
		t.Fatalf("acquire = %v", err)
	}
	if waited := clock.Now().Sub(start); waited < 11*time.Second || waited > 12*time.Second {
		t.Errorf("waited %v with WaitLedgers 3 of 4 s, want about 12 s", waited)
	}
}

// Without channels this process builds on the vault for one transfer at a time: a second
// acquire waits about one ledger and answers CHANNELS_BUSY with the time to the next close; once
// the first envelope is Done (or its hold reaches the invocation's deadline) the next one goes.
func TestVaultSlotSerialisesTransfers(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	keys := sourcestest.Keys(t)
	v := NewVaultSource(keys.Vault.Address(), clock, nil)
	ctx := context.Background()
	start := clock.Now()
	terms := LeaseTerms{Until: start.Add(20 * time.Second), MaxTime: start.Add(20 * time.Second), LedgerClose: start.Add(-2 * time.Second)}
	first, err := v.Acquire(ctx, keys, terms)
	if err != nil {
		t.Fatal(err)
	}
	env := transfer.Envelope{InnerHash: "aa", Channel: first.Account}
	v.Bind(first, env)
	_, err = v.Acquire(ctx, keys, terms)
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
		t.Fatalf("second acquire = %v, want CHANNELS_BUSY", err)
	}
	// Looked every 100 ms and gave up at 4.9 s (the last look before 5 s), 6.9 s after the last
	// close: 3.1 s to the next, 4 s in whole seconds.
	if waited := clock.Now().Sub(start); waited != 4900*time.Millisecond || ue.RetryAfter != 4*time.Second {
		t.Errorf("waited %v, RetryAfter %v; want 4.9s and 4s", waited, ue.RetryAfter)
	}
	v.Release(ctx, Lease{}, transfer.Envelope{InnerHash: "bb", Channel: first.Account}) // a take-over's envelope
	if _, err := v.Acquire(ctx, keys, LeaseTerms{Until: terms.Until, MaxTime: terms.MaxTime}); err == nil {
		t.Fatal("another envelope's Done freed the slot")
	}
	v.Release(ctx, Lease{}, env)
	second, err := v.Acquire(ctx, keys, terms)
	if err != nil || second.Owner == first.Owner {
		t.Fatalf("after Done: %+v, %v", second, err)
	}
	// Never Done (in doubt): the hold ends at the invocation's deadline.
	clock.Advance(terms.Until.Sub(clock.Now()))
	if _, err := v.Acquire(ctx, keys, LeaseTerms{Until: clock.Now().Add(20 * time.Second), MaxTime: clock.Now().Add(20 * time.Second)}); err != nil {
		t.Fatalf("after the holder's deadline: %v", err)
	}
}

// 63 of 64 channels are leased by other processes (a burst's first SubmitterFunction invocations
// starting together): the call asks about every channel at the first round's pace before it backs
// off, so it finds the free one well within the ledger it may wait, with one failed write per
// channel at most. Trying 3 random channels per round with the backoff growing to 1 s, it asked
// about 21 of them in a ledger and missed the free one about twice in three.
func TestPoolAsksEveryChannelBeforeBackingOff(t *testing.T) {
	const count = 64
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases := &sourcestest.Leases{}
	keys := sourcestest.Keys(t)
	keys.Channels = nil // derived from the master seed: as many as count
	chans, err := ChannelKeys(keys, count)
	if err != nil {
		t.Fatal(err)
	}
	start := clock.Now()
	for _, ch := range chans[1:] {
		if err := leases.LeaseChannel(context.Background(), ch.Address(), "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
			t.Fatal(err)
		}
	}
	for run := range 20 {
		pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: count, Clock: clock,
			LedgerInterval: func() time.Duration { return 5 * time.Second }})
		if err != nil {
			t.Fatal(err)
		}
		start := clock.Now()
		lease, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second), LedgerClose: start})
		if err != nil {
			t.Fatalf("run %d: acquire = %v, want the free channel", run, err)
		}
		if lease.Account != chans[0].Address() {
			t.Fatalf("run %d: leased %s, want the free channel %s", run, lease.Account, chans[0].Address())
		}
		// 63 taken channels, 3 a round, a round every 100 ms: 21 rounds at most before the free
		// channel's, which starts by 2.1 s.
		if waited, st := clock.Now().Sub(start), pool.Stats(); waited > 2100*time.Millisecond || st.Collisions > count-1 {
			t.Errorf("run %d: found the free channel after %v and %d failed writes, want at most 2.1 s and %d", run, waited, st.Collisions, count-1)
		}
		pool.Release(context.Background(), lease, transfer.Envelope{Channel: lease.Account})
	}
}

// A process tries the channels it released first: its next leases go to the channel it had, not
// to one of the seven others at random, so that processes running side by side settle on
// disjoint channels. Once another process holds that channel, the call that finds it leased moves
// on (one failed write) and the channel is no longer preferred.
func TestPoolTriesItsReleasedChannelsFirst(t *testing.T) {
	const count = 8
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases := &sourcestest.Leases{}
	keys := sourcestest.Keys(t)
	keys.Channels = nil // derived from the master seed: as many as count
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: count, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	lease1 := func() Lease {
		t.Helper()
		now := clock.Now()
		lease, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now})
		if err != nil {
			t.Fatal(err)
		}
		return lease
	}
	first := lease1()
	pool.Release(context.Background(), first, transfer.Envelope{Channel: first.Account})
	for i := range 20 {
		l := lease1()
		pool.Release(context.Background(), l, transfer.Envelope{Channel: l.Account})
		if l.Account != first.Account {
			t.Fatalf("lease %d went to %s, want the channel this process released, %s", i, l.Account, first.Account)
		}
	}
	now := clock.Now()
	if err := leases.LeaseChannel(context.Background(), first.Account, "other-process", now, now.Add(time.Hour), now.Add(time.Hour), now); err != nil {
		t.Fatal(err)
	}
	before := pool.Stats().Collisions
	second := lease1()
	if second.Account == first.Account || pool.Stats().Collisions != before+1 {
		t.Fatalf("leased %s after %d failed writes, want another channel than %s after 1", second.Account, pool.Stats().Collisions-before, first.Account)
	}
	pool.Release(context.Background(), second, transfer.Envelope{Channel: second.Account})
	if l := lease1(); l.Account != second.Account {
		t.Errorf("leased %s, want %s: the channel taken elsewhere is no longer preferred, the one released since is", l.Account, second.Account)
	}
}

// TestPoolBusyCallsUnderOverloadCostNoMoreWrites (adversary). Scenario: a sustained overload (more
// transfers than channels for minutes: a payout burst beside API traffic) keeps every channel
// leased by other processes. Each API instance gets call after call, and each call waits its
// ledger and answers CHANNELS_BUSY. Since acquire asks about every channel it does not hold at the
// first round's pace (100 ms per 3 channels) before it backs off, every such call costs one failed
// conditional write per channel, then some: 81 writes with 64 channels and 138 with 128, where
// the doubling backoff alone cost 24 (8 rounds of 3) whatever the count. A failed conditional
// write is billed as a write; with CHANNEL_COUNT 128 the template admits up to 2B = 520 waiting
// calls (README.md, "Capacity"), about 520 x 138 / 4.9 s = 14,600 writes a second on 128 items
// of the transfers table (2,500 before), above DynamoDB's 1,000 write units a second per
// partition: throttled lease writes are answered STORE_UNAVAILABLE rather than CHANNELS_BUSY, and
// the transfers' own writes on the same partitions are throttled with them. Asking about every
// channel pays off when processes start together on free channels; a process whose last call
// found every channel it does not hold leased elsewhere has learned the pool is full, and its next
// call within a ledger should back off as before. Severity: medium (cost, and store throttling
// during the overload it is meant to absorb; nothing paid twice or lost). Fixed: for one ledger
// interval after a call of the process answered CHANNELS_BUSY having met leases held elsewhere,
// acquire backs off as before (ChannelPool.crowded): 138, 24, 24, 24 writes with 128 channels.
func TestPoolBusyCallsUnderOverloadCostNoMoreWrites(t *testing.T) {
	for _, count := range []int{16, 64, 128} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		leases := &sourcestest.Leases{}
		keys := sourcestest.Keys(t)
		keys.Channels = nil // derived from the master seed: as many as count
		chans, err := ChannelKeys(keys, count)
		if err != nil {
			t.Fatal(err)
		}
		start := clock.Now()
		for _, ch := range chans {
			if err := leases.LeaseChannel(context.Background(), ch.Address(), "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
				t.Fatal(err)
			}
		}
		pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: count, Clock: clock,
			LedgerInterval: func() time.Duration { return 5 * time.Second }})
		if err != nil {
			t.Fatal(err)
		}
		var writes []int64
		for range 4 { // four calls in a row, each answered CHANNELS_BUSY
			before := pool.Stats().Collisions
			now := clock.Now()
			_, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now})
			var ue *transfer.UnavailableError
			if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
				t.Fatalf("%d channels: acquire = %v, want CHANNELS_BUSY", count, err)
			}
			writes = append(writes, pool.Stats().Collisions-before)
		}
		t.Logf("%d channels, all leased elsewhere: failed lease writes per busy call %v", count, writes)
		// The first call may ask about every channel (processes starting together); the next ones,
		// within a ledger of a call that found them all leased, back off as before: 8 rounds of 3.
		if writes[0] > int64(count)+24 {
			t.Errorf("%d channels: the first busy call cost %d writes, want at most %d", count, writes[0], count+24)
		}
		for i, w := range writes[1:] {
			if w > 24 {
				t.Errorf("%d channels: busy call %d, right after one that found every channel leased, cost %d writes, want at most 24 (the doubling backoff's 8 rounds of 3)", count, i+2, w)
			}
		}
	}
}

// TestPoolFreedChannelGoesToTheLongestWaiter (adversary). Scenario: one process (a
// SubmitterFunction instance running a batch) holds channel X for one transfer; the pool's other
// channel, Y, is leased elsewhere for a long time (its envelope in doubt, quarantined). Caller W1
// starts waiting at 0 s: it asks about Y (leased elsewhere) and backs off, 0.1, 0.3, 0.7, 1.5 s.
// At 1 s the transfer on X settles and X is released; at 1.05 s caller W2 arrives. The ticket
// queue promises that a freed channel goes to the longest waiter rather than the luckiest poller
// (ChannelPool.queue), but it lets as many waiters try as there are channels this process does
// not hold, counting Y, which another process holds: W2 is in turn at once, tries the channel its
// process released first (tryOrder) and leases X at 1.05 s, while W1, asleep until 1.5 s, waits
// out its ledger and answers CHANNELS_BUSY. Under a steady load the same caller can lose every
// freed channel to newcomers: a FIFO in name only. Severity: low (a 503 with Retry-After to the
// oldest caller; nothing paid twice or lost). Fixed: the pool remembers for one ledger interval
// the channels its calls found leased elsewhere (ChannelPool.elsewhere), and myTurn counts as
// free only the channels neither held by this process nor known leased elsewhere, never fewer
// than one: W2 waits its turn. And a waiter's backoff ends early once its process frees a
// channel for it (ChannelPool.nap): W1 leases X by 1.1 s rather than at 1.5 s.
func TestPoolFreedChannelGoesToTheLongestWaiter(t *testing.T) {
	clock, leases, keys, chans, pool := twoChannelPool(t)
	ctx := context.Background()
	start := clock.Now()
	terms := func() LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now}
	}
	held, err := pool.Acquire(ctx, keys, terms())
	if err != nil {
		t.Fatal(err)
	}
	other := chans[0].Address()
	if other == held.Account {
		other = chans[1].Address()
	}
	if err := leases.LeaseChannel(ctx, other, "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var w1, w2 error
	var w1Lease, w2Lease Lease
	var w1At time.Duration
	clock.Go(&wg, func() { // the holder: its transfer settles at 1 s
		_ = clock.Sleep(ctx, time.Second)
		pool.Release(ctx, held, transfer.Envelope{Channel: held.Account})
	})
	clock.Go(&wg, func() {
		w1Lease, w1 = pool.Acquire(ctx, keys, terms())
		w1At = clock.Now().Sub(start)
	})
	clock.Go(&wg, func() {
		_ = clock.Sleep(ctx, 1050*time.Millisecond)
		w2Lease, w2 = pool.Acquire(ctx, keys, terms())
	})
	wg.Wait()
	t.Logf("W1 (waiting since 0 s): %s, %v; W2 (arrived at 1.05 s): %s, %v", w1Lease.Account, w1, w2Lease.Account, w2)
	if w1 != nil {
		t.Fatalf("W1, waiting since 0 s, answered %v; the channel freed at 1 s went to W2, who arrived at 1.05 s (%s)", w1, w2Lease.Account)
	}
	if w1Lease.Account != held.Account {
		t.Errorf("W1 leased %s, want the freed channel %s", w1Lease.Account, held.Account)
	}
	// Released at 1 s; W1 looks every firstRound (100 ms) within its backoff.
	if w1At < time.Second || w1At > 1100*time.Millisecond {
		t.Errorf("W1 leased the channel freed at 1 s at %v, want by 1.1 s", w1At)
	}
	var ue *transfer.UnavailableError
	if !errors.As(w2, &ue) || ue.Code != CodeChannelsBusy {
		t.Errorf("W2 = %s, %v; want CHANNELS_BUSY: the one free channel went to the longer waiter", w2Lease.Account, w2)
	}
}

// Both channels are leased by another process; three callers of this process wait, from 0, 0.05
// and 0.1 s. Once the first has found both leased elsewhere, only it asks the store (myTurn: no
// channel looks free, and the oldest waiter still tries): 2 failed writes a round at 0, 0.1, 0.3,
// 0.7 and 1.5 s, 10 by 2.45 s, where counting the channels held elsewhere as free let the second
// caller ask too (20). The other process releases one channel at 2 s; the oldest caller finds it
// at its next round, 2.5 s, and the two others answer CHANNELS_BUSY.
func TestPoolOnlyTheOldestWaiterAsksAFullPool(t *testing.T) {
	clock, leases, keys, chans, pool := twoChannelPool(t)
	ctx := context.Background()
	start := clock.Now()
	for _, ch := range chans {
		if err := leases.LeaseChannel(ctx, ch.Address(), "other-process", start, start.Add(time.Hour), start.Add(time.Hour), start); err != nil {
			t.Fatal(err)
		}
	}
	var (
		wg         sync.WaitGroup
		errs       [3]error
		got        [3]Lease
		gotAt      [3]time.Duration
		collisions int64
	)
	release := clock.Hold()
	for i, arrives := range []time.Duration{0, 50 * time.Millisecond, 100 * time.Millisecond} {
		clock.Go(&wg, func() {
			_ = clock.Sleep(ctx, arrives)
			now := clock.Now()
			got[i], errs[i] = pool.Acquire(ctx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: now})
			gotAt[i] = clock.Now().Sub(start)
		})
	}
	clock.Go(&wg, func() { // the other process
		_ = clock.Sleep(ctx, 2*time.Second)
		if err := leases.ReleaseChannel(ctx, chans[0].Address(), "other-process"); err != nil {
			t.Error(err)
		}
	})
	clock.Go(&wg, func() {
		_ = clock.Sleep(ctx, 2450*time.Millisecond)
		collisions = pool.Stats().Collisions
	})
	release()
	wg.Wait()
	if collisions != 10 {
		t.Errorf("%d failed lease writes by 2.45 s, want 10: only the oldest waiter asks about channels known leased elsewhere", collisions)
	}
	if errs[0] != nil || got[0].Account != chans[0].Address() || gotAt[0] != 2500*time.Millisecond {
		t.Errorf("oldest caller: %s at %v, %v; want %s at 2.5 s", got[0].Account, gotAt[0], errs[0], chans[0].Address())
	}
	for i := 1; i < 3; i++ {
		var ue *transfer.UnavailableError
		if !errors.As(errs[i], &ue) || ue.Code != CodeChannelsBusy {
			t.Errorf("caller %d: %s, %v; want CHANNELS_BUSY", i+1, got[i].Account, errs[i])
		}
	}
}

// twoChannelPool is a pool of two channel accounts on an in-memory lease store and a virtual
// clock, with 5 s ledgers: what the waiting-queue tests share.
func twoChannelPool(t *testing.T) (*vclock.Clock, *sourcestest.Leases, signing.Keys, []*keypair.Full, *ChannelPool) {
	t.Helper()
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	leases := &sourcestest.Leases{}
	keys := sourcestest.Keys(t)
	keys.Channels = nil
	chans, err := ChannelKeys(keys, 2)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: 2, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	return clock, leases, keys, chans, pool
}
