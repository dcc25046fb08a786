package transfer

import (
	"context"
	"errors"
	"time"
)

// Observer is told what Transfer does, for metrics and traces; the orchestrator works without one.
// Implementations must be safe for concurrent use and must not fail the transfer.
type Observer interface {
	// StartStep begins a traced step (Step names: claim, prepare, send, await, settle); the
	// returned function ends it with the step's error, if any.
	StartStep(ctx context.Context, step string) (context.Context, func(error))
	// Finished is called once per Transfer call with its Report.
	Finished(ctx context.Context, r Report)
}

// FailureCounter is implemented by an Observer that counts a failure no call answers: the release
// the sweep or a discard makes (Settle) for a FAILED inclusion on the paying or the service's side,
// which pages through the alarm on transfer_orchestration_failure_total and its code; for a batch,
// once per batch, with its page. No call ran, so nothing else is counted (no total, no duration).
type FailureCounter interface {
	CountFailure(ctx context.Context, op Operation, c Classification, code string)
}

// Outcomes a Report can carry (transfer_orchestration_total's "outcome"; README.md, "Operating it").
const (
	OutcomeSuccess  = "success"  // a transaction landed for this call
	OutcomeReplayed = "replayed" // a stored outcome was replayed (success or rejection)
	OutcomeRejected = "rejected" // terminal: refused or failed on the ledger
	OutcomeInDoubt  = "in_doubt" // indeterminate
	OutcomeFailed   = "failed"   // retryable: nothing moved
)

// Report describes one Transfer call (README.md, "Operating it", metrics: operation, outcome, replay_of,
// classification, code, duration).
type Report struct {
	Operation Operation
	Outcome   string
	// ReplayOf is the stored status that was replayed ("replayable" or "rejected"), when Outcome
	// is "replayed".
	ReplayOf string
	// Classification and Code of the error, when there was one.
	Classification Classification
	Code           string
	Duration       time.Duration
	// Lookups are the Ledger.Lookup calls made while awaiting ledgers; Probes the reads of the
	// latest ledger alone (LatestReader) between them.
	Lookups, Probes int
}

// Trace step names passed to Observer.StartStep.
const (
	TraceClaim   = "claim"
	TracePrepare = "prepare"
	TraceSend    = "send"
	TraceAwait   = "await"
	TraceSettle  = "settle"
)

// report builds the Report of a finished call.
func report(op Operation, out Outcome, err error, d time.Duration) Report {
	r := Report{Operation: op, Duration: d}
	var p ProblemError
	switch {
	case err == nil && out.Replayed:
		r.Outcome, r.ReplayOf = OutcomeReplayed, string(StatusReplayable)
	case err == nil:
		r.Outcome = OutcomeSuccess
	case errors.As(err, &p):
		pr := p.Problem()
		r.Classification, r.Code = pr.Classification, pr.Code
		var rej *RejectedError
		switch {
		case errors.As(err, &rej) && rej.replayed:
			r.Outcome, r.ReplayOf = OutcomeReplayed, string(StatusRejected)
		case pr.Classification == Terminal:
			r.Outcome = OutcomeRejected
		case pr.Classification == Indeterminate:
			r.Outcome = OutcomeInDoubt
		default:
			r.Outcome = OutcomeFailed
		}
	default:
		r.Outcome, r.Classification, r.Code = OutcomeInDoubt, Indeterminate, CodeInternalError
	}
	return r
}

type noObserver struct{}

func (noObserver) StartStep(ctx context.Context, _ string) (context.Context, func(error)) {
	return ctx, func(error) {}
}
func (noObserver) Finished(context.Context, Report) {}
