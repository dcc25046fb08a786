package stellar

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// herdChain is a chain whose fee stats read blocks until released, counting the reads.
type herdChain struct {
	chain
	reads   atomic.Int32
	release chan struct{}
}

func (h *herdChain) feeStats(context.Context) (marketFees, error) {
	h.reads.Add(1)
	<-h.release
	d := newFeeDistribution(100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	return marketFees{d, d}, nil
}

// blockedIn counts the goroutines blocked on a channel (or a select) with fn on their stack.
func blockedIn(fn string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if (strings.Contains(head, "[chan receive") || strings.Contains(head, "[select")) && strings.Contains(g, fn) {
			count++
		}
	}
	return count
}

// One process runs a batch of transfers at once (the submitter's BatchSize, up to 8), and their
// envelopes all want the market when FeeStatsTTL has run out. The fee stats are read once for all
// of them: over Horizon a read is GET /ledgers plus up to 5 ledger transaction pages
// (horizon_fees.go), and a batch reading it each would multiply that by the batch, against
// Horizon's per-IP rate limit, with the same answer. The envelopes that come while a read is under
// way wait for it and take its figures.
func TestFeeStatsReadOncePerTTLForConcurrentEnvelopes(t *testing.T) {
	const batch = 8
	clock := vclock.New(time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC))
	c := &common{clock: clock, fees: &feeCache{}}
	ch := &herdChain{release: make(chan struct{})}
	var wg sync.WaitGroup
	errs := make([]error, batch)
	for i := range batch {
		clock.Go(&wg, func() {
			_, errs[i] = c.marketFees(context.Background(), ch)
		})
	}
	// Every envelope has reached the market and is blocked: in its own read, or waiting for
	// another's. Then the read (or reads) answer.
	for blockedIn("(*common).marketFees") < batch {
		runtime.Gosched()
	}
	close(ch.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("envelope %d: %v", i, err)
		}
	}
	if n := ch.reads.Load(); n != 1 {
		t.Errorf("%d fee stats reads for %d envelopes within FeeStatsTTL, want 1", n, batch)
	}
}

// cancelChain's first fee stats read blocks until its envelope's context ends; the later ones
// answer.
type cancelChain struct {
	chain
	reads atomic.Int32
}

func (h *cancelChain) feeStats(ctx context.Context) (marketFees, error) {
	if h.reads.Add(1) == 1 {
		<-ctx.Done()
		return marketFees{}, ctx.Err()
	}
	d := newFeeDistribution(100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	return marketFees{d, d}, nil
}

// An envelope that waits for another's read of the fee stats is not failed by that envelope's
// end: the reader's invocation is cancelled (its client gone, its deadline past), which says
// nothing of the network, so the waiting envelope reads for itself and gets the market.
func TestFeeStatsWaiterIsNotFailedByTheReadersCancellation(t *testing.T) {
	clock := vclock.New(time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC))
	c := &common{clock: clock, fees: &feeCache{}}
	ch := &cancelChain{}
	readerCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var readerErr, waiterErr error
	var got marketFees
	clock.Go(&wg, func() { _, readerErr = c.marketFees(readerCtx, ch) })
	for blockedIn("(*common).marketFees") < 1 {
		runtime.Gosched()
	}
	clock.Go(&wg, func() { got, waiterErr = c.marketFees(context.Background(), ch) })
	for blockedIn("(*common).marketFees") < 2 {
		runtime.Gosched()
	}
	cancel()
	wg.Wait()
	if !errors.Is(readerErr, context.Canceled) {
		t.Errorf("the cancelled reader: %v, want context.Canceled", readerErr)
	}
	if waiterErr != nil || got[laneClassic].at(90) != 100 {
		t.Errorf("the waiting envelope: %v, %v; want the market read for itself", got, waiterErr)
	}
	if n := ch.reads.Load(); n != 2 {
		t.Errorf("%d fee stats reads, want 2 (the cancelled one, then the waiter's own)", n)
	}
}

// rttChain's fee stats read takes a round trip on the virtual clock, as the benchmarks' and the
// fault campaign's transports do.
type rttChain struct {
	chain
	clock *vclock.Clock
	reads atomic.Int32
}

func (h *rttChain) feeStats(ctx context.Context) (marketFees, error) {
	h.reads.Add(1)
	if err := h.clock.Sleep(ctx, 15*time.Millisecond); err != nil {
		return marketFees{}, err
	}
	d := newFeeDistribution(100, 100, 100, 100, 100, 100, 100, 100, 100, 100, 100)
	return marketFees{d, d}, nil
}

// Envelopes waiting for another's read of the fee stats wait on the injected clock. Under virtual
// time, which moves only when every participant sleeps, a waiter blocked on a channel counted as
// running: the reader's round trip never ended and a burst of transfers in one process stood
// still for good (BenchmarkAsync, every submitter batch).
func TestFeeStatsWaitersSleepOnTheClock(t *testing.T) {
	const batch = 8
	start := time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC)
	clock := vclock.New(start)
	c := &common{clock: clock, fees: &feeCache{}}
	ch := &rttChain{clock: clock}
	var wg sync.WaitGroup
	errs := make([]error, batch)
	for i := range batch {
		clock.Go(&wg, func() {
			_, errs[i] = c.marketFees(context.Background(), ch)
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the envelopes still wait for the fee stats after a minute of real time: virtual time stands still")
	}
	for i, err := range errs {
		if err != nil {
			t.Errorf("envelope %d: %v", i, err)
		}
	}
	if n := ch.reads.Load(); n != 1 {
		t.Errorf("%d fee stats reads for %d envelopes, want 1", n, batch)
	}
	// The waiters see the read's end within one poll of it.
	if took := clock.Now().Sub(start); took < 15*time.Millisecond || took > 15*time.Millisecond+feeReadPoll {
		t.Errorf("the envelopes had the market after %v of virtual time, want 15 ms (the read) and at most one poll more", took)
	}
}
