package transfer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// irregularLedger is a network whose ledgers close at seeded, irregular gaps and are read through
// an ingesting reader, as the local network (internal/stellarsim) models pubnet: each ledger's
// close time is stamped as stellar-core stamps it, the clock in whole seconds but at least the
// previous close time + 1 (HerderImpl::triggerNextLedger), so the stamps run ahead of the clock
// while ledgers close faster than one a second; each ledger is visible to reads a seeded lag after
// it closes, and a read shows the newest ledger whose lag has passed. A sent envelope lands in the
// next ledger to close. It implements transfer.Ledger and transfer.LatestReader.
type irregularLedger struct {
	clock *vclock.Clock
	gap   func(rng *rand.Rand) time.Duration
	rng   *rand.Rand
	// lagMin and lagMax bound each ledger's visibility lag.
	lagMin, lagMax time.Duration

	mu       sync.Mutex
	prepares int
	due      time.Time   // when the next ledger closes
	stamps   []int64     // close time of ledger i+1 (whole seconds)
	visible  []time.Time // when ledger i+1 is visible to reads
	queued   []string
	landed   map[string]uint32
	probes   int
	lookups  int
	// sentAt and notFoundAt are when each envelope (by inner hash) was sent and looked up
	// without being found.
	sentAt, notFoundAt map[string][]time.Time
}

func newIrregularLedger(c *vclock.Clock, seed uint64, gap func(*rand.Rand) time.Duration, lagMin, lagMax time.Duration) *irregularLedger {
	l := &irregularLedger{clock: c, gap: gap, rng: rand.New(rand.NewPCG(seed, 1)), lagMin: lagMin, lagMax: lagMax,
		landed: map[string]uint32{}, sentAt: map[string][]time.Time{}, notFoundAt: map[string][]time.Time{}}
	now := c.Now()
	l.stamps, l.visible = []int64{now.Unix()}, []time.Time{now}
	l.due = now.Add(gap(l.rng))
	c.OnAdvance(l.closeUntil)
	return l
}

// uniformGaps draws each gap uniformly within +-spread of interval.
func uniformGaps(interval time.Duration, spread float64) func(*rand.Rand) time.Duration {
	return func(r *rand.Rand) time.Duration {
		return time.Duration(float64(interval) * (1 + spread*(2*r.Float64()-1))).Round(time.Millisecond)
	}
}

// pubnetGaps draws gaps of 1.0 to 1.8 intervals with the weights internal/stellarsim's pubnet
// ledger clock gives them (30%, 45%, 20%, 4%, 1%).
func pubnetGaps(interval time.Duration) func(*rand.Rand) time.Duration {
	return func(r *rand.Rand) time.Duration {
		u := r.Float64()
		for _, g := range []struct{ f, w float64 }{{1.0, 0.30}, {1.2, 0.45}, {1.4, 0.20}, {1.6, 0.04}} {
			if u < g.w {
				return time.Duration(g.f * float64(interval))
			}
			u -= g.w
		}
		return time.Duration(1.8 * float64(interval))
	}
}

func (l *irregularLedger) closeUntil(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.due.After(now) {
		seq := uint32(len(l.stamps) + 1)
		l.stamps = append(l.stamps, max(l.due.Unix(), l.stamps[len(l.stamps)-1]+1))
		lag := l.lagMin + time.Duration(l.rng.Int64N(int64(l.lagMax-l.lagMin)+1))
		l.visible = append(l.visible, l.due.Add(lag))
		for _, h := range l.queued {
			l.landed[h] = seq
		}
		l.queued = l.queued[:0]
		l.due = l.due.Add(l.gap(l.rng))
	}
}

// shownLocked is the newest ledger a read shows now.
func (l *irregularLedger) shownLocked() transfer.LedgerInfo {
	now := l.clock.Now()
	seq := len(l.visible)
	for seq > 1 && l.visible[seq-1].After(now) {
		seq--
	}
	return transfer.LedgerInfo{Sequence: uint32(seq), CloseTime: time.Unix(l.stamps[seq-1], 0)}
}

// firstVisible is when a read first showed ledger seq or a later one: the earliest a look-up
// could find an envelope in ledger seq.
func (l *irregularLedger) firstVisible(seq uint32) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.visible[seq-1]
	for _, v := range l.visible[seq:] {
		if v.Before(first) {
			first = v
		}
	}
	return first
}

func (l *irregularLedger) LatestLedger(context.Context) (transfer.LedgerInfo, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.probes++
	return l.shownLocked(), nil
}

func (l *irregularLedger) Prepare(_ context.Context, _ transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.prepares++
	h := fmt.Sprintf("%064x", l.prepares)
	return transfer.Envelope{XDR: "xdr-" + h, InnerHash: h, MaxTime: terms.MaxTime.Unix(), SubmittedLedger: l.shownLocked().Sequence,
		Channel: "GVAULT", FeeStroops: 100}, nil
}

func (l *irregularLedger) Send(_ context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.landed[env.InnerHash]; !ok && !slices.Contains(l.queued, env.InnerHash) {
		l.queued = append(l.queued, env.InnerHash)
	}
	l.sentAt[env.InnerHash] = append(l.sentAt[env.InnerHash], l.clock.Now())
	shown := l.shownLocked()
	return transfer.SendResult{Status: transfer.SendPending, LatestLedger: shown.Sequence, LatestLedgerCloseTime: shown.CloseTime}, nil
}

func (l *irregularLedger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lookups++
	shown := l.shownLocked()
	if seq, ok := l.landed[env.InnerHash]; ok && seq <= shown.Sequence {
		return transfer.Lookup{Status: transfer.LookupSuccess, Hash: env.InnerHash, Ledger: seq, FeeChargedStroops: 100}, nil
	}
	l.notFoundAt[env.InnerHash] = append(l.notFoundAt[env.InnerHash], l.clock.Now())
	return transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: shown.Sequence, LatestLedgerCloseTime: shown.CloseTime, OldestLedger: 1}, nil
}

func (l *irregularLedger) Done(context.Context, transfer.Envelope) {}

func (l *irregularLedger) counts() (probes, lookups int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.probes, l.lookups
}

// awaitRun is what runIrregular measured after the warm-up: how long after its ledger was first
// visible each transfer was answered (sorted), and the reads per transfer and per ledger waited.
type awaitRun struct {
	late                     []time.Duration
	probes, lookups, ledgers float64 // per transfer
}

func (r awaitRun) quantile(q float64) time.Duration { return r.late[int(q*float64(len(r.late)-1))] }

// runIrregular runs n transfers one after the other on l, each started after a pause drawn
// uniformly from two intervals (seeded), with one Cadence for the process as a Lambda instance
// keeps it. The first warmup transfers teach the cadence and are not measured.
func runIrregular(t *testing.T, h *harness, l *irregularLedger, interval time.Duration, n, warmup int, seed uint64) awaitRun {
	t.Helper()
	h.orch.Ledger, h.orch.Cadence = l, &transfer.Cadence{}
	rng := rand.New(rand.NewPCG(seed, 2))
	var run awaitRun
	p0, l0, waited := 0, 0, 0
	for i := range n {
		if i == warmup {
			p0, l0 = l.counts()
		}
		_ = h.clock.Sleep(context.Background(), time.Duration(rng.Int64N(int64(2*interval))))
		l.mu.Lock()
		before := l.shownLocked().Sequence
		l.mu.Unlock()
		out, err := h.orch.Transfer(context.Background(), input(fmt.Sprintf("irregular-%04d", i), "1"))
		if err != nil {
			t.Fatalf("transfer %d: %v", i, err)
		}
		if i < warmup {
			continue
		}
		run.late = append(run.late, h.clock.Now().Sub(l.firstVisible(out.Ledger)))
		waited += int(out.Ledger - before)
	}
	p, lk := l.counts()
	m := float64(n - warmup)
	run.probes, run.lookups, run.ledgers = float64(p-p0)/m, float64(lk-l0)/m, float64(waited)/m
	slices.Sort(run.late)
	return run
}

// TestAwaitOnIrregularLedgers: on ledgers that close at irregular gaps (+-20% uniform, and
// pubnet's 1.0 to 1.8 intervals), with close times stamped in whole seconds that run ahead of
// the clock while ledgers close faster than one a second (at 1 s +-20%, by seconds within a few
// hundred ledgers), and each ledger visible 1 to 3 s after it closes, the await answers within
// a few tight polls of the envelope's ledger becoming visible: p90 within 5 tight polls (the
// tight poll is a twentieth of the interval), p99 within three quarters of an interval, never a
// whole ledger late; with at most 3 look-ups per transfer and at most 20 probes per ledger
// waited. The fixed clock keeps its figures. Seeded: every run is the same.
func TestAwaitOnIrregularLedgers(t *testing.T) {
	fixed := func(d time.Duration) func(*rand.Rand) time.Duration { return uniformGaps(d, 0) }
	uniform := func(d time.Duration) func(*rand.Rand) time.Duration { return uniformGaps(d, 0.2) }
	for _, tc := range []struct {
		clock    string
		interval time.Duration
		gaps     func(time.Duration) func(*rand.Rand) time.Duration
	}{
		{"fixed", time.Second, fixed},
		{"uniform", time.Second, uniform},
		{"pubnet", time.Second, pubnetGaps},
		{"fixed", 5 * time.Second, fixed},
		{"uniform", 5 * time.Second, uniform},
		{"pubnet", 5 * time.Second, pubnetGaps},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.clock, tc.interval), func(t *testing.T) {
			h := newHarness(t)
			l := newIrregularLedger(h.clock, 7, tc.gaps(tc.interval), time.Second, 3*time.Second)
			r := runIrregular(t, h, l, tc.interval, 400, 20, 7)
			tight := min(max(tc.interval/20, 25*time.Millisecond), 100*time.Millisecond)
			t.Logf("answered after the ledger was visible: p50 %v, p90 %v, p99 %v, max %v; per transfer %.2f look-ups, %.1f probes, %.1f ledgers waited",
				r.quantile(.5), r.quantile(.9), r.quantile(.99), r.late[len(r.late)-1], r.lookups, r.probes, r.ledgers)
			if r.late[0] < 0 {
				t.Fatalf("a transfer was answered %v before its ledger was visible", -r.late[0])
			}
			if got := r.quantile(.9); got > 5*tight {
				t.Errorf("p90 %v after the ledger was visible, want at most 5 tight polls (%v)", got, 5*tight)
			}
			if got := r.quantile(.99); got > tc.interval*3/4 {
				t.Errorf("p99 %v after the ledger was visible, want at most 3/4 of the interval", got)
			}
			if got := r.late[len(r.late)-1]; got > tc.interval+tc.interval/4 {
				t.Errorf("a transfer answered %v after its ledger was visible: a whole ledger late", got)
			}
			if r.lookups > 3 {
				t.Errorf("%.2f look-ups per transfer, want at most 3", r.lookups)
			}
			if perLedger := r.probes / r.ledgers; perLedger > 20 {
				t.Errorf("%.1f probes per ledger waited, want at most 20 (a tight poll is a twentieth of the interval)", perLedger)
			}
		})
	}
}
