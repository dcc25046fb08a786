package transfer_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// laggedLedger is fakeLedger read through an ingesting reader that shows each ledger lag after
// it closes, as stellar-rpc does, with a cheap read of the latest ledger (transfer.LatestReader).
type laggedLedger struct {
	*fakeLedger
	lag time.Duration

	mu     sync.Mutex
	probes int
}

func (l *laggedLedger) visible() (uint32, time.Time) {
	l.fakeLedger.mu.Lock()
	defer l.fakeLedger.mu.Unlock()
	if l.clock.Now().Sub(l.closeTime) < l.lag {
		return l.latest - 1, l.closeTime.Add(-5 * time.Second)
	}
	return l.latest, l.closeTime
}

func (l *laggedLedger) LatestLedger(context.Context) (transfer.LedgerInfo, error) {
	l.mu.Lock()
	l.probes++
	l.mu.Unlock()
	seq, at := l.visible()
	return transfer.LedgerInfo{Sequence: seq, CloseTime: at}, nil
}

func (l *laggedLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	seq, at := l.visible()
	lk, err := l.fakeLedger.Lookup(ctx, env)
	if err != nil || lk.Ledger > seq {
		lk = transfer.Lookup{Status: transfer.LookupNotFound, OldestLedger: 1}
	}
	if lk.Status == transfer.LookupNotFound {
		lk.LatestLedger, lk.LatestLedgerCloseTime = seq, at
	}
	return lk, err
}

func (l *laggedLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	res, err := l.fakeLedger.Send(ctx, env)
	res.LatestLedger, res.LatestLedgerCloseTime = l.visible()
	return res, err
}

type reports struct {
	mu  sync.Mutex
	all []transfer.Report
}

func (r *reports) StartStep(ctx context.Context, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}

func (r *reports) Finished(_ context.Context, rep transfer.Report) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.all = append(r.all, rep)
}

// TestAwaitHearsOfTheLedgerWhenItIsVisible: the caller is answered within one tight poll
// (100 ms at 5 s ledgers) of the ledger becoming visible, with one Lookup, and once the process
// has measured the visibility lag, with a probe or two instead of a poll every 100 ms from the
// close.
func TestAwaitHearsOfTheLedgerWhenItIsVisible(t *testing.T) {
	h := newHarness(t)
	lag := 1300 * time.Millisecond
	ll := &laggedLedger{fakeLedger: h.ledger, lag: lag}
	rep := &reports{}
	h.orch.Ledger, h.orch.Observer, h.orch.Cadence = ll, rep, &transfer.Cadence{}
	closes := h.clock.Now() // the fake ledger closes every 5 s from here
	var probes []int
	for i, key := range []string{"k1", "k2", "k3"} {
		// Start 2 s into a ledger interval (the last ledger is visible): the envelope lands in
		// the next close, and is visible lag after it.
		start := closes.Add(time.Duration(5*(2*i)+2) * time.Second)
		_ = h.clock.Sleep(context.Background(), start.Sub(h.clock.Now()))
		before := ll.probes
		out, err := h.orch.Transfer(context.Background(), input(key, "1"))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		visibleAt := closes.Add(time.Duration(5*(2*i+1))*time.Second + lag)
		if got := h.clock.Now(); got.Before(visibleAt) || got.After(visibleAt.Add(100*time.Millisecond)) {
			t.Errorf("%s answered at %v, want within 100ms after %v (ledger %d)", key, got.Sub(closes), visibleAt.Sub(closes), out.Ledger)
		}
		probes = append(probes, ll.probes-before)
	}
	for i, r := range rep.all {
		if r.Lookups != 1 {
			t.Errorf("call %d: %d lookups, want 1", i, r.Lookups)
		}
		if r.Probes != probes[i] {
			t.Errorf("call %d reports %d probes, the ledger saw %d", i, r.Probes, probes[i])
		}
	}
	// First call: the lag is unknown, so it polls every 100 ms from the close (15 probes); later
	// calls start about the measured lag.
	if probes[0] < 10 || probes[2] > 4 {
		t.Errorf("probes per call %v: want the first to poll from the close and the third to start at the learnt lag", probes)
	}
}

// TestAwaitBacksOffWhileTheNetworkStalls: no ledger closes; the wait stays bounded in reads and
// ends in doubt at the budget.
func TestAwaitBacksOffWhileTheNetworkStalls(t *testing.T) {
	h := newHarness(t)
	ll := &laggedLedger{fakeLedger: h.ledger}
	rep := &reports{}
	h.orch.Ledger, h.orch.Observer = ll, rep
	h.ledger.noClose = true
	_, err := h.orch.Transfer(context.Background(), input("stall", "1"))
	if code := problemCode(err); code != transfer.CodeInDoubt {
		t.Fatalf("got %v, want in doubt", err)
	}
	r := rep.all[0]
	// 45 s budget: tight polls for one interval (50), then spaced by an eighth of the overdue
	// time, Lookups instead of probes once two intervals overdue.
	if r.Probes > 90 || r.Lookups > 20 || r.Lookups == 0 {
		t.Fatalf("%d probes and %d lookups over a stalled 45 s budget", r.Probes, r.Lookups)
	}
	t.Logf("stalled: %d probes, %d lookups", r.Probes, r.Lookups)
}
