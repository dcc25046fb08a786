package sources

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A channel is never leased before its previous transfer is released: a calendar restarted at
// the start of a ledger makes only the restarted slot's channel two ledgers back. The slots after
// it in the run's first round (leased at their booked time when it comes before the release
// point) have their channel's previous slot in the ledger before, whose transfer landed at this
// ledger's opening close and is released 2.7 s after it, after the slot's booked time.
//
// 4 channels, 5 s ledgers (spacing 1.25 s), closes at T, T+5. Process A books tickets 0 (T,
// restarted, leased at T+0.5, channel 0) and 1 (T+1.25, leased then, channel 1); nobody books
// more, so the calendar's next time is T+2.5, behind T+5. Both transfers land at T+5 and are
// released at T+7.7. At T+7.5 process B books three slots: ticket 2 (restarted at T+5, channel
// 2), 3 (T+6.25, channel 3), 4 (T+7.5, channel 0). Ticket 4's channel is still held by A; the
// release point of its ledger is T+8, after A's release. Right: B's third call leases channel 0
// with no failed lease write. The lease's conditional write still decides (memLeases refuses the
// held channel), so what goes wrong is a failed write and a slot lost, not a second envelope.
func TestAChannelIsNeverLeasedBeforeItsPreviousTransferIsReleased(t *testing.T) {
	const interval, settle = 5 * time.Second, 2700 * time.Millisecond
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	first := clock.Now() // a close
	leases, tickets := &memLeases{}, &memTickets{}
	keysA, chans, poolA := scheduledPool(t, clock, leases, tickets, 4)
	_, _, poolB := scheduledPool(t, clock, leases, tickets, 4)
	ctx := context.Background()
	terms := func(lastClose time.Time) LeaseTerms {
		now := clock.Now()
		return LeaseTerms{Until: now.Add(30 * time.Second), MaxTime: now.Add(30 * time.Second), LedgerClose: lastClose}
	}

	clock.Advance(500 * time.Millisecond)
	a0, err := poolA.Acquire(ctx, keysA, terms(first))
	if err != nil || a0.Account != chans[0].Address() {
		t.Fatalf("A's first call: %s, %v; want channel 0", a0.Account, err)
	}
	clock.Advance(800 * time.Millisecond) // T+1.3
	a1, err := poolA.Acquire(ctx, keysA, terms(first))
	if err != nil || a1.Account != chans[1].Address() {
		t.Fatalf("A's second call: %s, %v; want channel 1", a1.Account, err)
	}
	// Both land at T+5 and are released settle after it.
	var once sync.Once
	clock.OnAdvance(func(now time.Time) {
		if !now.Before(first.Add(interval + settle)) {
			once.Do(func() {
				poolA.Release(ctx, a0, transfer.Envelope{Channel: a0.Account})
				poolA.Release(ctx, a1, transfer.Envelope{Channel: a1.Account})
			})
		}
	})
	clock.Advance(first.Add(7500 * time.Millisecond).Sub(clock.Now()))
	second := first.Add(interval)
	for i, want := range []int{2, 3, 0} {
		l, err := poolB.Acquire(ctx, keysA, terms(second))
		if err != nil {
			t.Fatalf("B's call %d: %v", i, err)
		}
		if l.Account != chans[want].Address() {
			t.Errorf("B's call %d leased %s at T+%v, want channel %d", i, l.Account, clock.Now().Sub(first), want)
		}
	}
	if st := poolB.Stats(); st.Collisions != 0 {
		t.Errorf("B's stats %+v: a lease written on a channel whose transfer (landed at T+5) was still held until T+7.7", st)
	}
}
