// Package vclock is virtual time for tests and the fault campaign: a clock that moves only when
// told to, so nothing waits for real time.
//
// Alone, Sleep just moves the clock on. Goroutines started with Go are participants in a
// discrete-event schedule: time moves only when every participant sleeps, and then straight to
// the earliest wake-up. A participant blocked on I/O counts as running, so time stands still
// until it answers. A participant that runs functions at once with Parallel lends them its place
// while it waits for them. Concurrent callers therefore see one consistent timeline however the Go
// scheduler interleaves them.
package vclock

import (
	"context"
	"sync"
	"time"
)

// Clock is virtual time. The zero value is not usable; use New.
type Clock struct {
	mu        sync.Mutex
	now       time.Time
	onAdvance []func(now time.Time)
	active    int // participants not asleep
	managed   int // participants not finished
	sleepers  []sleeper
}

type sleeper struct {
	at   time.Time
	wake chan struct{}
}

// New returns a clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the virtual time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// OnAdvance registers fn to run after every move of the clock, with the new time and no lock
// held, before any sleeper wakes (for example to close the ledgers that are due).
func (c *Clock) OnAdvance(fn func(now time.Time)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onAdvance = append(c.onAdvance, fn)
}

// Hold keeps time still until release is called, so that participants started one after the
// other with Go all start at the same instant (otherwise the first may sleep, and time move,
// before the next is started). release must be called exactly once.
func (c *Clock) Hold() (release func()) {
	c.mu.Lock()
	c.active++
	c.managed++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.active--
			c.managed--
			c.advanceLocked()
		})
	}
}

// Go runs fn as a participant; wg.Done is called when it returns.
func (c *Clock) Go(wg *sync.WaitGroup, fn func()) {
	c.mu.Lock()
	c.active++
	c.managed++
	c.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			c.mu.Lock()
			c.active--
			c.managed--
			c.advanceLocked()
		}()
		fn()
	}()
}

// Parallel runs every fn at once, each on a goroutine of its own, and returns once all have
// returned (transfer.Orchestrator.Parallel). Called from a participant, it lends them the
// caller's place: while j of them are left they count as j participants and the caller, which
// waits without sleeping, as none; the last to return hands the place back to the caller at the
// instant it returns, so time cannot move between its end and the caller's going on. Called when
// there is no participant (Sleep just moves the clock), they are participants until each returns.
// Called from a goroutine that is not a participant while there are some, it would count one too
// few: don't.
func (c *Clock) Parallel(fns ...func()) {
	if len(fns) == 0 {
		return
	}
	c.mu.Lock()
	lend := c.managed > 0 // the caller is a participant: its place goes to the first of fns
	extra := len(fns)
	if lend {
		extra--
	}
	c.active += extra
	c.managed += extra
	c.mu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	left := len(fns)
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				mu.Lock()
				left--
				last := left == 0
				mu.Unlock()
				if !last || !lend {
					c.Done()
				}
			}()
			fn()
		}()
	}
	wg.Wait()
}

// Add counts n more participants, running, for goroutines that the caller does not start with Go
// (a library's own workers, such as the SQS handler's one goroutine per record) but that Sleep on
// this clock. Each of them must be handed back with Done once it will Sleep no more. A participant
// that waits for such goroutines without sleeping (sync.WaitGroup.Wait) still counts as running:
// it lends its own place to one of them by adding one fewer and handing that one back itself.
func (c *Clock) Add(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active += n
	c.managed += n
}

// Done hands back one participant counted with Add: time may move once every other participant
// sleeps.
func (c *Clock) Done() {
	c.mu.Lock()
	c.active--
	c.managed--
	c.advanceLocked()
}

// Sleep waits d of virtual time. It returns ctx.Err() once awake if ctx is done; a done context
// does not wake a participant early (time would otherwise fork).
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	if c.managed == 0 {
		c.now = c.now.Add(d)
		now, fns := c.now, c.onAdvance
		c.mu.Unlock()
		for _, fn := range fns {
			fn(now)
		}
		return ctx.Err()
	}
	s := sleeper{at: c.now.Add(d), wake: make(chan struct{})}
	c.sleepers = append(c.sleepers, s)
	c.active--
	c.advanceLocked()
	<-s.wake
	return ctx.Err()
}

// Advance moves the clock on by d outside any schedule (between phases of a test).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	now, fns := c.now, c.onAdvance
	c.mu.Unlock()
	for _, fn := range fns {
		fn(now)
	}
}

// advanceLocked moves time to the earliest wake-up once every participant sleeps. It is called
// with c.mu held and unlocks it.
func (c *Clock) advanceLocked() {
	if c.active > 0 || len(c.sleepers) == 0 {
		c.mu.Unlock()
		return
	}
	next := c.sleepers[0].at
	for _, s := range c.sleepers[1:] {
		if s.at.Before(next) {
			next = s.at
		}
	}
	if next.After(c.now) {
		c.now = next
	}
	var woken []sleeper
	kept := c.sleepers[:0]
	for _, s := range c.sleepers {
		if s.at.After(c.now) {
			kept = append(kept, s)
		} else {
			woken = append(woken, s)
		}
	}
	c.sleepers = kept
	c.active += len(woken)
	now, fns := c.now, c.onAdvance
	c.mu.Unlock()
	for _, fn := range fns {
		fn(now)
	}
	for _, s := range woken {
		close(s.wake)
	}
}
