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
