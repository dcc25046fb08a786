package wiring

import (
	"context"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Observers fans the orchestrator's observations out to several observers (the metrics writer
// and the tracing observer): StartStep threads the context through each in order and ends the
// steps in reverse order; Finished is told to each. Nil entries are skipped.
type Observers []transfer.Observer

var _ transfer.Observer = Observers(nil)

// StartStep starts step on every observer.
func (m Observers) StartStep(ctx context.Context, step string) (context.Context, func(error)) {
	ends := make([]func(error), 0, len(m))
	for _, o := range m {
		if o == nil {
			continue
		}
		var end func(error)
		ctx, end = o.StartStep(ctx, step)
		ends = append(ends, end)
	}
	return ctx, func(err error) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](err)
		}
	}
}

// Finished tells every observer.
func (m Observers) Finished(ctx context.Context, r transfer.Report) {
	for _, o := range m {
		if o != nil {
			o.Finished(ctx, r)
		}
	}
}

var _ transfer.FailureCounter = Observers(nil)

// CountFailure tells every observer that counts failures (transfer.FailureCounter).
func (m Observers) CountFailure(ctx context.Context, op transfer.Operation, c transfer.Classification, code string) {
	for _, o := range m {
		if fc, ok := o.(transfer.FailureCounter); ok && o != nil {
			fc.CountFailure(ctx, op, c, code)
		}
	}
}
