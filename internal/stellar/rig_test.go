package stellar

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
)

// heldMargin is how long past a held lease's deadline and maxTime the pool still skips a
// channel without asking the store.
const heldMargin = sources.HeldMargin

// testKeys are random keys with two listed channels and a SEP-5 master seed.
func testKeys(t *testing.T) signing.Keys {
	t.Helper()
	k, err := signing.GenerateKeys(2)
	if err != nil {
		t.Fatal(err)
	}
	k.ChannelMaster = signing.NewMasterSeed(bytes.Repeat([]byte{0xab}, 64))
	return k
}

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
