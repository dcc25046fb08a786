package sources

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A slot admit set aside for a call is leased only within its grace, as a kept slot is
// (reserved): a call whose claim lost to its own request in flight waits for that holder, and
// when the holder's envelope is proven dead the call claims again and prepares, long after its
// admitted slot's time. Leasing the channel then meets the caller of that channel's next slot;
// the call books anew instead.
func TestAnAdmittedSlotPastItsGraceIsNotLeased(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	start := clock.Now()
	tickets := &memTickets{next: 6, nextAt: start.Add(2 * time.Second)}
	keys, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, start.Add(-4*time.Second))
	ctx := context.Background()
	actx, err := pool.Admit(ctx, chans, start.Add(60*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	// The call waits 30 s (six ledgers) on its holder before its claim wins.
	_ = clock.Sleep(ctx, 30*time.Second)
	now := clock.Now()
	maxTime := now.Add(60 * time.Second)
	lease, err := pool.Acquire(actx, keys, LeaseTerms{Until: maxTime, MaxTime: maxTime, LedgerClose: now.Add(-4 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Account == chans[6%4].Address() || tickets.booked() != 2 {
		t.Errorf("leased %s after %d bookings: the admitted slot (ticket 6, %s), 28 s past its time; want a new booking's channel (ticket 7: %s)",
			lease.Account, tickets.booked(), chans[6%4].Address(), chans[7%4].Address())
	}
}

// One process, many concurrent calls whose claims all lose (duplicates of a request in flight):
// each admitted slot is its call's alone, and every one is kept once for the process's next
// calls, none twice and none lost (run with -race).
func TestConcurrentAdmissionsKeepEachUnusedSlotOnce(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &memTickets{}
	_, chans, pool := admitPool(t, clock, &sourcestest.Leases{}, tickets, 4, clock.Now().Add(-time.Second))
	maxTime := clock.Now().Add(60 * time.Second)
	const calls = 16
	ctxs := make([]context.Context, calls)
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() { ctxs[i], errs[i] = pool.Admit(context.Background(), chans, maxTime) })
	}
	wg.Wait()
	admitted := map[int64]bool{}
	busy := 0
	for i := range calls {
		if errs[i] != nil {
			busy++ // its slot, beyond the wait, is kept too
			continue
		}
		if h, _ := ctxs[i].Value(admittedKey{}).(*admittedSlot); h != nil {
			if admitted[h.r.n] {
				t.Fatalf("ticket %d admitted to two calls", h.r.n)
			}
			admitted[h.r.n] = true
		}
	}
	for i := range calls {
		wg.Go(func() { pool.Unadmit(ctxs[i]); pool.Unadmit(ctxs[i]) })
	}
	wg.Wait()
	kept := map[int64]int{}
	for {
		r, ok := pool.reserved(clock.Now(), time.Hour)
		if !ok {
			break
		}
		kept[r.n]++
	}
	for n := range admitted {
		if kept[n] != 1 {
			t.Errorf("ticket %d kept %d times, want once", n, kept[n])
		}
	}
	for n, k := range kept {
		if k != 1 {
			t.Errorf("ticket %d kept %d times, want once", n, k)
		}
	}
	if len(kept) != len(admitted)+busy {
		t.Errorf("kept %v for admitted %v and %d busy answers", kept, admitted, busy)
	}
}
