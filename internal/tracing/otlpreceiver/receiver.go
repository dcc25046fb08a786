// Package otlpreceiver is a local OTLP/HTTP trace receiver, the stand-in for X-Ray's OTLP endpoint
// in the tests and the local stack (never deployed). POST /v1/traces takes an
// ExportTraceServiceRequest in protobuf (gzip or not), as go.opentelemetry.io/otel's otlptracehttp
// exporter sends it, decodes it with go.opentelemetry.io/proto/otlp and keeps its spans, and
// answers an empty ExportTraceServiceResponse (OTLP specification, "OTLP/HTTP"); GET /v1/traces
// lists the spans kept as JSON, newest last. Each request's method, path, headers and body (as
// received) are kept too, so a test can check its SigV4 signature. It checks no signature itself.
package otlpreceiver

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	"google.golang.org/protobuf/proto"
)

// Path is where exporters send traces (the OTLP/HTTP default path).
const Path = "/v1/traces"

// Limits: what one request may carry, and how much is kept (the local stack runs for hours).
const (
	MaxBody     = 4 << 20
	MaxSpans    = 10_000
	MaxRequests = 100
)

// Span is one received span, its IDs in lowercase hex as on the wire's bytes.
type Span struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId,omitempty"`
	Name         string `json:"name"`
	// Kind is the OTLP enum's name without its prefix: SERVER, CLIENT, INTERNAL, ...
	Kind string `json:"kind"`
	// Status is UNSET, OK or ERROR, with its message.
	Status        string            `json:"status"`
	StatusMessage string            `json:"statusMessage,omitempty"`
	Start         time.Time         `json:"start"`
	End           time.Time         `json:"end"`
	Attributes    map[string]string `json:"attributes,omitempty"`
	// Resource holds the resource's attributes (service.name, cloud.region, ...); Scope the
	// instrumentation scope's name.
	Resource map[string]string `json:"resource,omitempty"`
	Scope    string            `json:"scope"`
}

// XRayTraceID is the span's trace ID in X-Ray's form, 1-<8 hex>-<24 hex>.
func (s Span) XRayTraceID() string { return XRayTraceID(s.TraceID) }

// XRayTraceID writes a 32-hex-digit trace ID in X-Ray's form (X-Ray Developer Guide, "Tracing
// header"); another length is returned as it is.
func XRayTraceID(hexID string) string {
	if len(hexID) != 32 {
		return hexID
	}
	return "1-" + hexID[:8] + "-" + hexID[8:]
}

// Request is one POST as received: the body before any decompression.
type Request struct {
	Method string
	Path   string
	Host   string
	Header http.Header
	Body   []byte
}

// Receiver keeps what was posted; the zero value is not usable, New is.
type Receiver struct {
	mu       sync.Mutex
	spans    []Span
	requests []Request
	changed  chan struct{} // closed and replaced on every change
}

// New returns an empty Receiver.
func New() *Receiver { return &Receiver{changed: make(chan struct{})} }

// ServeHTTP serves POST and GET on Path; anything else is 404 or 405. A body that is not an
// ExportTraceServiceRequest is 400 and keeps nothing.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != Path {
		http.NotFound(w, req)
		return
	}
	switch req.Method {
	case http.MethodPost:
		r.post(w, req)
	case http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"spans": r.Spans()})
	default:
		w.Header().Set("Allow", "GET, POST")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (r *Receiver) post(w http.ResponseWriter, req *http.Request) {
	raw, err := io.ReadAll(io.LimitReader(req.Body, MaxBody+1))
	if err != nil || len(raw) > MaxBody {
		http.Error(w, "body unreadable or over 4 MiB", http.StatusRequestEntityTooLarge)
		return
	}
	spans, err := Decode(raw, req.Header.Get("Content-Encoding"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	r.requests = keepLast(append(r.requests, Request{Method: req.Method, Path: req.URL.Path, Host: req.Host,
		Header: req.Header.Clone(), Body: raw}), MaxRequests)
	r.spans = keepLast(append(r.spans, spans...), MaxSpans)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func keepLast[T any](s []T, n int) []T {
	if len(s) <= n {
		return s
	}
	return append([]T(nil), s[len(s)-n:]...)
}

// Decode reads an ExportTraceServiceRequest in protobuf, gunzipping it first when encoding is
// "gzip", into its spans.
func Decode(body []byte, encoding string) ([]Span, error) {
	switch encoding {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("otlpreceiver: gzip: %w", err)
		}
		if body, err = io.ReadAll(io.LimitReader(zr, 8*MaxBody)); err != nil {
			return nil, fmt.Errorf("otlpreceiver: gzip: %w", err)
		}
	default:
		return nil, fmt.Errorf("otlpreceiver: Content-Encoding %q is not gzip", encoding)
	}
	var msg coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &msg); err != nil {
		return nil, fmt.Errorf("otlpreceiver: not an ExportTraceServiceRequest: %w", err)
	}
	var out []Span
	for _, rs := range msg.GetResourceSpans() {
		res := attributes(rs.GetResource().GetAttributes())
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				kind := s.GetKind().String()
				if len(kind) > len("SPAN_KIND_") {
					kind = kind[len("SPAN_KIND_"):]
				}
				status := s.GetStatus().GetCode().String()
				if len(status) > len("STATUS_CODE_") {
					status = status[len("STATUS_CODE_"):]
				}
				out = append(out, Span{
					TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					ParentSpanID: hex.EncodeToString(s.GetParentSpanId()), Name: s.GetName(), Kind: kind,
					Status: status, StatusMessage: s.GetStatus().GetMessage(),
					Start:      time.Unix(0, int64(s.GetStartTimeUnixNano())).UTC(),
					End:        time.Unix(0, int64(s.GetEndTimeUnixNano())).UTC(),
					Attributes: attributes(s.GetAttributes()), Resource: res, Scope: ss.GetScope().GetName(),
				})
			}
		}
	}
	return out, nil
}

// attributes flattens OTLP key-values to strings (arrays as JSON-ish lists).
func attributes(kvs []*commonpb.KeyValue) map[string]string {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = value(kv.GetValue())
	}
	return m
}

func value(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *commonpb.AnyValue_ArrayValue:
		var parts []string
		for _, e := range x.ArrayValue.GetValues() {
			parts = append(parts, value(e))
		}
		b, _ := json.Marshal(parts)
		return string(b)
	case *commonpb.AnyValue_BytesValue:
		return hex.EncodeToString(x.BytesValue)
	}
	return ""
}

// Spans returns a copy of the spans kept, in the order received.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Requests returns a copy of the requests kept, in the order received.
func (r *Receiver) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Request(nil), r.requests...)
}

// Wait returns the spans once cond holds for them, or ctx's error when it ends first. It never
// polls: every POST wakes it.
func (r *Receiver) Wait(ctx context.Context, cond func([]Span) bool) ([]Span, error) {
	for {
		r.mu.Lock()
		spans, ch := append([]Span(nil), r.spans...), r.changed
		r.mu.Unlock()
		if cond(spans) {
			return spans, nil
		}
		select {
		case <-ctx.Done():
			return spans, ctx.Err()
		case <-ch:
		}
	}
}
