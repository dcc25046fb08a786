package stellarsim_test

import (
	"slices"
	"testing"
	"time"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func gaps(c stellarsim.LedgerClock, interval time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = c.Gap(interval, uint32(i+2))
	}
	return out
}

// The same clock and seed give the same gaps; another seed others; the fixed clock is a metronome.
func TestLedgerClockSeededAndRepeatable(t *testing.T) {
	for _, kind := range []string{stellarsim.LedgerClockUniform, stellarsim.LedgerClockPubnet} {
		a := gaps(stellarsim.LedgerClock{Kind: kind, Seed: 7}, 5*time.Second, 200)
		b := gaps(stellarsim.LedgerClock{Kind: kind, Seed: 7}, 5*time.Second, 200)
		c := gaps(stellarsim.LedgerClock{Kind: kind, Seed: 8}, 5*time.Second, 200)
		if !slices.Equal(a, b) || slices.Equal(a, c) {
			t.Fatalf("%s: seed 7 twice equal %v, seeds 7 and 8 equal %v", kind, slices.Equal(a, b), slices.Equal(a, c))
		}
	}
	for _, g := range gaps(stellarsim.LedgerClock{}, 5*time.Second, 50) {
		if g != 5*time.Second {
			t.Fatalf("fixed clock gap %v", g)
		}
	}
}

// Uniform: every gap within +-20% (or the spread asked), both halves drawn, the mean near the
// interval.
func TestLedgerClockUniform(t *testing.T) {
	for _, c := range []struct {
		clock  stellarsim.LedgerClock
		spread float64
	}{{stellarsim.LedgerClock{Kind: stellarsim.LedgerClockUniform, Seed: 1}, 0.2}, {stellarsim.LedgerClock{Kind: stellarsim.LedgerClockUniform, Spread: 0.5, Seed: 1}, 0.5}} {
		var sum time.Duration
		var below, above int
		const interval = time.Second
		g := gaps(c.clock, interval, 2000)
		for _, d := range g {
			lo, hi := time.Duration((1-c.spread)*float64(interval)), time.Duration((1+c.spread)*float64(interval))
			if d < lo || d > hi {
				t.Fatalf("spread %g: gap %v outside [%v, %v]", c.spread, d, lo, hi)
			}
			if d < time.Duration((1-c.spread/2)*float64(interval)) {
				below++
			}
			if d > time.Duration((1+c.spread/2)*float64(interval)) {
				above++
			}
			sum += d
		}
		mean := sum / time.Duration(len(g))
		if below < 400 || above < 400 || mean < 980*time.Millisecond || mean > 1020*time.Millisecond {
			t.Fatalf("spread %g: %d gaps in the lower quarter, %d in the upper, mean %v", c.spread, below, above, mean)
		}
	}
}

// Pubnet at the 5 s target: whole-second gaps of 5 to 9 s, none below 5, median 6, 8-9 s rare:
// the published record the distribution is taken from. At 1 s the same shape scaled.
func TestLedgerClockPubnetMatchesTheRecord(t *testing.T) {
	g := gaps(stellarsim.LedgerClock{Kind: stellarsim.LedgerClockPubnet, Seed: 3}, 5*time.Second, 4000)
	count := map[time.Duration]int{}
	for _, d := range g {
		count[d]++
	}
	for d := range count {
		if d%time.Second != 0 || d < 5*time.Second || d > 9*time.Second {
			t.Fatalf("gap %v: want whole seconds from 5 to 9", d)
		}
	}
	slices.Sort(g)
	if g[len(g)/2] != 6*time.Second {
		t.Fatalf("median %v, want 6 s", g[len(g)/2])
	}
	if rare := count[8*time.Second] + count[9*time.Second]; rare == 0 || rare > len(g)/10 {
		t.Fatalf("%d gaps of 8-9 s in %d, want rare but present", rare, len(g))
	}
	for _, d := range gaps(stellarsim.LedgerClock{Kind: stellarsim.LedgerClockPubnet, Seed: 3}, time.Second, 100) {
		if d%(200*time.Millisecond) != 0 || d < time.Second || d > 1800*time.Millisecond {
			t.Fatalf("gap at 1 s ledgers %v: want 1.0 to 1.8 s", d)
		}
	}
}

// A network driven by a LedgerSchedule on a virtual clock stamps close times in whole seconds,
// strictly increasing, as core does; at 1 s ledgers with a +-20% clock some closes fall in the
// same second as the previous one and take its close time + 1 (HerderImpl::triggerNextLedger).
func TestScheduledClosesStampWholeSeconds(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	genesis := e.clock.Now().Unix() // ledger 1's close time
	sched := stellarsim.NewLedgerSchedule(stellarsim.LedgerClock{Kind: stellarsim.LedgerClockUniform, Seed: 5}, time.Second, e.clock.Now(), 2)
	var dues []time.Time
	for range 40 {
		e.clock.Advance(sched.Due().Sub(e.clock.Now()))
		dues = append(dues, sched.Due())
		e.n.CloseLedger()
		sched.Advance()
	}
	r, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{StartLedger: 2, Pagination: &protocol.LedgerPaginationOptions{Limit: 40}})
	if err != nil || len(r.Ledgers) != 40 {
		t.Fatalf("getLedgers %d %v", len(r.Ledgers), err)
	}
	bumped := 0
	prev := genesis
	for i, l := range r.Ledgers {
		want := dues[i].Unix()
		if want <= prev {
			want, bumped = prev+1, bumped+1
		}
		if l.LedgerCloseTime != want {
			t.Fatalf("ledger %d closed at %v: close time %d, want %d", l.Sequence, dues[i], l.LedgerCloseTime, want)
		}
		prev = l.LedgerCloseTime
	}
	if bumped == 0 {
		t.Fatal("no close fell in the second of the one before: the case is not exercised")
	}
}

func TestParseLedgerClock(t *testing.T) {
	for in, want := range map[string]string{"": "fixed", "fixed": "fixed", "uniform": "uniform:0.2", "uniform:0.1": "uniform:0.1", "pubnet": "pubnet"} {
		c, err := stellarsim.ParseLedgerClock(in, 9)
		if err != nil || c.String() != want || c.Seed != 9 {
			t.Errorf("%q: %v %v, want %s", in, c, err, want)
		}
	}
	for _, in := range []string{"poisson", "uniform:x", "uniform:2", "pubnet:0.1", "uniform:-0.1"} {
		if _, err := stellarsim.ParseLedgerClock(in, 0); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	if _, err := stellarsim.Start(stellarsim.Options{LedgerClock: stellarsim.LedgerClock{Kind: "poisson"}}); err == nil {
		t.Error("Start accepted an unknown ledger clock")
	}
}
