// Package tracing puts the service on AWS X-Ray (github.com/aws/aws-xray-sdk-go/v2): the AWS SDK
// clients and the Stellar HTTP client are instrumented, and Observer opens a subsegment for each
// orchestrator step (claim, prepare, send, await, settle). Where there is no X-Ray (tests, the
// local stack: no trace header and no segment in the context, no daemon) it records nothing,
// logs nothing and fails nothing.
//
// AWS puts the X-Ray SDKs in maintenance until 2027-02-25 and recommends OpenTelemetry after
// that (AWS X-Ray Developer Guide, "X-Ray SDK and daemon end of support timeline"); the issue
// asks for this SDK, and everything X-Ray is in this package.
package tracing

import (
	"context"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/strategy/ctxmissing"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/aws/aws-xray-sdk-go/v2/xraylog"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Configure sets the X-Ray SDK's process-wide configuration (the SDK keeps it in a global; call
// this once, from main, before any traced call): a missing segment is ignored instead of logged
// (the SDK's default, LOG_ERROR, writes a line for every AWS call made outside a traced
// invocation, and RUNTIME_ERROR panics), and the SDK's own logger is silenced (it would warn on
// every untraced HTTP request). AWS_XRAY_CONTEXT_MISSING, when set, still wins, as the SDK
// documents.
func Configure() error {
	xray.SetLogger(xraylog.NullLogger)
	return xray.Configure(xray.Config{ContextMissingStrategy: ctxmissing.NewDefaultIgnoreErrorStrategy()})
}

// InstrumentAWS adds the X-Ray middleware to every client built from cfg: one subsegment per
// AWS call (service, operation, request ID) when the call's context is traced.
func InstrumentAWS(cfg *aws.Config) {
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}

// HTTPClient returns c (nil: http.DefaultClient's settings) with its transport wrapped by
// xray.RoundTripper: one subsegment per request whose context is traced. Transport errors come
// back unchanged, so the Stellar adapter still tells "nothing written" from "maybe delivered".
func HTTPClient(c *http.Client) *http.Client {
	return xray.Client(c)
}

// Observer is transfer.Observer's tracing half: StartStep opens a subsegment named for the step
// when ctx is traced; Finished does nothing (metrics.Writer counts).
type Observer struct{}

var _ transfer.Observer = Observer{}

// Traced reports whether ctx belongs to a traced invocation: it holds an X-Ray segment, or the
// Lambda trace header from which the SDK makes one.
func Traced(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(xray.LambdaTraceHeaderKey).(string)
	return h != ""
}

// StartStep opens the subsegment "transfer.<step>" when ctx is traced and returns the context
// that carries it; the returned function closes it with the step's error. Untraced, it returns
// ctx and a no-op.
func (Observer) StartStep(ctx context.Context, step string) (context.Context, func(error)) {
	if !Traced(ctx) {
		return ctx, func(error) {}
	}
	sctx, seg := xray.BeginSubsegment(ctx, "transfer."+step)
	if seg == nil {
		return ctx, func(error) {}
	}
	return sctx, seg.Close
}

// Finished does nothing.
func (Observer) Finished(context.Context, transfer.Report) {}
