package tracing

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// lambdaTraceHeaderKey is the context key under which aws-lambda-go stores the invocation's trace
// header (Lambda-Runtime-Trace-Id); a plain string, as aws-lambda-go and the X-Ray SDK
// (xray.LambdaTraceHeaderKey) use it. logging.WithTraceHeader sets it outside Lambda.
const lambdaTraceHeaderKey = "x-amzn-trace-id"

// xrayHeader is the X-Ray propagator's header name.
const xrayHeader = "X-Amzn-Trace-Id"

// Lambda returns h ready for lambda.Start. otel: each invocation runs inside its span
// (StartInvocation), which is ended and flushed before the answer goes back. xray and off: h
// itself (Lambda's active tracing makes the function's segment; the X-Ray SDK finds the trace
// header in the context).
func Lambda(h lambda.Handler) lambda.Handler {
	if ActiveMode() != OTel {
		return h
	}
	return invocationHandler{h}
}

type invocationHandler struct{ h lambda.Handler }

func (w invocationHandler) Invoke(ctx context.Context, payload []byte) (out []byte, err error) {
	ctx, end := StartInvocation(ctx, "")
	defer func() {
		// A panic still ends and flushes the span; the runtime then reports it as before.
		if v := recover(); v != nil {
			end(fmt.Errorf("panic: %v", v))
			panic(v)
		}
		end(err)
	}()
	return w.h.Invoke(ctx, payload)
}

// StartInvocation starts the span of one invocation (otel only; otherwise ctx and a no-op): kind
// SERVER, named name (empty: AWS_LAMBDA_FUNCTION_NAME), the child of the X-Ray trace header in ctx
// (the Lambda runtime's, or logging.WithTraceHeader's) and sampled as it says; without a header it
// records nothing. It carries the request ID and the function ARN from the Lambda context. The
// returned function ends it with the invocation's error and flushes every finished span
// (ExportTimeout at most; a failure is logged at WARN and returned to nobody).
func StartInvocation(ctx context.Context, name string) (context.Context, func(error)) {
	s := active()
	if s.mode != OTel {
		return ctx, func(error) {}
	}
	o := s.otel
	if name == "" {
		name = o.function
	}
	header, _ := ctx.Value(lambdaTraceHeaderKey).(string)
	ctx = o.propagator.Extract(ctx, propagation.MapCarrier{xrayHeader: header})
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		opts = append(opts, trace.WithAttributes(semconv.FaaSInvocationID(lc.AwsRequestID)))
		if arn := lc.InvokedFunctionArn; arn != "" {
			opts = append(opts, trace.WithAttributes(semconv.CloudResourceID(arn)))
			if parts := strings.Split(arn, ":"); len(parts) > 4 {
				opts = append(opts, trace.WithAttributes(semconv.CloudAccountID(parts[4])))
			}
		}
	}
	ctx, span := o.tracer.Start(ctx, name, opts...)
	sampled := span.IsRecording()
	return ctx, func(err error) {
		endSpan(span, err)
		if !sampled {
			return // nothing of this invocation waits in the processor
		}
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ExportTimeout)
		defer cancel()
		if ferr := o.provider.ForceFlush(fctx); ferr != nil {
			o.logger.WarnContext(ctx, "traces not exported", "err", ferr)
		}
	}
}
