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
// of each record's context (see Handler).
func New(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(NewHandler(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: RedactSeeds})))
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
