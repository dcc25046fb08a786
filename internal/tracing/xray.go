package tracing

import (
	"context"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-xray-sdk-go/v2/instrumentation/awsv2"
	"github.com/aws/aws-xray-sdk-go/v2/strategy/ctxmissing"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/aws/aws-xray-sdk-go/v2/xraylog"
)

// The X-Ray SDK's half (TRACING=xray): everything that calls the SDK is in this file.

// silenceXRay sets the SDK's logger once: xray.SetLogger is not safe once the SDK's goroutines
// run (its sampling rule poller logs), and Configure may run again (tests).
var silenceXRay sync.Once

func configureXRay() error {
	silenceXRay.Do(func() { xray.SetLogger(xraylog.NullLogger) })
	return xray.Configure(xray.Config{ContextMissingStrategy: ctxmissing.NewDefaultIgnoreErrorStrategy()})
}

// instrumentAWSXRay adds the SDK's middleware to every client built from cfg.
func instrumentAWSXRay(cfg *aws.Config) {
	awsv2.AWSV2Instrumentor(&cfg.APIOptions)
}

// httpClientXRay wraps c's transport with xray.RoundTripper.
func httpClientXRay(c *http.Client) *http.Client {
	return xray.Client(c)
}

func tracedXRay(ctx context.Context) bool {
	if xray.GetSegment(ctx) != nil {
		return true
	}
	h, _ := ctx.Value(xray.LambdaTraceHeaderKey).(string)
	return h != ""
}

func startStepXRay(ctx context.Context, step string) (context.Context, func(error)) {
	if !tracedXRay(ctx) {
		return ctx, func(error) {}
	}
	sctx, seg := xray.BeginSubsegment(ctx, "transfer."+step)
	if seg == nil {
		return ctx, func(error) {}
	}
	return sctx, seg.Close
}
