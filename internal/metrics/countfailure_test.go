package metrics_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A failure no call answered (the sweep's release of a transfer that failed on the service's side)
// is one line with transfer_orchestration_failure_total and its three dimensions, which the
// template's alarm on the code reads, and no call's total or duration.
func TestCountFailureIsTheFailureAlone(t *testing.T) {
	var buf bytes.Buffer
	w := metrics.New(&buf, func() time.Time { return t0 })
	w.CountFailure(context.Background(), transfer.Withdraw, transfer.Retryable, transfer.CodeServiceSideFailure)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1: %q", len(lines), buf.String())
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if m[metrics.FailureTotal] != 1.0 || m["code"] != transfer.CodeServiceSideFailure || m["classification"] != "retryable" || m["operation"] != "withdraw" {
		t.Fatalf("line %s: want failure_total 1 with operation, classification and code", lines[0])
	}
	if _, ok := m[metrics.Total]; ok {
		t.Fatalf("line %s counts a call", lines[0])
	}
	if _, ok := m[metrics.DurationMS]; ok {
		t.Fatalf("line %s has a duration", lines[0])
	}
	aws := m["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)
	dims := aws[0].(map[string]any)["Dimensions"].([]any)[0].([]any)
	if len(dims) != 3 || dims[0] != "operation" || dims[1] != "classification" || dims[2] != "code" {
		t.Fatalf("dimensions %v, want operation, classification, code", dims)
	}
}
