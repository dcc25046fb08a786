package stellar

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// Whatever fee a txINSUFFICIENT_FEE answer names (a forged, corrupt or stale answer included:
// zero, negative, near the int64 limits), the next bid either fits MAX_FEE_STROOPS, resource fee
// included, and offers at least the base fee, or is FEE_ABOVE_CAP: the service never signs an
// envelope above the cap and never one below the network's minimum because of a hint.
func TestNamedFeeNeverBidsAboveTheCapOrBelowTheBaseFee(t *testing.T) {
	const maxFee = 100_000
	named := []int64{math.MinInt64, -1, 0, 1, 99, 101, 50_000, maxFee - 1, maxFee, maxFee + 1,
		1 << 31, 1 << 32, 1 << 53, math.MaxInt64 - 1, math.MaxInt64}
	shapes := []struct {
		name     string
		soroban  bool
		resource int64
		bump     int64
	}{
		{"payment", false, 0, 0}, {"fee bump", false, 0, 100}, {"contract call", true, 40_000, 0}, {"fee-bumped contract call", true, 40_000, 100},
	}
	for _, sh := range shapes {
		env := feeEnvelope(t, sh.soroban, 100, sh.resource, sh.bump)
		lane, slots := laneClassic, int64(1)
		if sh.soroban {
			lane = laneSoroban
		}
		if sh.bump > 0 {
			slots = 2
		}
		for _, n := range named {
			clock := vclock.New(time.Unix(1_900_000_000, 0))
			c, err := newCommon("test", keypair.MustRandom().Address(), usdcOnly(), 100, maxFee, 90, signing.StaticKeys{}, nil, clock, nil)
			if err != nil {
				t.Fatal(err)
			}
			ch := stillMarket{m: marketFees{flat(100), flat(100)}}
			c.refusedAsTooLow(env, insufficient(n))
			rate, err := c.bidRate(context.Background(), ch, feeBid{lane: lane, slots: slots, resourceFee: sh.resource})
			var u *transfer.UnavailableError
			switch {
			case errors.As(err, &u) && u.Code == transfer.CodeFeeAboveCap:
			case err != nil:
				t.Errorf("%s, named %d: %v, want a bid or FEE_ABOVE_CAP", sh.name, n, err)
			case rate < 100 || rate*slots+sh.resource > maxFee:
				t.Errorf("%s, named %d: rate %d x %d slots + resource %d = %d stroops; want the base fee at least and within the cap %d",
					sh.name, n, rate, slots, sh.resource, rate*slots+sh.resource, maxFee)
			}
		}
	}
}
