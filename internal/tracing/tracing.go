package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Mode is TRACING's value: which SDK traces the process.
type Mode string

// The modes (package doc).
const (
	XRay Mode = "xray"
	OTel Mode = "otel"
	Off  Mode = "off"
)

// EnvMode is the environment variable that picks the Mode.
const EnvMode = "TRACING"

// ModeFrom reads TRACING: unset or empty is XRay (the default: doc.go says why); otherwise exactly
// "xray", "otel" or "off", else an error naming the value.
func ModeFrom(getenv func(string) string) (Mode, error) {
	switch v := getenv(EnvMode); Mode(v) {
	case "":
		return XRay, nil
	case XRay, OTel, Off:
		return Mode(v), nil
	default:
		return "", fmt.Errorf("tracing: TRACING must be xray, otel or off, not %q", clip(v, 32))
	}
}

// state is what Configure chose; nil (never configured) behaves as XRay without Configure's
// settings, which is what tests and the local stack have always run with.
type state struct {
	mode Mode
	otel *otelState // OTel only
}

var current atomic.Pointer[state]

func active() state {
	if s := current.Load(); s != nil {
		return *s
	}
	return state{mode: XRay}
}

// ActiveMode is the mode Configure set (XRay before any Configure).
func ActiveMode() Mode { return active().mode }

// Configure sets the process-wide tracing from TRACING (ModeFrom), once, from main, before any
// traced call; logger receives the OpenTelemetry path's export failures. Errors: an invalid
// TRACING, or for otel a missing AWS_REGION (without OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) or missing
// credentials (package doc, "The OpenTelemetry path"). Configuring again replaces the previous
// setting, shutting down its provider (tests).
//
// XRay: the X-Ray SDK keeps its configuration in a global: a missing segment is ignored instead of
// logged (the SDK's default, LOG_ERROR, writes a line for every AWS call made outside a traced
// invocation, and RUNTIME_ERROR panics), and the SDK's own logger is silenced (it would warn on
// every untraced HTTP request). AWS_XRAY_CONTEXT_MISSING, when set, still wins, as the SDK
// documents.
func Configure(getenv func(string) string, logger *slog.Logger) error {
	mode, err := ModeFrom(getenv)
	if err != nil {
		return err
	}
	next := &state{mode: mode}
	switch mode {
	case XRay:
		if err := configureXRay(); err != nil {
			return err
		}
	case OTel:
		if next.otel, err = newOTel(getenv, logger); err != nil {
			return err
		}
	}
	if prev := current.Swap(next); prev != nil && prev.otel != nil {
		prev.otel.shutdown()
	}
	return nil
}

// InstrumentAWS instruments every client built from cfg: one subsegment (xray) or span (otel) per
// AWS call in a traced invocation, with service, operation and request ID, and the trace header on
// the request. Off: nothing.
func InstrumentAWS(cfg *aws.Config) {
	switch s := active(); s.mode {
	case XRay:
		instrumentAWSXRay(cfg)
	case OTel:
		s.otel.instrumentAWS(cfg)
	}
}

// HTTPClient returns a copy of c (nil: http.DefaultClient's settings) whose transport records one
// subsegment (xray) or client span (otel) per request whose context is traced; off returns c as
// given (nil: a new client). Transport errors come back unchanged, so the Stellar adapter still tells "nothing
// written" from "maybe delivered".
func HTTPClient(c *http.Client) *http.Client {
	switch s := active(); s.mode {
	case XRay:
		return httpClientXRay(c)
	case OTel:
		return s.otel.httpClient(c)
	}
	if c == nil {
		return &http.Client{}
	}
	return c
}

// Traced reports whether ctx belongs to a traced invocation. xray: it holds an X-Ray segment, or
// the Lambda trace header from which the SDK makes one. otel: its span is recording (a sampled
// invocation). off: never.
func Traced(ctx context.Context) bool {
	switch active().mode {
	case XRay:
		return tracedXRay(ctx)
	case OTel:
		return tracedOTel(ctx)
	}
	return false
}

// Observer is transfer.Observer's tracing half: StartStep opens a subsegment or span named for the
// step when ctx is traced; Finished does nothing (metrics.Writer counts).
type Observer struct{}

var _ transfer.Observer = Observer{}

// StartStep opens the subsegment or span "transfer.<step>" when ctx is traced and returns the
// context that carries it; the returned function closes it with the step's error (a fault in
// X-Ray, status Error in OpenTelemetry). Untraced, it returns ctx and a no-op.
func (Observer) StartStep(ctx context.Context, step string) (context.Context, func(error)) {
	switch s := active(); s.mode {
	case XRay:
		return startStepXRay(ctx, step)
	case OTel:
		return s.otel.startStep(ctx, step)
	}
	return ctx, func(error) {}
}

// Finished does nothing.
func (Observer) Finished(context.Context, transfer.Report) {}

// clip bounds a value quoted in an error.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
