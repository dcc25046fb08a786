package stellar

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// FeeStatsTTL is how long the network's fee statistics are reused: about one ledger, the rate at
// which they change.
const FeeStatsTTL = 5 * time.Second

// validPercentile reports whether p is a percentile both fee stats APIs publish (RPC getFeeStats
// inclusionFee and Horizon /fee_stats fee_charged: p10 ... p90, p95, p99).
func validPercentile(p int) bool {
	return slices.Contains([]int{10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99}, p)
}

// FeeBoostTTL is how long a raised fee holds after the network last refused one as too low.
const FeeBoostTTL = time.Minute

// maxFeeBoost bounds how far refusals raise the fee; MAX_FEE_STROOPS still caps it.
const maxFeeBoost = 16

// feeCache keeps the last inclusion fee read per percentile, and the boost that first-send
// txINSUFFICIENT_FEE refusals put on it.
type feeCache struct {
	mu      sync.Mutex
	fee     int64
	p       int
	readAt  time.Time
	hasRead bool

	boost     int64 // multiplier of the fee rate, 1 when the network took our fees
	boostedAt time.Time
}

// refusedAsTooLow doubles the fee rate the next envelopes offer (up to maxFeeBoost times), for
// FeeBoostTTL: the network refused an envelope with txINSUFFICIENT_FEE, so the rebuild the domain
// makes after that proven refusal must offer more (issue 5: "rebuilds with a higher fee").
func (c *common) refusedAsTooLow() {
	fc := c.fees
	fc.mu.Lock()
	defer fc.mu.Unlock()
	now := c.clock.Now()
	if fc.boost < 1 || now.Sub(fc.boostedAt) > FeeBoostTTL {
		fc.boost = 1
	}
	fc.boost = min(fc.boost*2, maxFeeBoost)
	fc.boostedAt = now
}

// feeBoost is the current multiplier (1 when none holds).
func (c *common) feeBoost() int64 {
	fc := c.fees
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if fc.boost < 1 || c.clock.Now().Sub(fc.boostedAt) > FeeBoostTTL {
		return 1
	}
	return fc.boost
}

// feeRate is the fee per operation slot an envelope offers, in stroops: the base fee, raised to
// the network's inclusion fee at the configured percentile (FEE_PERCENTILE), and lowered so that
// the whole envelope stays within MAX_FEE_STROOPS. slots is the operation count, plus one for a
// fee bump (CAP-15 counts the bump as an operation). It fails when even the base fee would exceed
// the cap.
func (c *common) feeRate(ctx context.Context, ch chain, ops int, feeBumped bool) (int64, error) {
	slots := int64(ops)
	if feeBumped {
		slots++
	}
	rate := c.baseFeeStroops
	if c.feePercentile > 0 {
		f, err := c.inclusionFee(ctx, ch)
		if err != nil {
			return 0, err
		}
		rate = max(rate, f)
	}
	rate *= c.feeBoost()
	if c.maxFeeStroops > 0 && rate*slots > c.maxFeeStroops {
		rate = c.maxFeeStroops / slots
		if rate < c.baseFeeStroops {
			return 0, fmt.Errorf("stellar: fee %d stroops exceeds MAX_FEE_STROOPS %d", c.baseFeeStroops*slots, c.maxFeeStroops)
		}
	}
	return rate, nil
}

// inclusionFee returns the cached inclusion fee, reading it again after FeeStatsTTL. When a read
// fails it keeps using the last value it has.
func (c *common) inclusionFee(ctx context.Context, ch chain) (int64, error) {
	fc := c.fees
	now := c.clock.Now()
	fc.mu.Lock()
	if fc.hasRead && fc.p == c.feePercentile && now.Sub(fc.readAt) < FeeStatsTTL {
		defer fc.mu.Unlock()
		return fc.fee, nil
	}
	fc.mu.Unlock()
	f, err := ch.inclusionFee(ctx, c.feePercentile)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if err != nil {
		if fc.hasRead && fc.p == c.feePercentile {
			return fc.fee, nil
		}
		return 0, fmt.Errorf("stellar: reading fee stats: %w", err)
	}
	fc.fee, fc.p, fc.readAt, fc.hasRead = f, c.feePercentile, now, true
	return f, nil
}

// percentileOf picks percentile p from a fee distribution's fields.
func percentileOf(p int, p10, p20, p30, p40, p50, p60, p70, p80, p90, p95, p99 int64) int64 {
	switch p {
	case 10:
		return p10
	case 20:
		return p20
	case 30:
		return p30
	case 40:
		return p40
	case 50:
		return p50
	case 60:
		return p60
	case 70:
		return p70
	case 80:
		return p80
	case 90:
		return p90
	case 95:
		return p95
	default:
		return p99
	}
}
