package sources

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A ledger's tickets all lease in that ledger: the calendar books from the start of the ledger a
// call falls in, and a slot leases at the release point of the ledger its time falls in, never
// later. So processes that book a batch each once a ledger (SubmitterFunction's invocations:
// BatchSize concurrent runs, MaxConcurrency environments, BatchSize x MaxConcurrency = channels)
// fill every channel in every ledger, and an invocation lasts one ledger: its runs book after the
// previous batch settled, about half a ledger in, and every slot lands at the next close.
//
// Each run holds its channel until 2.7 s after the close its transfer lands at (RPC shows the
// ledger, the outcome is written), and a process's next batch begins when its last run has
// released. The figures: every ledger carries channels transfers, each channel one, each batch
// lands in one ledger, no failed lease write and no busy answer. Booked from now and aligned to
// the release point at or after a slot, the batches booked second land a ledger later, past the
// wait here (CHANNELS_BUSY), and an invocation lasts two ledgers: 0.56 to 0.71 of the bound
// (internal/loadtest's BenchmarkAsync, SubmitterFunction waiting three ledgers).
func TestALedgersTicketsAllLeaseInThatLedger(t *testing.T) {
	for _, c := range []struct{ channels, processes, batch int }{{4, 2, 2}, {16, 2, 8}, {64, 8, 8}} {
		t.Run(fmt.Sprintf("channels=%d/%dx%d", c.channels, c.batch, c.processes), func(t *testing.T) {
			ledgerBatchesCase(t, c.channels, c.processes, c.batch)
		})
	}
}

func ledgerBatchesCase(t *testing.T, channels, processes, batch int) {
	const interval, settle, ledgers = 5 * time.Second, 2700 * time.Millisecond, 6
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	first := clock.Now() // a close
	clock.Advance(settle)
	deadline := first.Add((ledgers + 2) * interval)
	lastClose := func(now time.Time) time.Time { return first.Add(now.Sub(first).Truncate(interval)) }
	leases, tickets := &sourcestest.Leases{}, &memTickets{}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		landed  = map[string]map[int64]bool{} // channel -> ledgers it carried a transfer into
		perLedg = map[int64]int{}
		errs    []error
		pools   []*ChannelPool
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}
	ctx := context.Background()
	release := clock.Hold()
	for range processes {
		keys, _, pool := scheduledPool(t, clock, leases, tickets, channels)
		pools = append(pools, pool)
		// One batch at a time: run i of a batch waits, after its release, until every run of the
		// batch has released (the invocation returns), then starts the next batch's run i.
		var (
			bmu      sync.Mutex
			done     int
			inBatch  = map[int]map[int64]bool{} // batch -> ledgers its runs landed in
			batchNum = make([]int, batch)
		)
		for i := range batch {
			clock.Go(&wg, func() {
				for batchNum[i] < ledgers {
					now := clock.Now()
					lease, err := pool.Acquire(ctx, keys, LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: lastClose(now)})
					if err != nil {
						fail(fmt.Errorf("batch %d run %d at %v: %w", batchNum[i], i, now.Sub(first), err))
						return
					}
					closeAt := lastClose(clock.Now()).Add(interval) // lands at the next close
					ledger := int64(closeAt.Sub(first) / interval)
					mu.Lock()
					if landed[lease.Account] == nil {
						landed[lease.Account] = map[int64]bool{}
					}
					if landed[lease.Account][ledger] {
						errs = append(errs, fmt.Errorf("channel %s carried two transfers into ledger %d", lease.Account, ledger))
					}
					landed[lease.Account][ledger] = true
					perLedg[ledger]++
					mu.Unlock()
					bmu.Lock()
					if inBatch[batchNum[i]] == nil {
						inBatch[batchNum[i]] = map[int64]bool{}
					}
					inBatch[batchNum[i]][ledger] = true
					if len(inBatch[batchNum[i]]) > 1 {
						fail(fmt.Errorf("a batch landed in ledgers %v", inBatch[batchNum[i]]))
					}
					bmu.Unlock()
					_ = clock.Sleep(ctx, closeAt.Add(settle).Sub(clock.Now()))
					pool.Release(ctx, lease, transfer.Envelope{Channel: lease.Account})
					bmu.Lock()
					done++
					mine := batchNum[i]
					bmu.Unlock()
					for {
						bmu.Lock()
						all := done >= (mine+1)*batch
						bmu.Unlock()
						if all {
							break
						}
						if clock.Now().After(deadline) {
							fail(fmt.Errorf("batch %d: a run never released (at %v)", mine, clock.Now().Sub(first)))
							return
						}
						_ = clock.Sleep(ctx, time.Millisecond)
					}
					batchNum[i]++
				}
			})
		}
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
	}
	if st.Collisions != 0 || st.Busy != 0 {
		t.Errorf("stats %+v, want no failed lease write and no busy answer", st)
	}
	for l := int64(1); l <= ledgers; l++ {
		if perLedg[l] != channels {
			t.Errorf("ledger %d carried %d transfers, want %d (every channel); all: %v", l, perLedg[l], channels, perLedg)
		}
	}
}
