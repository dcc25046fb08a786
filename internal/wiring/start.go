package wiring

import (
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// Start hands handler (a handler function as lambda.Start takes it, or a lambda.Handler) to the
// Lambda runtime, wrapped by tracing.Lambda: under TRACING=otel each invocation runs in its span,
// flushed before the answer goes back. It never returns.
func (in *Init) Start(handler any) {
	lambda.Start(tracing.Lambda(lambda.NewHandler(handler)))
}
