package transfer

import (
	"context"
	"slices"
	"sync"
	"time"
)

// The ledger's rhythm as this process sees it, so that awaiting asks the network when a ledger can
// have something to say rather than on a fixed backoff (README, "Latency").

// LedgerInfo is a ledger as a read of the network reported it: its sequence number and its close
// time (the header's closeTime, whole seconds on Stellar).
type LedgerInfo struct {
	Sequence  uint32
	CloseTime time.Time
}

// LatestReader is implemented by a Ledger that can read the latest ledger alone, more cheaply than
// a Lookup (one getLatestLedger, or Horizon's root). The awaiting loop probes with it until the
// ledger it waits for is visible and only then looks the envelope up. A Ledger without it is
// awaited with Lookups alone.
type LatestReader interface {
	LatestLedger(ctx context.Context) (LedgerInfo, error)
}

// DefaultLedgerInterval is the interval a Cadence assumes before it has seen two ledgers: the
// target close time of the public network and testnet, 5 s (stellar-core, src/herder/Herder.cpp).
const DefaultLedgerInterval = 5 * time.Second

// Tight polling around a ledger's expected visibility.
const (
	// minTightPoll and maxTightPoll bound the period of the reads made while a ledger is due: a
	// twentieth of the ledger interval, so a caller waits about 1% longer than a reader that
	// polls continuously, for about twenty reads per ledger at most.
	minTightPoll = 25 * time.Millisecond
	maxTightPoll = 100 * time.Millisecond
	// lagSamples is how many recent visibility lags a Cadence keeps; gapSamples how many gaps
	// between ledger closes.
	lagSamples = 32
	gapSamples = 15
	// minInterval and maxInterval bound the estimated interval: a stall of the network (or an
	// idle test network) makes one long gap, and the median of a few gaps is still one of them.
	minInterval = 100 * time.Millisecond
	maxInterval = 2 * DefaultLedgerInterval
)

// Cadence estimates, from what reads of the network report, when ledgers close and how long after
// closing they become visible to this service's reads (the ingestion lag of stellar-rpc or
// Horizon behind stellar-core, plus consensus: a ledger's close time is the time nominated, not the
// time it externalised). From them it predicts when the next ledger should be visible. One Cadence
// serves every call of a process (a Lambda instance keeps it between invocations); the zero value
// is ready to use. Safe for concurrent use.
type Cadence struct {
	mu sync.Mutex
	// latest is the newest ledger seen, seenAt when it was first seen and readAt the last read
	// that still showed it (or an older one).
	latest         LedgerInfo
	seenAt, readAt time.Time
	// gaps are recent times between ledger closes (per ledger, between two ledgers seen), oldest
	// first: their median is the interval.
	gaps []time.Duration
	// lags are recent visibility lags measured precisely (the read before showed the previous
	// ledger less than two tight polls earlier), oldest first.
	lags []time.Duration
}

// Observe records that a read made at `at` showed l as the latest ledger. Reads from lagging
// instances (an older ledger than one already seen) change nothing.
func (c *Cadence) Observe(l LedgerInfo, at time.Time) {
	if l.Sequence == 0 || l.CloseTime.IsZero() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case l.Sequence < c.latest.Sequence:
		return
	case l.Sequence == c.latest.Sequence:
		if at.After(c.readAt) {
			c.readAt = at
		}
		return
	}
	prev, prevRead := c.latest, c.readAt
	c.latest, c.seenAt, c.readAt = l, at, at
	if prev.Sequence == 0 {
		return
	}
	if d := l.CloseTime.Sub(prev.CloseTime) / time.Duration(l.Sequence-prev.Sequence); d > 0 {
		if len(c.gaps) == gapSamples {
			c.gaps = c.gaps[1:]
		}
		c.gaps = append(c.gaps, d)
	}
	if l.Sequence == prev.Sequence+1 && at.Sub(prevRead) <= 2*c.tightPollLocked() {
		c.addLagLocked(at.Sub(l.CloseTime))
	}
}

// addLagLocked keeps the newest lagSamples lags.
func (c *Cadence) addLagLocked(d time.Duration) {
	if d < 0 {
		d = 0
	}
	if len(c.lags) == lagSamples {
		c.lags = c.lags[1:]
	}
	c.lags = append(c.lags, d)
}

// Latest is the newest ledger seen (zero if none).
func (c *Cadence) Latest() LedgerInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.latest
}

// Interval is the estimated time between ledger closes: the median of the recent gaps between
// close times, within [100 ms, 10 s]; DefaultLedgerInterval until two ledgers were seen.
func (c *Cadence) Interval() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.intervalLocked()
}

func (c *Cadence) intervalLocked() time.Duration {
	if len(c.gaps) == 0 {
		return DefaultLedgerInterval
	}
	s := slices.Clone(c.gaps)
	slices.Sort(s)
	return min(max(s[len(s)/2], minInterval), maxInterval)
}

// TightPoll is the period of reads while a ledger is due: a twentieth of the interval, between
// 25 and 100 ms.
func (c *Cadence) TightPoll() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tightPollLocked()
}

func (c *Cadence) tightPollLocked() time.Duration {
	return min(max(c.intervalLocked()/20, minTightPoll), maxTightPoll)
}

// Lag is the low end (the 10th percentile) of the recent visibility lags: how long after its close
// time a ledger is visible at the earliest. 0 until one was measured, and after a late arrival
// (Late) shows the estimate too high.
func (c *Cadence) Lag() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lagLocked()
}

func (c *Cadence) lagLocked() time.Duration {
	if len(c.lags) == 0 {
		return 0
	}
	s := slices.Clone(c.lags)
	slices.Sort(s)
	return s[len(s)/10]
}

// Late records that a wait for a ledger found it already visible at its first read: the lag
// estimate may be too high (a higher estimate would never again catch a ledger appearing, the
// only precise measure). It adds a sample below the current estimate, so a run of late arrivals
// walks the estimate down until precise measures resume.
func (c *Cadence) Late() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lag := c.lagLocked(); lag > 0 {
		c.addLagLocked(lag - 2*c.tightPollLocked())
	}
}

// VisibleAt is when ledger seq should be visible at the earliest: its expected close time (the
// latest ledger's close time plus the interval per ledger between them) plus the low end of the
// visibility lag. Zero when no ledger was seen, or seq is visible already.
func (c *Cadence) VisibleAt(seq uint32) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.Sequence == 0 || seq <= c.latest.Sequence {
		return time.Time{}
	}
	closes := c.latest.CloseTime.Add(time.Duration(seq-c.latest.Sequence) * c.intervalLocked())
	return closes.Add(c.lagLocked())
}
