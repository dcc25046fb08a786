package metrics_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/metrics"
)

// The console shows an EMF line as the metric it carries, dimensions sorted, and passes any
// other line through unchanged.
func TestConsoleShowsMetricsAsMetrics(t *testing.T) {
	var b strings.Builder
	c := metrics.Console(&b)
	w := metrics.New(c, func() time.Time { return time.Unix(1_800_000_000, 0) })
	w.BalanceGauge(context.Background(), "vault", "USDC", 120)
	if _, err := c.Write([]byte("{\"level\":\"INFO\",\"msg\":\"not a metric\"}\nplain text\n")); err != nil {
		t.Fatal(err)
	}
	want := "metric transfer_orchestration_balance=0.000012 None account=vault asset=USDC\n" +
		"{\"level\":\"INFO\",\"msg\":\"not a metric\"}\nplain text\n"
	if b.String() != want {
		t.Fatalf("console wrote\n%s\nwant\n%s", b.String(), want)
	}
}
