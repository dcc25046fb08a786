package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"regexp"
	"strings"
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

// traceIDPattern bounds what is echoed from a client header into responses and logs.
var traceIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:=+/-]{1,128}$`)

// traceID picks the request's trace ID: the Root= part of X-Amzn-Trace-Id (X-Ray, e.g.
// "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c;Parent=...;Sampled=1"), else the API Gateway request
// ID from ctx, else a random 32-hex ID. Values with unexpected characters are ignored.
func traceID(ctx context.Context, amznTraceID string) string {
	for part := range strings.SplitSeq(amznTraceID, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && strings.EqualFold(k, "Root") && traceIDPattern.MatchString(v) {
			return v
		}
	}
	if id := requestIDFrom(ctx); traceIDPattern.MatchString(id) {
		return id
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
