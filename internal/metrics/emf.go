// Package metrics writes the service's metrics in CloudWatch Embedded Metric Format (EMF): one
// JSON log line per observation, which CloudWatch Logs turns into metrics in the namespace
// TransferOrchestration. The names and dimensions are README.md's "Operating it" (Metrics).
//
// EMF is written here by hand: it is a small, documented JSON shape, and no well-kept Go EMF
// library is in this stack (AWS publishes EMF clients for Node, Python and Java, not Go).
package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Namespace is the CloudWatch namespace of every metric.
const Namespace = "TransferOrchestration"

// Metric names (README.md, "Operating it").
const (
	// Total counts Transfer calls, by operation and outcome.
	Total = "transfer_orchestration_total"
	// ReplayTotal counts replayed outcomes, by operation and replay_of (replayable, rejected).
	ReplayTotal = "transfer_orchestration_replay_total"
	// FailureTotal counts calls that failed, by operation, classification and code.
	FailureTotal = "transfer_orchestration_failure_total"
	// DurationMS is a call's duration in milliseconds, by operation and outcome.
	DurationMS = "transfer_orchestration_duration_ms"
	// InDoubt is the number of in-doubt items (the in-doubt index's count); no dimensions.
	InDoubt = "transfer_orchestration_in_doubt"
)

// Dimension names (README.md, "Operating it").
const (
	DimOperation      = "operation"
	DimOutcome        = "outcome"
	DimReplayOf       = "replay_of"
	DimClassification = "classification"
	DimCode           = "code"
)

// EMF units.
const (
	unitCount        = "Count"
	unitMilliseconds = "Milliseconds"
)

// Writer writes EMF lines to W, one JSON object and a newline per call. It implements
// transfer.Observer's Finished (see Observer) and the in-doubt gauge. Safe for concurrent use:
// lines are never interleaved.
type Writer struct {
	w   io.Writer
	now func() time.Time

	mu sync.Mutex
}

// New returns a Writer on w (os.Stdout in Lambda: CloudWatch Logs reads EMF from the function's
// log); now stamps the lines (nil: time.Now).
func New(w io.Writer, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{w: w, now: now}
}

// directive is one entry of _aws.CloudWatchMetrics.
type directive struct {
	Namespace  string       `json:"Namespace"`
	Dimensions [][]string   `json:"Dimensions"`
	Metrics    []metricDefn `json:"Metrics"`
}

type metricDefn struct {
	Name string `json:"Name"`
	Unit string `json:"Unit"`
}

type metadata struct {
	Timestamp         int64       `json:"Timestamp"` // epoch milliseconds
	CloudWatchMetrics []directive `json:"CloudWatchMetrics"`
}

// Finished writes one line for a Transfer call: Total and DurationMS by (operation, outcome);
// ReplayTotal by (operation, replay_of) when the outcome is a replay; FailureTotal by
// (operation, classification, code) when the call failed and did not merely replay a stored
// rejection (a replay is counted by ReplayTotal; counting it as a failure again would make every
// client retry of a rejected transfer look like a new failure).
func (w *Writer) Finished(_ context.Context, r transfer.Report) {
	members := map[string]any{
		DimOperation: string(r.Operation),
		DimOutcome:   r.Outcome,
		Total:        1,
		DurationMS:   float64(r.Duration.Microseconds()) / 1000,
	}
	dirs := []directive{{
		Namespace:  Namespace,
		Dimensions: [][]string{{DimOperation, DimOutcome}},
		Metrics:    []metricDefn{{Total, unitCount}, {DurationMS, unitMilliseconds}},
	}}
	if r.Outcome == transfer.OutcomeReplayed {
		members[DimReplayOf] = r.ReplayOf
		members[ReplayTotal] = 1
		dirs = append(dirs, directive{Namespace: Namespace, Dimensions: [][]string{{DimOperation, DimReplayOf}},
			Metrics: []metricDefn{{ReplayTotal, unitCount}}})
	} else if r.Code != "" {
		members[DimClassification] = string(r.Classification)
		members[DimCode] = r.Code
		members[FailureTotal] = 1
		dirs = append(dirs, directive{Namespace: Namespace, Dimensions: [][]string{{DimOperation, DimClassification, DimCode}},
			Metrics: []metricDefn{{FailureTotal, unitCount}}})
	}
	w.write(members, dirs)
}

// StartStep does nothing: metrics have no steps (the tracing observer opens subsegments).
func (w *Writer) StartStep(ctx context.Context, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}

var _ transfer.Observer = (*Writer)(nil)

// InDoubtGauge writes the in-doubt gauge: n in-doubt items, with no dimensions (an empty
// dimension set publishes the metric under the namespace alone).
func (w *Writer) InDoubtGauge(_ context.Context, n int) {
	w.write(map[string]any{InDoubt: n}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{InDoubt, unitCount}},
	}})
}

func (w *Writer) write(members map[string]any, dirs []directive) {
	members["_aws"] = metadata{Timestamp: w.now().UnixMilli(), CloudWatchMetrics: dirs}
	// encoding/json writes map keys sorted, so lines are stable (golden files).
	b, err := json.Marshal(members)
	if err != nil {
		// Only strings, numbers and the fixed metadata are marshalled: this cannot happen.
		b = fmt.Appendf(nil, `{"emfError":%q}`, err.Error())
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.w.Write(b) // a metric never fails the transfer
}
