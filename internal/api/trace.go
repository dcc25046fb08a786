package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TraceHeader is the response header that carries the request's trace ID.
const TraceHeader = "X-Trace-Id"

type requestIDKey struct{}

// withRequestID returns ctx carrying an API Gateway request ID (the adapter sets it).
func withRequestID(ctx context.Context, id string) context.Context {
	if id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

func requestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

type callerKey struct{}

// withCaller returns ctx carrying the caller identity API Gateway authenticated (the adapter
// sets it from the event's IAM authorizer).
func withCaller(ctx context.Context, arn string) context.Context {
	if arn == "" {
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, arn)
}

// callerOf is who a cancel is recorded as: the IAM principal's ARN API Gateway authenticated
// (requestContext.authorizer.iam.userArn under ApiAuthorization AWS_IAM; clipped to 512 bytes, seeds
// redacted), transfer.AnonymousCaller when it authenticated nobody; and the API Gateway request ID.
// Only API Gateway sets the identity: no header or body a client sends can name it.
func callerOf(ctx context.Context) transfer.Canceller {
	arn, _ := ctx.Value(callerKey{}).(string)
	if arn == "" {
		arn = transfer.AnonymousCaller
	}
	return transfer.Canceller{Caller: logging.Clip(arn, 512), RequestID: requestIDFrom(ctx)}
}

// The X-Ray trace header's fields (AWS X-Ray developer guide, "Tracing header"; the X-Ray SDK's
// header package parses the same fields but checks none of them, hence these patterns):
// Root=1-{8 hex digits: epoch seconds}-{24 hex digits}, Parent={16 hex digits},
// Sampled=0|1|? (and further key=value fields such as Lineage or Self, which are not used here).
var (
	xrayRootPattern   = regexp.MustCompile(`^1-[0-9a-fA-F]{8}-[0-9a-fA-F]{24}$`)
	xrayParentPattern = regexp.MustCompile(`^[0-9a-fA-F]{16}$`)
	xraySampled       = map[string]bool{"0": true, "1": true, "?": true}
	// requestIDPattern bounds an API Gateway request ID ("JKJaXmPLvHcESHA=") used as a trace ID.
	requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:=+/-]{1,128}$`)
)

// maxTraceHeader bounds the X-Amzn-Trace-Id header read (X-Ray's own header is under 256 bytes;
// Lineage adds a few dozen per hop).
const maxTraceHeader = 1024

// xrayRoot returns the Root of an X-Amzn-Trace-Id header in X-Ray's format, or "" when the
// header is absent or not in that format (a Root of another shape, a Root given twice, a Parent
// or Sampled of another shape, a part that is not key=value). Only the Root is ever echoed.
func xrayRoot(header string) string {
	if header == "" || len(header) > maxTraceHeader {
		return ""
	}
	root := ""
	for part := range strings.SplitSeq(header, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok || k == "" {
			return ""
		}
		switch k {
		case "Root":
			if root != "" || !xrayRootPattern.MatchString(v) {
				return ""
			}
			root = v
		case "Parent":
			if !xrayParentPattern.MatchString(v) {
				return ""
			}
		case "Sampled":
			if !xraySampled[v] {
				return ""
			}
		}
	}
	return root
}

// traceID picks the request's trace ID: the Root of X-Amzn-Trace-Id when the header is in X-Ray's
// format (e.g. "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c;Parent=53995c3f42cd8ad8;Sampled=1"),
// else the API Gateway request ID from ctx, else a random 32-hex ID of our own. A header in any
// other shape is ignored, never echoed: the trace ID comes back in X-Trace-Id and problems, and is
// stored on the item and sent in alerts.
func traceID(ctx context.Context, amznTraceID string) string {
	if root := xrayRoot(amznTraceID); root != "" {
		return root
	}
	if id := requestIDFrom(ctx); requestIDPattern.MatchString(id) && !logging.ContainsSeed(id) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
