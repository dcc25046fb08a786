package transfer_test

import (
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
