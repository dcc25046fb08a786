package sources

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A calendar idle for centuries (its time as far back as a stored value can say: internal/dynamo
// clamps a time past int64 nanoseconds to 1677) restarts with every channel's previous slot long
// gone: the first round of the restarted run leases at its booked times (the restarted slot at
// once), as on a calendar idle for a minute, never at the release point.
// The ledger a time that far back falls in is found without overflowing a Duration
// (ledgerStart), never placed centuries ahead, which would hold those slots to the release point.
func TestARunRestartedOnACalendarIdleForCenturiesLeasesItsFirstRoundAtItsBookedTimes(t *testing.T) {
	for name, back := range map[string]time.Time{
		"a minute":            time.Unix(1_800_000_000, 0).Add(-time.Minute),
		"int64 nanoseconds":   time.Unix(0, -1<<63).UTC(),
		"four hundred years":  time.Unix(1_800_000_000, 0).AddDate(-400, 0, 0),
		"the first of year 1": time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
	} {
		t.Run(name, func(t *testing.T) {
			clock := vclock.New(time.Unix(1_800_000_000, 0))
			first := clock.Now() // a close
			tickets := &memTickets{next: 7, nextAt: back}
			keys, chans, pool := scheduledPool(t, clock, &sourcestest.Leases{}, tickets, 4)
			clock.Advance(500 * time.Millisecond)
			called := clock.Now()
			for i := range 4 {
				l, err := pool.Acquire(context.Background(), keys, LeaseTerms{Until: called.Add(30 * time.Second), MaxTime: called.Add(30 * time.Second), LedgerClose: first})
				if err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
				if want := chans[(7+i)%4].Address(); l.Account != want {
					t.Errorf("call %d leased %s, want ticket %d's channel", i, l.Account, 7+i)
				}
				// The slots are booked 1.25 s apart from T; each leases at its booked time, the
				// restarted one at once.
				want := later(called, first.Add(time.Duration(i)*1250*time.Millisecond))
				if !clock.Now().Equal(want) {
					t.Fatalf("call %d leased at T+%v, want T+%v: the channels' previous slots are long gone", i, clock.Now().Sub(first), want.Sub(first))
				}
			}
		})
	}
}
