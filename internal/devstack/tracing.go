package devstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/tracing/otlpreceiver"
)

// Tracing in the local stack. TRACING=xray (the default) and off leave it untraced: there is no
// X-Ray daemon here, and the X-Ray SDK records nothing without Lambda's trace header.
// TRACING=otel plays Lambda's part for the OpenTelemetry path (internal/tracing, "The
// OpenTelemetry path"): an OTLP receiver on TRACES_ADDR (127.0.0.1:4318, OTLP/HTTP's port) stands
// in for X-Ray's endpoint; the process exports to it, signed with SigV4 with the local static
// credentials as in AWS; and each invocation (an API request, an Invoke API call, a queued
// transfer's run, a sweep) gets a new sampled X-Ray trace header, as Lambda's active tracing gives
// one, and runs in its span (tracing.StartInvocation). GET <TracesURL> lists the spans received.

// localTracing is what Start set up for TRACING=otel; nil otherwise.
type localTracing struct {
	receiver *otlpreceiver.Receiver
	url      string // Info.TracesURL
}

// startTracing reads TRACING and, for otel, starts the receiver and configures the process's
// tracing to export to it (so it must run before any client is built).
func (s *Stack) startTracing(o Options) (*localTracing, error) {
	mode, err := tracing.ModeFrom(o.Getenv)
	if err != nil {
		return nil, err
	}
	if mode != tracing.OTel {
		return nil, nil
	}
	ln, err := s.listen("OTLP traces receiver", "TRACES_ADDR", o.TracesAddr)
	if err != nil {
		return nil, err
	}
	rec := otlpreceiver.New()
	s.serve(ln, rec)
	url := "http://" + ln.Addr().String() + otlpreceiver.Path
	env := map[string]string{
		tracing.EnvMode: string(tracing.OTel), tracing.EnvTracesEndpoint: url,
		"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local",
		"AWS_LAMBDA_FUNCTION_NAME": "devstack",
	}
	if err := tracing.Configure(func(k string) string { return env[k] }, o.Logger); err != nil {
		return nil, err
	}
	return &localTracing{receiver: rec, url: url}, nil
}

// tracesURL is Info.TracesURL: the receiver's, or "" without otel.
func (t *localTracing) tracesURL() string {
	if t == nil {
		return ""
	}
	return t.url
}

// awsOptions are the AWS clients' instrumentation (otel only).
func (t *localTracing) awsOptions() []func(*middleware.Stack) error {
	if t == nil {
		return nil
	}
	var cfg aws.Config
	tracing.InstrumentAWS(&cfg)
	return cfg.APIOptions
}

// httpClient is the Stellar client: instrumented with otel, else nil (the adapters' default).
func (t *localTracing) httpClient() *http.Client {
	if t == nil {
		return nil
	}
	return tracing.HTTPClient(&http.Client{Timeout: stellar.DefaultHTTPTimeout})
}

// invocation starts the span of one invocation of name, under a new sampled trace header; the
// returned function ends and flushes it. Without otel it returns ctx and a no-op.
func (t *localTracing) invocation(ctx context.Context, name string) (context.Context, func(error)) {
	if t == nil {
		return ctx, func(error) {}
	}
	return tracing.StartInvocation(logging.WithTraceHeader(ctx, newTraceHeader(time.Now())), name)
}

// handler runs each API request as an invocation of ApiFunction.
func (t *localTracing) handler(h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, end := t.invocation(r.Context(), apiFunction)
		defer end(nil)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// newTraceHeader is a sampled X-Ray trace header as Lambda's active tracing starts one: Root
// 1-<epoch seconds, 8 hex>-<96 random bits, 24 hex>, Parent <64 random bits, 16 hex> (standing in
// for the function's segment, which is never sent here), Sampled=1 (X-Ray Developer Guide,
// "Tracing header").
func newTraceHeader(now time.Time) string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=1", uint32(now.Unix()), hex.EncodeToString(b[:12]), hex.EncodeToString(b[12:]))
}
