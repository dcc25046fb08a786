package stellar

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

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
		leases := &memLeases{}
		keys, _, pool := scheduledPool(t, clock, leases, tickets, 4)
		ctx := context.Background()
		for i := range 3 {
			now := clock.Now()
			lease, err := pool.acquire(ctx, keys, leaseTerms{until: now.Add(30 * time.Second), maxTime: now.Add(30 * time.Second), ledgerClose: now})
			var ue *transfer.UnavailableError
			if errors.As(err, &ue) {
				t.Fatalf("calendar %v ahead, call %d: %v (Retry-After %v), want a lease: every channel is idle", ahead, i+1, err, ue.RetryAfter)
			}
			if err != nil {
				t.Fatal(err)
			}
			pool.release(ctx, lease, transfer.Envelope{Channel: lease.account})
		}
	}
}

// slotRetryAfter never overflows into a Retry-After shorter than the slot's distance.
func TestSlotRetryAfterIsNeverShorterThanTheSlot(t *testing.T) {
	for _, d := range []time.Duration{0, time.Millisecond, 1500 * time.Millisecond, time.Hour, math.MaxInt64, math.MaxInt64 - 1, math.MaxInt64 - time.Second/2} {
		if got := slotRetryAfter(d); got < d || got < time.Second {
			t.Errorf("slotRetryAfter(%v) = %v, shorter than the slot", d, got)
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
	keys := testKeys(t)
	all, err := DeriveChannelKeys(keys.ChannelMaster, 8)
	if err != nil {
		t.Fatal(err)
	}
	keys.ChannelMaster = MasterSeed{}
	keys.Channels = all
	leases := &memLeases{}
	tickets := &memTickets{next: 7, nextAt: start.Add(20 * time.Second)}
	pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Tickets: tickets, Clock: clock,
		LedgerInterval: func() time.Duration { return 5 * time.Second }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	terms := func() leaseTerms {
		now := clock.Now()
		return leaseTerms{until: now.Add(30 * time.Second), maxTime: now.Add(30 * time.Second)}
	}
	var ue *transfer.UnavailableError
	if _, err := pool.acquire(ctx, keys, terms()); !errors.As(err, &ue) || ue.Code != CodeChannelsBusy {
		t.Fatalf("first call: %v, want CHANNELS_BUSY (ticket 7 kept)", err)
	}
	_ = clock.Sleep(ctx, 20*time.Second)
	keys.Channels = all[:4] // the secret rotated to 4 channelSeeds
	lease, err := pool.acquire(ctx, keys, terms())
	if err != nil {
		t.Fatal(err)
	}
	if want := all[7%4].Address(); lease.account != want {
		t.Errorf("leased %s, want ticket 7's channel among 4: %s", lease.account, want)
	}
}
