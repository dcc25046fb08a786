package transfer_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func TestCadenceLearnsIntervalAndLag(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var c transfer.Cadence
	if got := c.Interval(); got != transfer.DefaultLedgerInterval {
		t.Fatalf("interval before any ledger %v, want the default", got)
	}
	if !c.VisibleAt(5).IsZero() {
		t.Fatalf("VisibleAt with no ledger seen should be zero")
	}
	// Ledgers close every 6 s; each is first read 1.5 s after its close, by a read 50 ms after
	// one that still showed the previous ledger (a precise measure of the lag).
	for i := range 10 {
		closed := t0.Add(time.Duration(i) * 6 * time.Second)
		c.Observe(transfer.LedgerInfo{Sequence: uint32(100 + i), CloseTime: closed}, closed.Add(1450*time.Millisecond))
		c.Observe(transfer.LedgerInfo{Sequence: uint32(100 + i), CloseTime: closed}, closed.Add(1450*time.Millisecond)) // same ledger again
		c.Observe(transfer.LedgerInfo{Sequence: uint32(100 + i), CloseTime: closed}, closed.Add(7450*time.Millisecond))
	}
	if got := c.Interval(); got != 6*time.Second {
		t.Fatalf("interval %v, want 6s", got)
	}
	// The read that first showed ledger i+1 came 1.45 s after its close, at the same instant as
	// the last read of ledger i: every lag sample is precise, and 1.45 s.
	if got := c.Lag(); got != 1450*time.Millisecond {
		t.Fatalf("lag %v, want 1.45s", got)
	}
	last := t0.Add(54 * time.Second)
	if got, want := c.VisibleAt(110), last.Add(6*time.Second+1450*time.Millisecond); !got.Equal(want) {
		t.Fatalf("VisibleAt(110) %v, want %v", got, want)
	}
	if got, want := c.VisibleAt(112), last.Add(18*time.Second+1450*time.Millisecond); !got.Equal(want) {
		t.Fatalf("VisibleAt(112) %v, want %v", got, want)
	}
	if !c.VisibleAt(109).IsZero() {
		t.Fatalf("a visible ledger has no future visibility")
	}
	// A lagging reader's older ledger changes nothing.
	c.Observe(transfer.LedgerInfo{Sequence: 105, CloseTime: t0.Add(30 * time.Second)}, last.Add(time.Minute))
	if got := c.Latest().Sequence; got != 109 {
		t.Fatalf("latest %d after a lagging read, want 109", got)
	}
	// A wait that finds its ledger already visible walks the estimate down.
	for range 40 {
		c.Late(last.Add(6*time.Second + 2*time.Second))
	}
	if got := c.Lag(); got >= 1450*time.Millisecond {
		t.Fatalf("lag %v after late arrivals, want below 1.45s", got)
	}
}

func TestCadenceIgnoresImpreciseLags(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var c transfer.Cadence
	c.Observe(transfer.LedgerInfo{Sequence: 7, CloseTime: t0}, t0.Add(time.Second))
	// Ledger 8 first read 4 s after the last read of 7: when it appeared is unknown.
	c.Observe(transfer.LedgerInfo{Sequence: 8, CloseTime: t0.Add(5 * time.Second)}, t0.Add(5*time.Second+3*time.Second))
	if got := c.Lag(); got != 0 {
		t.Fatalf("lag %v from an imprecise read, want 0 (none measured)", got)
	}
	if got := c.TightPoll(); got != 100*time.Millisecond {
		t.Fatalf("tight poll %v at 5 s ledgers, want 100ms", got)
	}
}

// TestCadenceFollowsCloseTimesAheadOfTheClock: stellar-core stamps a close time at least one
// second after the previous one, so on a network whose ledgers close about every second the
// stamps run seconds ahead of the clock. The lag (the offset from a close time to visibility)
// is then negative, and the predicted visibility must still come no later than the real one
// plus the gaps' spread (each real gap is 1 s +-200 ms; the stamps are 1 s apart).
func TestCadenceFollowsCloseTimesAheadOfTheClock(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(11, 12))
	var c transfer.Cadence
	closed := t0
	for i := range 60 {
		seq := uint32(100 + i)
		stamp := t0.Add(time.Duration(i)*time.Second + 3*time.Second) // 3 s ahead of the clock
		visible := closed.Add(1500 * time.Millisecond)
		if i >= 20 {
			if at := c.VisibleAt(seq); at.After(visible.Add(200 * time.Millisecond)) {
				t.Fatalf("ledger %d predicted visible at %v, %v after it was (lag estimate %v)", seq, at.Sub(t0), at.Sub(visible), c.Lag())
			}
		}
		// A read one tight poll before it is visible still shows the previous ledger, the next
		// one shows this one: a precise measure.
		if i > 0 {
			c.Observe(transfer.LedgerInfo{Sequence: seq - 1, CloseTime: stamp.Add(-time.Second)}, visible.Add(-50*time.Millisecond))
		}
		c.Observe(transfer.LedgerInfo{Sequence: seq, CloseTime: stamp}, visible)
		closed = closed.Add(time.Duration(800+rng.IntN(400)) * time.Millisecond) // 1 s +-20%
	}
	if got := c.Lag(); got > -time.Second {
		t.Fatalf("lag %v with close times 3 s ahead and ledgers visible 1.5 s after closing, want about -1.5 s", got)
	}
}

// TestCadenceExpectsTheEarliestGap: with pubnet's gaps (5 to 9 s, median 6 s, seeded), the
// next ledger is predicted visible at the earliest gap, never after it was visible; the median
// is still the interval and the high end bounds the gaps.
func TestCadenceExpectsTheEarliestGap(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	rng := rand.New(rand.NewPCG(5, 6))
	gap := func() time.Duration {
		u := rng.Float64()
		for _, g := range []struct {
			s int
			w float64
		}{{5, 0.30}, {6, 0.45}, {7, 0.20}, {8, 0.04}} {
			if u < g.w {
				return time.Duration(g.s) * time.Second
			}
			u -= g.w
		}
		return 9 * time.Second
	}
	var c transfer.Cadence
	closed := t0
	early := 0
	for i := range 200 {
		seq := uint32(100 + i)
		visible := closed.Add(1200 * time.Millisecond)
		if i >= 20 {
			if at := c.VisibleAt(seq); at.After(visible.Add(200 * time.Millisecond)) {
				t.Fatalf("ledger %d (gap %v) predicted visible %v after it was", seq, closed.Sub(c.Latest().CloseTime), at.Sub(visible))
			}
			if c.LikelyVisibleAt(seq).After(visible) {
				early++
			}
		}
		if i > 0 {
			c.Observe(c.Latest(), visible.Add(-50*time.Millisecond))
		}
		c.Observe(transfer.LedgerInfo{Sequence: seq, CloseTime: closed}, visible)
		closed = closed.Add(gap())
	}
	if got := c.EarliestGap(); got < 5*time.Second || got > 6*time.Second {
		t.Errorf("earliest gap %v, want 5 or 6s (the second shortest of the last 15)", got)
	}
	if got := c.Interval(); got != 6*time.Second {
		t.Errorf("interval %v, want the median, 6s", got)
	}
	if got := c.LatestGap(); got < 7*time.Second {
		t.Errorf("latest gap %v, want at least 7s", got)
	}
	// The median alone would have slept past the ledgers with a 5 s gap, about three in ten.
	if early < 30 {
		t.Errorf("%d of 180 ledgers visible before the median gap predicted; want the seeded gaps to have some", early)
	}
}

// TestCadenceLateFallsToWhatTheReadShowed: a ledger visible at its first read was visible by
// then, so the lag estimate falls at once to at most the read's time less its close time.
func TestCadenceLateFallsToWhatTheReadShowed(t *testing.T) {
	t0 := time.Unix(1_800_000_000, 0)
	var c transfer.Cadence
	c.Observe(transfer.LedgerInfo{Sequence: 7, CloseTime: t0}, t0.Add(2*time.Second))
	c.Observe(transfer.LedgerInfo{Sequence: 7, CloseTime: t0}, t0.Add(6950*time.Millisecond))
	c.Observe(transfer.LedgerInfo{Sequence: 8, CloseTime: t0.Add(5 * time.Second)}, t0.Add(7*time.Second))
	if got := c.Lag(); got != 2*time.Second {
		t.Fatalf("lag %v, want 2s", got)
	}
	// Ledger 9 found visible at its first read, 400 ms after its close time.
	c.Observe(transfer.LedgerInfo{Sequence: 9, CloseTime: t0.Add(10 * time.Second)}, t0.Add(10400*time.Millisecond))
	c.Late(t0.Add(10400 * time.Millisecond))
	if got := c.Lag(); got > 400*time.Millisecond {
		t.Fatalf("lag %v after a ledger was visible 400ms after its close time, want at most 400ms", got)
	}
}
