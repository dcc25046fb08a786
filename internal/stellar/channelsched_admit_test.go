package stellar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// admitPool is scheduledPool with a latest ledger close (lastClose; zero: none known) for admit.
func admitPool(t *testing.T, clock *vclock.Clock, leases LeaseStore, tickets TicketStore, count int, lastClose time.Time) (Keys, []*keypair.Full, *ChannelPool) {
	t.Helper()
	keys := testKeys(t)
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
	leases := &memLeases{}
	tickets := &memTickets{next: 6, nextAt: start.Add(20 * time.Second)}
	// Ledgers close 3 s before start, every 5 s: the release points (0.6 into a ledger) fall on
	// start + 5k s, so the slot at start + 20 s stays there.
	keys, chans, pool := admitPool(t, clock, leases, tickets, 4, start.Add(-3*time.Second))
	ctx := context.Background()
	maxTime := func() time.Time { return clock.Now().Add(60 * time.Second) }
	_, err := pool.admit(ctx, chans, maxTime())
	wantBusy(t, err, 20*time.Second)
	_ = clock.Sleep(ctx, 5*time.Second)
	_, err = pool.admit(ctx, chans, maxTime())
	wantBusy(t, err, 15*time.Second)
	if len(leases.granted) != 0 || clock.Now().Sub(start) != 5*time.Second {
		t.Fatalf("busy admissions wrote leases %v or waited", leases.granted)
	}
	_ = clock.Sleep(ctx, 15*time.Second)
	actx, err := pool.admit(ctx, chans, maxTime())
	if err != nil {
		t.Fatalf("at the slot's time: %v", err)
	}
	now := clock.Now()
	lease, err := pool.acquire(actx, keys, leaseTerms{until: now.Add(30 * time.Second), maxTime: now.Add(30 * time.Second), ledgerClose: now.Add(-3 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if want := chans[6%4].Address(); lease.account != want {
		t.Errorf("leased %s, want ticket 6's channel %s", lease.account, want)
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
		_, chans, admitting := admitPool(t, clock, &memLeases{}, &memTickets{next: 3, nextAt: start.Add(ahead)}, 4, lastClose)
		keys, _, acquiring := admitPool(t, clock, &memLeases{}, &memTickets{next: 3, nextAt: start.Add(ahead)}, 4, lastClose)
		maxTime := start.Add(60 * time.Second)
		_, err := admitting.admit(context.Background(), chans, maxTime)
		_, want := acquiring.acquire(context.Background(), keys, leaseTerms{until: maxTime, maxTime: maxTime, ledgerClose: lastClose})
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
	keys, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, clock.Now().Add(-time.Second))
	ctx := context.Background()
	now := clock.Now()
	actx, err := pool.admit(ctx, chans, now.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	lease, err := pool.acquire(actx, keys, leaseTerms{until: now.Add(30 * time.Second), maxTime: now.Add(30 * time.Second), ledgerClose: now.Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if lease.account != chans[0].Address() || tickets.booked() != 1 {
		t.Errorf("leased %s after %d bookings, want ticket 0's channel %s after 1", lease.account, tickets.booked(), chans[0].Address())
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
	_, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, time.Time{})
	if _, err := pool.admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil || tickets.booked() != 0 {
		t.Fatalf("no ledger close known: %v after %d bookings, want nil after none", err, tickets.booked())
	}
	failing := &memTickets{fail: errors.New("ThrottlingException")}
	keys, chans, pool := admitPool(t, clock, &memLeases{}, failing, 4, clock.Now().Add(-time.Second))
	if _, err := pool.admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("a failing calendar: %v, want nil", err)
	}
	now := clock.Now()
	if _, err := pool.acquire(ctx, keys, leaseTerms{until: now.Add(30 * time.Second), maxTime: now.Add(30 * time.Second), ledgerClose: now.Add(-time.Second)}); err != nil {
		t.Fatalf("the acquire after a failed admission booking: %v, want an unscheduled lease", err)
	}
	noCalendar, err := NewChannelPool(ChannelPoolConfig{Leases: &memLeases{}, Count: 4, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noCalendar.admit(ctx, chans, clock.Now().Add(30*time.Second)); err != nil {
		t.Fatalf("no calendar: %v, want nil", err)
	}
}

// The ledger's admission leaves a request Prepare would refuse before asking for a source to
// Prepare: with every slot beyond the wait, a withdrawal of an unknown asset, to a C... wallet,
// to the vault or to a channel account, or a deposit, is not answered CHANNELS_BUSY (the client
// would retry a request that can never go through) and books no slot. A valid request is
// answered busy; without channels nothing is decided.
func TestAdmitLeavesARefusedRequestToPrepare(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &memTickets{next: 6, nextAt: clock.Now().Add(20 * time.Second)}
	keys, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, clock.Now().Add(-3*time.Second))
	assets := usdcOnly()
	c, err := newCommon("test", keys.Vault.Address(), assets, 100, 0, 90, StaticKeys{K: keys}, pool, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	wallet := keypair.MustRandom().Address()
	contract := strkey.MustEncode(strkey.VersionByteContract, make([]byte, 32))
	ctx := context.Background()
	maxTime := clock.Now().Add(60 * time.Second)
	for name, req := range map[string]transfer.Request{
		"unknown asset":     {OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "EURC", Stroops: 1},
		"contract wallet":   {OperationType: transfer.Withdraw, WalletAddress: contract, Asset: "USDC", Stroops: 1},
		"the vault":         {OperationType: transfer.Withdraw, WalletAddress: keys.Vault.Address(), Asset: "USDC", Stroops: 1},
		"a channel account": {OperationType: transfer.Withdraw, WalletAddress: chans[1].Address(), Asset: "USDC", Stroops: 1},
		"a deposit":         {OperationType: transfer.Deposit, WalletAddress: wallet, Asset: "USDC", Stroops: 1},
	} {
		if _, err := c.Admit(ctx, req, maxTime); err != nil {
			t.Errorf("%s: %v, want nil (Prepare refuses it)", name, err)
		}
	}
	if n := tickets.booked(); n != 0 {
		t.Fatalf("%d bookings for requests Prepare refuses", n)
	}
	_, err = c.Admit(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "USDC", Stroops: 1}, maxTime)
	wantBusy(t, err, 20*time.Second)
	vaultOnly, err := newCommon("test", keys.Vault.Address(), assets, 100, 0, 90, StaticKeys{K: keys}, nil, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := vaultOnly.Admit(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Asset: "USDC", Stroops: 1}, maxTime); err != nil {
		t.Fatalf("without channels: %v, want nil", err)
	}
}

// One process serving concurrent callers: the slot admit gives a call is that call's alone. A
// second call admitted meanwhile books a slot of its own rather than take the first call's, and
// each call's acquire leases its own slot's channel; no call is answered busy.
func TestAnAdmittedSlotIsItsCallsAlone(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &memTickets{}
	keys, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, clock.Now().Add(-time.Second))
	ctx := context.Background()
	now := clock.Now()
	maxTime := now.Add(30 * time.Second)
	first, err := pool.admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	second, err := pool.admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	terms := leaseTerms{until: maxTime, maxTime: maxTime, ledgerClose: now.Add(-time.Second)}
	b, err := pool.acquire(second, keys, terms)
	if err != nil {
		t.Fatal(err)
	}
	a, err := pool.acquire(first, keys, terms)
	if err != nil {
		t.Fatal(err)
	}
	if a.account != chans[0].Address() || b.account != chans[1].Address() {
		t.Errorf("the first call leased %s, the second %s; want tickets 0 and 1: %s and %s", a.account, b.account, chans[0].Address(), chans[1].Address())
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
	keys, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, start.Add(-3*time.Second))
	c, err := newCommon("test", keys.Vault.Address(), usdcOnly(), 100, 0, 90, StaticKeys{K: keys}, pool, clock, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	maxTime := start.Add(60 * time.Second)
	replay, err := pool.admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	c.Release(replay) // the claim lost to a settled item: no acquire
	next, err := pool.admit(ctx, chans, maxTime)
	if err != nil {
		t.Fatal(err)
	}
	now := clock.Now()
	lease, err := pool.acquire(next, keys, leaseTerms{until: maxTime, maxTime: maxTime, ledgerClose: now.Add(-3 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	c.Release(next)
	if lease.account != chans[6%4].Address() || tickets.booked() != 1 {
		t.Errorf("leased %s after %d bookings, want the replay's slot (ticket 6: %s) after 1", lease.account, tickets.booked(), chans[6%4].Address())
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
	keys, chans, pool := admitPool(t, clock, &memLeases{}, tickets, 4, start.Add(-3*time.Second))
	ctx := context.Background()
	maxTime := func() time.Time { return clock.Now().Add(60 * time.Second) }
	first, err := pool.admit(ctx, chans, maxTime())
	if err != nil {
		t.Fatal(err)
	}
	pool.unadmit(first) // a replay: its slot is kept for the next call
	if _, ok := pool.reserved(clock.Now(), time.Hour); !ok {
		t.Fatal("the replay's slot was not kept")
	} // taken: by the process's next call
	if actx, err := pool.admit(ctx, chans, maxTime()); err != nil || actx != ctx || tickets.booked() != 1 {
		t.Fatalf("with room: %v after %d bookings, want nil and no slot after 1 (no booking before the claim)", err, tickets.booked())
	}
	tickets.mu.Lock()
	tickets.nextAt = clock.Now().Add(20 * time.Second) // other processes fill the calendar
	tickets.mu.Unlock()
	now := clock.Now()
	_, err = pool.acquire(ctx, keys, leaseTerms{until: maxTime(), maxTime: maxTime(), ledgerClose: now.Add(-3 * time.Second)})
	wantBusy(t, err, 20*time.Second)
	if _, ok := pool.reserved(clock.Now(), time.Hour); !ok {
		t.Fatal("the busy call's slot was not kept")
	} // taken: by the client's retry
	_, err = pool.admit(ctx, chans, maxTime())
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeChannelsBusy || ue.RetryAfter < 20*time.Second {
		t.Fatalf("the calendar full: %v, want CHANNELS_BUSY at least 20 s ahead", err)
	}
	if n := tickets.booked(); n != 3 {
		t.Fatalf("%d bookings, want 3: the first admission, the acquire's, the admission once full", n)
	}
}
