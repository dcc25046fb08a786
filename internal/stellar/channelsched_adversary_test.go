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
