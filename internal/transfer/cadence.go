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
	// gapSamples is how many recent gaps between ledger closes a Cadence keeps.
	gapSamples = 15
	// lagRise is how slowly the lag estimate rises towards a sample above it: by 1/lagRise of the
	// difference. A sample below it lowers it at once. An estimate too high sleeps past the
	// ledger and costs the caller latency; one too low costs a few probes: so the estimate
	// falls fast and rises slowly, and sits near the low end of the lags (about their 15th
	// percentile for lags spread uniformly).
	lagRise = 32
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
	// lag is the low end of the visibility lags measured precisely (the read before showed the
	// previous ledger less than two tight polls earlier); lagKnown says one was measured.
	lag      time.Duration
	lagKnown bool
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

// addLagLocked takes in a lag sample (lagRise). A lag may be negative: stellar-core stamps a
// ledger's close time as its clock in whole seconds but at least the previous close time + 1
// (HerderImpl::triggerNextLedger), so while ledgers close faster than one a second the stamps run
// ahead of the clock, by seconds after a few hundred ledgers of a 1 s network whose gaps vary;
// a validator's clock may also be ahead of this process's. The lag is then an offset between the
// stamps and this clock, and clamping it to 0 would predict every ledger late by the difference.
//
// The estimate tracks drift: the offset moves by a random walk while the stamps run ahead, by
// about a second every hundred ledgers at a 1 s interval varied by +-20%, faster than a
// percentile of the last few dozen samples follows it (those were measured over hundreds of
// ledgers, one or two per transfer).
func (c *Cadence) addLagLocked(d time.Duration) {
	switch {
	case !c.lagKnown || d < c.lag:
		c.lag, c.lagKnown = d, true
	default:
		c.lag += (d - c.lag) / lagRise
	}
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

func (c *Cadence) intervalLocked() time.Duration { return c.gapLocked(2) }

// EarliestGap is the low end of the recent gaps between ledger closes (their 10th percentile,
// within [100 ms, 10 s]): how soon after the latest ledger the next can close, as far as this
// process has seen. DefaultLedgerInterval until two ledgers were seen.
func (c *Cadence) EarliestGap() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gapLocked(10)
}

// LatestGap is the high end of the recent gaps (their 90th percentile, within [100 ms, 10 s]).
func (c *Cadence) LatestGap() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gapLocked(-10)
}

// gapLocked is a quantile of the recent gaps: the median for 2, the 1/q-th low end for q > 2,
// the 1/-q-th high end for q < 0.
func (c *Cadence) gapLocked(q int) time.Duration {
	if len(c.gaps) == 0 {
		return DefaultLedgerInterval
	}
	s := slices.Clone(c.gaps)
	slices.Sort(s)
	i := len(s) / 2
	switch {
	case q > 2:
		i = len(s) / q
	case q < 0:
		i = len(s) - 1 - len(s)/-q
	}
	return min(max(s[i], minInterval), maxInterval)
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

// Lag is the low end of the recent visibility lags (lagRise): how long after its close time a
// ledger is visible at the earliest. 0 until one was measured. Negative when the close times the
// network stamps run ahead of this process's clock (addLagLocked).
func (c *Cadence) Lag() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lagLocked()
}

func (c *Cadence) lagLocked() time.Duration { return c.lag }

// Late records that a wait for a ledger found it already visible at its first read, made at `at`:
// the lag estimate may be too high (a higher estimate would never again catch a ledger appearing,
// the only precise measure). The latest ledger was visible at `at`, so its lag was at most `at`
// less its close time: the estimate falls to that bound if it is above it, and by two tight polls
// otherwise (the prediction may have been exact: the two look alike), so a run of late arrivals
// walks it down until precise measures resume.
func (c *Cadence) Late(at time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.lagKnown {
		return
	}
	c.lag -= 2 * c.tightPollLocked()
	if c.latest.Sequence != 0 {
		c.lag = min(c.lag, at.Sub(c.latest.CloseTime))
	}
}

// VisibleAt is when ledger seq should be visible at the earliest: its earliest plausible close
// time plus the low end of the visibility lag. The earliest close is the latest ledger's close
// time plus the earliest gap (EarliestGap) for the next ledger and the interval for each one
// after it: waiting for the median gap would sleep past every ledger that closes early, and on
// pubnet, where gaps run from 5 to 9 s, that is three ledgers in ten. Zero when no ledger was
// seen, or seq is visible already.
func (c *Cadence) VisibleAt(seq uint32) time.Time { return c.visibleAt(seq, 10) }

// LikelyVisibleAt is VisibleAt with the median gap for the next ledger (Interval) instead of the
// earliest: before it, ledger seq is visible only if its gap was short.
func (c *Cadence) LikelyVisibleAt(seq uint32) time.Time { return c.visibleAt(seq, 2) }

// visibleAt is VisibleAt with the gapLocked quantile q for the next ledger.
func (c *Cadence) visibleAt(seq uint32, q int) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.latest.Sequence == 0 || seq <= c.latest.Sequence {
		return time.Time{}
	}
	ahead := time.Duration(seq - c.latest.Sequence - 1)
	closes := c.latest.CloseTime.Add(c.gapLocked(q) + ahead*c.intervalLocked())
	return closes.Add(c.lagLocked())
}
