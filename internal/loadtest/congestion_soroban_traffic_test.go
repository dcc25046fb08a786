package loadtest

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// TestBenchCongestionSorobanTraffic is the payment rows of the congestion benchmark (`make
// bench-congestion`, BENCH_CONGESTION=1; BENCH_CONGESTION_N arrivals per side) on a network where
// others' contract calls are a large share of the transactions, as on pubnet: defaultCongParams'
// classic background plus contractSorobanPerLedger vault deposits a ledger from the network's own
// accounts, bidding the same inclusion fees on top of their resource fees (tens of thousands of
// stroops). Horizon's /fee_stats then shows those resource fees in its high percentiles; the
// classic lane's market is what the payment rows bid. At the default MAX_FEE_STROOPS. It fails
// only if something was paid twice or a row hit an unexpected error.
func TestBenchCongestionSorobanTraffic(t *testing.T) {
	if os.Getenv("BENCH_CONGESTION") == "" {
		t.Skip("set BENCH_CONGESTION=1 (make bench-congestion)")
	}
	p := defaultCongParams()
	if s := os.Getenv("BENCH_CONGESTION_N"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("BENCH_CONGESTION_N=%q: want a positive integer", s)
		}
		p.Arrivals = v
	}
	p.Background = contractBackground(p)
	wall := time.Now()
	sides, lanes := measureCongestion(t, p)
	for _, s := range sides {
		if s.paidTwice() != 0 || s.failures != 0 {
			t.Errorf("%s: %d paid twice, %d failures (first: %v)", s.name, s.paidTwice(), s.failures, s.firstFail)
		}
	}
	highestSoroban := int64(0)
	for _, l := range lanes {
		highestSoroban = max(highestSoroban, l.SorobanBaseFee)
	}
	fmt.Printf("\nCongestion with others' contract calls, MAX_FEE_STROOPS %d: %d arrivals per side (one every %v on average, budget %v), %v ledgers, %d classic operations per ledger, background %d payments and %d contract calls per ledger at %d-%d stroops (of inclusion fee for the calls) with a %gx spike for %v; highest Soroban clearing fee %d; %v wall:\n\n%s\n",
		p.MaxFee, p.Arrivals, p.Arrival, p.Budget, p.Interval, stellarsim.PubnetLaneLimits.Scaled(p.LaneScale).ClassicOps, p.Background.PerLedger,
		p.Background.SorobanPerLedger, p.Background.FeeMin, p.Background.FeeMax, p.Background.Spikes[0].Multiplier, p.Background.Spikes[0].For,
		highestSoroban, time.Since(wall).Round(time.Second), congTable(p, sides, lanes))
}
