package vclock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

func TestAloneSleepMovesTime(t *testing.T) {
	start := time.Unix(100, 0)
	c := vclock.New(start)
	var seen []time.Time
	c.OnAdvance(func(now time.Time) { seen = append(seen, now) })
	_ = c.Sleep(context.Background(), 3*time.Second)
	if !c.Now().Equal(start.Add(3*time.Second)) || len(seen) != 1 {
		t.Fatalf("now = %v, advances = %v", c.Now(), seen)
	}
}

func TestParticipantsShareOneTimeline(t *testing.T) {
	start := time.Unix(100, 0)
	c := vclock.New(start)
	var mu sync.Mutex
	order := []int{}
	var wg sync.WaitGroup
	release := c.Hold() // all three start at the same instant
	for i, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second} {
		c.Go(&wg, func() {
			_ = c.Sleep(context.Background(), d)
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if got := c.Now().Sub(start); got != d {
				t.Errorf("participant %d woke at +%v, want +%v", i, got, d)
			}
		})
	}
	release()
	wg.Wait()
	if len(order) != 3 || order[0] != 1 || order[1] != 2 || order[2] != 0 {
		t.Fatalf("wake order = %v, want [1 2 0]", order)
	}
	if got := c.Now().Sub(start); got != 3*time.Second {
		t.Fatalf("clock at +%v, want +3s: time must not run further than the last wake-up", got)
	}
}

func TestBusyParticipantHoldsTime(t *testing.T) {
	c := vclock.New(time.Unix(0, 0))
	release := make(chan struct{})
	var wg sync.WaitGroup
	woke := make(chan time.Time, 1)
	c.Go(&wg, func() { <-release }) // busy (e.g. on I/O) until released
	c.Go(&wg, func() {
		_ = c.Sleep(context.Background(), time.Hour)
		woke <- c.Now()
	})
	select {
	case <-woke:
		t.Fatal("time moved while a participant was busy")
	default:
	}
	close(release)
	wg.Wait()
	if got := <-woke; !got.Equal(time.Unix(3600, 0)) {
		t.Fatalf("woke at %v", got)
	}
}

// A participant that waits, without sleeping, for goroutines it did not start with Go lends them
// its place (Add one fewer, Done all but its own): they share the timeline, and time moves while
// the waiting participant is blocked.
func TestAddLendsPlacesToOtherGoroutines(t *testing.T) {
	start := time.Unix(100, 0)
	c := vclock.New(start)
	var wg sync.WaitGroup
	var woke [3]time.Duration
	c.Go(&wg, func() {
		c.Add(3 - 1)
		var mu sync.Mutex
		left := 3
		var workers sync.WaitGroup
		for i, d := range []time.Duration{2 * time.Second, 5 * time.Second, 3 * time.Second} {
			workers.Go(func() {
				_ = c.Sleep(context.Background(), d)
				woke[i] = c.Now().Sub(start)
				mu.Lock()
				left--
				last := left == 0
				mu.Unlock()
				if !last {
					c.Done()
				}
			})
		}
		workers.Wait()
		_ = c.Sleep(context.Background(), time.Second)
	})
	// Another participant sleeping past the workers: time must not jump to it while they work.
	c.Go(&wg, func() { _ = c.Sleep(context.Background(), 10*time.Second) })
	wg.Wait()
	if woke != [3]time.Duration{2 * time.Second, 5 * time.Second, 3 * time.Second} {
		t.Errorf("workers woke at %v, want [2s 5s 3s]", woke)
	}
	if got := c.Now().Sub(start); got != 10*time.Second {
		t.Errorf("the clock ended at +%v, want +10s", got)
	}
}

// Parallel from a participant lends its place: time moves while the functions sleep (the
// caller, waiting, does not hold it), another participant keeps its own timeline, and the caller
// goes on at the instant the last function returns.
func TestParallelLendsTheCallersPlace(t *testing.T) {
	start := time.Unix(100, 0)
	c := vclock.New(start)
	var wg sync.WaitGroup
	var mu sync.Mutex
	woke := map[string]time.Duration{}
	note := func(name string) {
		mu.Lock()
		woke[name] = c.Now().Sub(start)
		mu.Unlock()
	}
	release := c.Hold()
	c.Go(&wg, func() {
		c.Parallel(
			func() {
				_ = c.Sleep(context.Background(), time.Second)
				_ = c.Sleep(context.Background(), time.Second)
				note("f1")
			},
			func() { _ = c.Sleep(context.Background(), 3*time.Second); note("f2") },
			func() { note("f3") },
		)
		note("caller returned")
		_ = c.Sleep(context.Background(), time.Second)
		note("caller slept")
	})
	c.Go(&wg, func() { _ = c.Sleep(context.Background(), 2500*time.Millisecond); note("other") })
	release()
	wg.Wait()
	want := map[string]time.Duration{"f1": 2 * time.Second, "f2": 3 * time.Second, "f3": 0, "other": 2500 * time.Millisecond,
		"caller returned": 3 * time.Second, "caller slept": 4 * time.Second}
	for k, v := range want {
		if woke[k] != v {
			t.Errorf("%s at +%v, want +%v (all: %v)", k, woke[k], v, woke)
		}
	}
}

// Parallel with no participant makes its functions participants: they share one timeline and
// the clock ends at the last wake-up.
func TestParallelWithoutParticipants(t *testing.T) {
	start := time.Unix(100, 0)
	c := vclock.New(start)
	var mu sync.Mutex
	var order []time.Duration
	sleep := func(d time.Duration) func() {
		return func() {
			_ = c.Sleep(context.Background(), d)
			mu.Lock()
			order = append(order, c.Now().Sub(start))
			mu.Unlock()
		}
	}
	c.Parallel(sleep(2*time.Second), sleep(time.Second))
	if len(order) != 2 || order[0] != time.Second || order[1] != 2*time.Second || c.Now().Sub(start) != 2*time.Second {
		t.Fatalf("woke at %v, clock at +%v; want [1s 2s], +2s", order, c.Now().Sub(start))
	}
	_ = c.Sleep(context.Background(), time.Second) // alone again: Sleep just moves the clock
	if c.Now().Sub(start) != 3*time.Second {
		t.Fatalf("clock at +%v after sleeping alone, want +3s", c.Now().Sub(start))
	}
}
