// Package metrics writes the service's metrics in CloudWatch Embedded Metric Format (EMF): one
// JSON log line per observation, which CloudWatch Logs turns into metrics in the namespace
// TransferOrchestration. The names and dimensions are README.md's "Monitoring" table; the
// template's alarms and dashboard name only these (internal/cfntemplate's tests check it).
//
// Every line carries "level":"FATAL" and an RFC 3339 "timestamp", so Lambda's log-level filtering
// never drops a metric. With LogFormat JSON, Lambda filters application lines by their "level"
// field and treats a line whose level is missing or invalid, or whose timestamp is not valid RFC
// 3339, as INFO ("Log-level filtering", AWS Lambda Developer Guide:
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html), so an
// EMF line without a level would vanish at ApplicationLogLevel WARN or ERROR. FATAL is the least
// detailed level Lambda knows (TRACE, DEBUG, INFO, WARN, ERROR, FATAL) and it sends the selected
// level and every less detailed one, so a FATAL line passes every setting. No log line of the
// service is otherwise FATAL (log/slog has no such level): a query for level FATAL finds metrics.
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

// Metric names (README.md, "Monitoring").
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
	// Written by every sweep (each minute), whatever the count, so its absence means the sweep
	// stopped: the alarm treats missing data as breaching.
	InDoubt = "transfer_orchestration_in_doubt"
	// Balance is an account's balance in whole units of the asset (stroops / 10^7), by account
	// (vault or fee) and asset (a code of ASSETS, or XLM): written by every sweep.
	Balance = "transfer_orchestration_balance"
	// ChannelLeasesInUse is the number of channel accounts under an unexpired lease (the lease
	// items of the transfers table); no dimensions. Written by every sweep when channels are
	// configured.
	ChannelLeasesInUse = "transfer_orchestration_channel_leases_in_use"
	// EventPublishFailures counts the settlement events the alert function gave up publishing in
	// an invocation (their stream records are delivered again; README.md, "Settlement events");
	// no dimensions. Written only when some failed.
	EventPublishFailures = "transfer_orchestration_event_publish_failures"
	// QueuedStranded is the number of queued asynchronous transfers older than the sweep's grace
	// that the sweep cannot send again because the reconcile function has no queue (QUEUE_URL
	// empty; README.md, "Asynchronous transfers"); no dimensions. Written by a sweep only when
	// it found some.
	QueuedStranded = "transfer_orchestration_queued_stranded"
	// DailyDiscrepancies is the discrepancies of a daily reconciliation's report (README.md, "The
	// daily reconciliation"); no dimensions. Written by every run that reports, 0 included.
	DailyDiscrepancies = "transfer_orchestration_daily_discrepancies"
	// DailyFailed is 1 for a daily reconciliation that could not report (the chain or the table
	// could not be read, or the day cannot be reported); no dimensions.
	DailyFailed = "transfer_orchestration_daily_failed"
)

// Names lists every metric name the service writes, for the checks that alarms and dashboards
// name only metrics that exist.
var Names = []string{Total, ReplayTotal, FailureTotal, DurationMS, InDoubt, Balance, ChannelLeasesInUse, EventPublishFailures, QueuedStranded,
	DailyDiscrepancies, DailyFailed}

// Dimensions is the one dimension set each metric is written with: an alarm must name exactly
// these to see its data (CloudWatch treats each dimension set as a metric of its own).
var Dimensions = map[string][]string{
	Total: {DimOperation, DimOutcome}, DurationMS: {DimOperation, DimOutcome},
	ReplayTotal: {DimOperation, DimReplayOf}, FailureTotal: {DimOperation, DimClassification, DimCode},
	InDoubt: {}, Balance: {DimAccount, DimAsset}, ChannelLeasesInUse: {}, EventPublishFailures: {}, QueuedStranded: {},
	DailyDiscrepancies: {}, DailyFailed: {},
}

// Dimension names (README.md, "Monitoring").
const (
	DimOperation      = "operation"
	DimOutcome        = "outcome"
	DimReplayOf       = "replay_of"
	DimClassification = "classification"
	DimCode           = "code"
	DimAccount        = "account"
	DimAsset          = "asset"
)

// Values of DimAccount.
const (
	AccountVault = "vault"
	AccountFee   = "fee"
)

// AssetXLM is DimAsset's value for the native asset (lumens).
const AssetXLM = "XLM"

// Level is the "level" every EMF line carries (see the package comment); Timestamp's key is
// "timestamp" (RFC 3339, milliseconds).
const Level = "FATAL"

// EMF units.
const (
	unitCount        = "Count"
	unitMilliseconds = "Milliseconds"
	unitNone         = "None"
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

// CountFailure writes FailureTotal by (operation, classification, code) alone, for a failure no
// call answered (transfer.FailureCounter: the sweep's or a discard's release of a transfer that
// failed on the paying or the service's side), so that its code's alarm pages; Total and
// DurationMS count calls and are left alone.
func (w *Writer) CountFailure(_ context.Context, op transfer.Operation, c transfer.Classification, code string) {
	w.write(map[string]any{DimOperation: string(op), DimClassification: string(c), DimCode: code, FailureTotal: 1},
		[]directive{{Namespace: Namespace, Dimensions: [][]string{{DimOperation, DimClassification, DimCode}},
			Metrics: []metricDefn{{FailureTotal, unitCount}}}})
}

var _ transfer.FailureCounter = (*Writer)(nil)

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

// BalanceGauge writes Balance for account (AccountVault or AccountFee) and asset (a code, or
// AssetXLM): stroops in whole units (1 unit = 10^7 stroops; a float64 keeps every balance up to
// 2^53 stroops, about 900 million units, exact).
func (w *Writer) BalanceGauge(_ context.Context, account, asset string, stroops int64) {
	w.write(map[string]any{DimAccount: account, DimAsset: asset, Balance: float64(stroops) / 1e7}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{DimAccount, DimAsset}}, Metrics: []metricDefn{{Balance, unitNone}},
	}})
}

// ChannelLeasesGauge writes ChannelLeasesInUse: n channel accounts leased, no dimensions.
func (w *Writer) ChannelLeasesGauge(_ context.Context, n int) {
	w.write(map[string]any{ChannelLeasesInUse: n}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{ChannelLeasesInUse, unitCount}},
	}})
}

// EventPublishFailures writes EventPublishFailures: n settlement events given up on, no
// dimensions (alert.EventFailureCounter).
func (w *Writer) EventPublishFailures(_ context.Context, n int) {
	w.write(map[string]any{EventPublishFailures: n}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{EventPublishFailures, unitCount}},
	}})
}

// QueuedStrandedGauge writes QueuedStranded: n queued transfers the sweep cannot send, no
// dimensions (reconcile.StrandedGauge).
func (w *Writer) QueuedStrandedGauge(_ context.Context, n int) {
	w.write(map[string]any{QueuedStranded: n}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{QueuedStranded, unitCount}},
	}})
}

// DailyDiscrepancies writes DailyDiscrepancies: a daily report's n discrepancies, no dimensions
// (reconcile.DailyGauge).
func (w *Writer) DailyDiscrepancies(_ context.Context, n int) {
	w.write(map[string]any{DailyDiscrepancies: n}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{DailyDiscrepancies, unitCount}},
	}})
}

// DailyFailed writes DailyFailed 1: a daily reconciliation that could not report, no dimensions
// (reconcile.DailyGauge).
func (w *Writer) DailyFailed(_ context.Context) {
	w.write(map[string]any{DailyFailed: 1}, []directive{{
		Namespace: Namespace, Dimensions: [][]string{{}}, Metrics: []metricDefn{{DailyFailed, unitCount}},
	}})
}

func (w *Writer) write(members map[string]any, dirs []directive) {
	now := w.now()
	members["_aws"] = metadata{Timestamp: now.UnixMilli(), CloudWatchMetrics: dirs}
	members["level"] = Level
	members["timestamp"] = now.UTC().Format("2006-01-02T15:04:05.000Z07:00")
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
