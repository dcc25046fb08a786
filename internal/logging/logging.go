// Package logging provides the functions' structured logs: log/slog JSON lines that carry the
// Lambda request ID and the X-Ray trace ID of the invocation they were written in.
package logging

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Attribute names added to every record written with a context.
const (
	// AttrRequestID is the Lambda request ID (lambdacontext.LambdaContext.AwsRequestID).
	AttrRequestID = "requestId"
	// AttrXRayTraceID is the X-Ray trace ID, the Root of the invocation's trace header
	// ("1-5f84c7a9-1e2d3c4b5a69788796a5b4c3").
	AttrXRayTraceID = "xrayTraceId"
)

// traceHeaderKey is the context key under which aws-lambda-go stores the invocation's
// Lambda-Runtime-Trace-Id header ("Root=1-...;Parent=...;Sampled=1"). It is a plain string key
// because that is how aws-lambda-go (and the X-Ray SDK, xray.LambdaTraceHeaderKey) stores it.
const traceHeaderKey = "x-amzn-trace-id"

// New returns a JSON logger writing to w at level and above, adding the request and trace IDs
// of each record's context (see Handler). Lines carry the keys Lambda's log-level filtering reads
// (LogFormat JSON): "level" (TRACE, DEBUG, INFO, WARN, ERROR or FATAL) and "timestamp" (RFC 3339);
// a line whose level or timestamp Lambda cannot read is treated as INFO ("Log-level filtering",
// AWS Lambda Developer Guide: https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html),
// so an ERROR line with slog's default "time" key could be dropped at ApplicationLogLevel WARN.
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(NewHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: replaceAttr})))
}

// Lambda's levels below and above slog's: TRACE is slog's DEBUG-4, FATAL its ERROR+4.
const (
	LevelTrace = slog.LevelDebug - 4
	LevelFatal = slog.LevelError + 4
)

// LambdaLevel is the slog level of AWS_LAMBDA_LOG_LEVEL, which Lambda sets from the function's
// ApplicationLogLevel (TRACE, DEBUG, INFO, WARN, ERROR, FATAL; "Log-level filtering", AWS Lambda
// Developer Guide) so that a runtime writes no line Lambda would drop. Case is ignored; ok is
// false for "" and any other value (the caller keeps INFO).
func LambdaLevel(v string) (level slog.Level, ok bool) {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "TRACE":
		return LevelTrace, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL":
		return LevelFatal, true
	}
	return slog.LevelInfo, false
}

// replaceAttr redacts seeds (RedactSeeds), writes the time under "timestamp" and names Lambda's
// TRACE and FATAL levels (slog would write DEBUG-4 and ERROR+4, which Lambda reads as INFO).
func replaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 {
		switch a.Key {
		case slog.TimeKey:
			a.Key = "timestamp"
			return a
		case slog.LevelKey:
			if l, ok := a.Value.Any().(slog.Level); ok {
				switch {
				case l >= LevelFatal:
					return slog.String(a.Key, "FATAL")
				case l < slog.LevelDebug:
					return slog.String(a.Key, "TRACE")
				}
			}
			return a
		}
	}
	return RedactSeeds(groups, a)
}

// Handler wraps another slog.Handler and adds AttrRequestID and AttrXRayTraceID, at the top level
// of the line, to every record whose context carries them (a Lambda invocation's context, or one
// made with WithTraceHeader). Records written without a context (slog.Info rather than
// slog.InfoContext) carry neither, so the functions log with the *Context methods.
type Handler struct {
	// root is the wrapped handler with the attributes added before the first group; ops are the
	// groups and attributes added after it, replayed on root after the IDs so that the IDs stay
	// at the top level.
	root slog.Handler
	ops  []op
}

type op struct {
	group string
	attrs []slog.Attr
}

// NewHandler wraps inner.
func NewHandler(inner slog.Handler) *Handler { return &Handler{root: inner} }

// Enabled reports whether the wrapped handler handles level.
func (h *Handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.root.Enabled(ctx, level)
}

// Handle adds the IDs found in ctx, then passes the record on.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	var ids []slog.Attr
	if ctx != nil {
		if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
			ids = append(ids, slog.String(AttrRequestID, lc.AwsRequestID))
		}
		if id := TraceID(ctx); id != "" {
			ids = append(ids, slog.String(AttrXRayTraceID, id))
		}
	}
	if len(h.ops) == 0 {
		r.AddAttrs(ids...)
		return h.root.Handle(ctx, r)
	}
	next := h.root
	if len(ids) > 0 {
		next = next.WithAttrs(ids)
	}
	for _, o := range h.ops {
		if o.group != "" {
			next = next.WithGroup(o.group)
		} else {
			next = next.WithAttrs(o.attrs)
		}
	}
	return next.Handle(ctx, r)
}

// WithAttrs returns a handler that adds attrs to every record.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(h.ops) == 0 {
		return &Handler{root: h.root.WithAttrs(attrs)}
	}
	return &Handler{root: h.root, ops: append(h.ops[:len(h.ops):len(h.ops)], op{attrs: attrs})}
}

// WithGroup returns a handler that puts later attributes in group name.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{root: h.root, ops: append(h.ops[:len(h.ops):len(h.ops)], op{group: name})}
}

// TraceID returns the X-Ray trace ID (the Root field) of the trace header in ctx, or "".
func TraceID(ctx context.Context) string {
	header, _ := ctx.Value(traceHeaderKey).(string)
	for part := range strings.SplitSeq(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "Root="); ok {
			return v
		}
	}
	return ""
}

// WithTraceHeader returns ctx carrying an X-Ray trace header the way aws-lambda-go stores it, for
// callers that invoke handlers without the Lambda runtime (the local stack, tests).
func WithTraceHeader(ctx context.Context, header string) context.Context {
	//lint:ignore SA1029 the key must be the plain string aws-lambda-go and the X-Ray SDK use.
	return context.WithValue(ctx, traceHeaderKey, header)
}
