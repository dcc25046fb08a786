package sources

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// deadlineLeases records the time left on each ReleaseChannel's context, by its own timer.
type deadlineLeases struct {
	LeaseStore
	left []time.Duration
}

func (l *deadlineLeases) ReleaseChannel(ctx context.Context, channel, owner string) error {
	if dl, ok := ctx.Deadline(); ok {
		l.left = append(l.left, time.Until(dl))
	} else {
		l.left = append(l.left, -1)
	}
	return l.LeaseStore.ReleaseChannel(ctx, channel, owner)
}

// A lease's release is bounded by ReleaseTimeout on the context's own timer, DefaultReleaseTimeout
// (2 s) when unset, even when the caller's context has no deadline; a pool configured longer (a
// simulation in virtual time) gives it that long.
func TestReleaseTimeout(t *testing.T) {
	keys := sourcestest.Keys(t)
	for _, c := range []struct {
		set, want time.Duration
	}{{0, DefaultReleaseTimeout}, {time.Minute, time.Minute}} {
		clock := vclock.New(time.Unix(1_800_000_000, 0))
		leases := &deadlineLeases{LeaseStore: &sourcestest.Leases{}}
		pool, err := NewChannelPool(ChannelPoolConfig{Leases: leases, Count: 1, Clock: clock, ReleaseTimeout: c.set})
		if err != nil {
			t.Fatal(err)
		}
		start := clock.Now()
		lease, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: start.Add(30 * time.Second), MaxTime: start.Add(30 * time.Second)})
		if err != nil {
			t.Fatal(err)
		}
		pool.Release(context.Background(), lease, transfer.Envelope{Channel: lease.Account})
		if len(leases.left) != 1 || leases.left[0] > c.want || leases.left[0] < c.want-time.Second {
			t.Errorf("ReleaseTimeout %v: the release had %v left, want about %v", c.set, leases.left, c.want)
		}
		if st := pool.Stats(); st.Releases != 1 {
			t.Errorf("ReleaseTimeout %v: %d releases, want 1", c.set, st.Releases)
		}
	}
}
