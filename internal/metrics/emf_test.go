package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n got: %s\nwant: %s", path, got, want)
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		emit func(w *metrics.Writer)
	}{
		{"success", func(w *metrics.Writer) {
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Withdraw, Outcome: transfer.OutcomeSuccess, Duration: 1234500 * time.Microsecond})
		}},
		{"replayed", func(w *metrics.Writer) {
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Deposit, Outcome: transfer.OutcomeReplayed, ReplayOf: "replayable", Duration: 12 * time.Millisecond})
		}},
		{"replayed_rejection", func(w *metrics.Writer) {
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Withdraw, Outcome: transfer.OutcomeReplayed, ReplayOf: "rejected",
				Classification: transfer.Terminal, Code: "TRANSACTION_FAILED", Duration: 9 * time.Millisecond})
		}},
		{"in_doubt", func(w *metrics.Writer) {
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Withdraw, Outcome: transfer.OutcomeInDoubt,
				Classification: transfer.Indeterminate, Code: "TRANSFER_TIMEOUT", Duration: 45 * time.Second})
		}},
		{"fee_above_cap", func(w *metrics.Writer) {
			// The network's fee above MAX_FEE_STROOPS: counted by its own code, which the
			// fee-above-cap alarm sums.
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Withdraw, Outcome: transfer.OutcomeFailed,
				Classification: transfer.Retryable, Code: transfer.CodeFeeAboveCap, Duration: 35 * time.Millisecond})
		}},
		{"gauge", func(w *metrics.Writer) {
			w.InDoubtGauge(context.Background(), 3)
			w.InDoubtGauge(context.Background(), 0)
		}},
		{"balances", func(w *metrics.Writer) {
			w.BalanceGauge(context.Background(), metrics.AccountVault, "USDC", 12_345_678_9012)
			w.BalanceGauge(context.Background(), metrics.AccountFee, metrics.AssetXLM, 5)
			w.ChannelLeasesGauge(context.Background(), 7)
		}},
		{"event_publish_failures", func(w *metrics.Writer) {
			w.EventPublishFailures(context.Background(), 2)
		}},
		{"queued_stranded", func(w *metrics.Writer) {
			w.QueuedStrandedGauge(context.Background(), 4)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.emit(metrics.New(&buf, func() time.Time { return t0 }))
			golden(t, tc.name, buf.Bytes())
		})
	}
}

// emf is the part of an EMF line the checks below read.
type emf struct {
	AWS struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	} `json:"_aws"`
}

// TestLinesAreValidEMF checks the rules CloudWatch applies to every line: the namespace, the
// seed's metric names, every dimension and metric a top-level member, at most 30 dimensions.
func TestLinesAreValidEMF(t *testing.T) {
	seedDims := map[string][]string{
		metrics.Total: {"operation", "outcome"}, metrics.DurationMS: {"operation", "outcome"},
		metrics.ReplayTotal: {"operation", "replay_of"}, metrics.FailureTotal: {"operation", "classification", "code"},
		metrics.InDoubt: {}, metrics.Balance: {"account", "asset"}, metrics.ChannelLeasesInUse: {},
		metrics.EventPublishFailures: {}, metrics.QueuedStranded: {},
		metrics.DailyDiscrepancies: {}, metrics.DailyFailed: {},
	}
	for name, dims := range seedDims {
		if got, ok := metrics.Dimensions[name]; !ok || strings.Join(got, ",") != strings.Join(dims, ",") {
			t.Errorf("metrics.Dimensions[%s] = %v, want %v", name, got, dims)
		}
	}
	var buf bytes.Buffer
	w := metrics.New(&buf, func() time.Time { return t0 })
	for _, out := range []string{transfer.OutcomeSuccess, transfer.OutcomeReplayed, transfer.OutcomeRejected, transfer.OutcomeInDoubt, transfer.OutcomeFailed} {
		r := transfer.Report{Operation: transfer.Withdraw, Outcome: out, Duration: time.Second}
		if out != transfer.OutcomeSuccess {
			r.Classification, r.Code = transfer.Retryable, "RPC_ERROR"
		}
		if out == transfer.OutcomeReplayed {
			r.ReplayOf = "replayable"
		}
		w.Finished(context.Background(), r)
	}
	w.InDoubtGauge(context.Background(), 1)
	w.BalanceGauge(context.Background(), metrics.AccountVault, "USDC", 1)
	w.ChannelLeasesGauge(context.Background(), 2)
	w.EventPublishFailures(context.Background(), 3)
	w.QueuedStrandedGauge(context.Background(), 4)
	w.DailyDiscrepancies(context.Background(), 0)
	w.DailyFailed(context.Background())
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var doc emf
		var members map[string]any
		if err := json.Unmarshal([]byte(line), &doc); err != nil {
			t.Fatal(err)
		}
		_ = json.Unmarshal([]byte(line), &members)
		if doc.AWS.Timestamp != t0.UnixMilli() {
			t.Errorf("Timestamp %d", doc.AWS.Timestamp)
		}
		// Lambda's log-level filtering keeps the line at every ApplicationLogLevel (package doc).
		if members["level"] != "FATAL" {
			t.Errorf("level %v in %s, want FATAL", members["level"], line)
		}
		if ts, _ := members["timestamp"].(string); ts != "2026-03-01T12:00:00.000Z" {
			t.Errorf("timestamp %q in %s", ts, line)
		}
		for _, d := range doc.AWS.CloudWatchMetrics {
			if d.Namespace != "TransferOrchestration" || len(d.Dimensions) != 1 {
				t.Errorf("directive %+v", d)
			}
			for _, m := range d.Metrics {
				seen[m.Name] = true
				want, ok := seedDims[m.Name]
				if !ok || strings.Join(want, ",") != strings.Join(d.Dimensions[0], ",") {
					t.Errorf("%s has dimensions %v, want %v", m.Name, d.Dimensions[0], want)
				}
				if _, ok := members[m.Name].(float64); !ok {
					t.Errorf("%s: no numeric member in %s", m.Name, line)
				}
			}
			for _, dim := range d.Dimensions[0] {
				if s, ok := members[dim].(string); !ok || s == "" {
					t.Errorf("dimension %s missing from %s", dim, line)
				}
			}
		}
	}
	if len(seen) != len(seedDims) || len(metrics.Names) != len(seedDims) || len(metrics.Dimensions) != len(seedDims) {
		t.Errorf("metrics written %v, want all of %v", seen, seedDims)
	}
}

func TestConcurrentLinesDoNotInterleave(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.New(&buf, nil)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			w.Finished(context.Background(), transfer.Report{Operation: transfer.Withdraw, Outcome: transfer.OutcomeSuccess})
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("invalid line %q", l)
		}
	}
}
