package stellar

import (
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
)

// heldMargin is how long past a held lease's deadline and maxTime the pool still skips a
// channel without asking the store.
const heldMargin = sources.HeldMargin

// fakeClock is a clock that moves only when told to.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}
