package devstack

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/tracing/otlpreceiver"
)

// TRACING=otel under the local stack: the API's and the functions' invocations are traced end to
// end and their spans reach the local receiver, listed at Info.TracesURL.
func TestTracingOTelExportsTheLocalInvocations(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TRACING": "otel"}
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		// Back to the default for the other tests of this process (their stacks trace nothing).
		_ = tracing.Configure(func(string) string { return "" }, nil)
	})
	if !strings.HasPrefix(s.Info.TracesURL, "http://127.0.0.1:") || !strings.HasSuffix(s.Info.TracesURL, otlpreceiver.Path) {
		t.Fatalf("TracesURL = %q", s.Info.TracesURL)
	}
	wallet := s.Info.Wallets[0].Account
	if r := post(t, s, "traced-00000001", withdraw(wallet, "1")); r.status != 200 {
		t.Fatalf("POST = %d %v", r.status, r.body)
	}
	if status, ferr, body := invoke(t, s, "ReconcileFunction", `{"action":"list"}`); status != 200 || ferr != "" {
		t.Fatalf("list = %d %s %v", status, ferr, body)
	}
	// Each invocation flushes as it ends, which may be just after its answer: wait for both.
	rec := s.ops.tracing.receiver
	spans, err := rec.Wait(t.Context(), func(spans []otlpreceiver.Span) bool {
		var api, reconcile bool
		for _, sp := range spans {
			api = api || sp.Name == "ApiFunction"
			reconcile = reconcile || sp.Name == "ReconcileFunction"
		}
		return api && reconcile
	})
	if err != nil {
		t.Fatalf("waiting for the spans: %v; got %+v", err, spans)
	}
	// GET on the receiver lists the same spans.
	resp, err := http.Get(s.Info.TracesURL)
	if err != nil {
		t.Fatal(err)
	}
	var listed struct{ Spans []otlpreceiver.Span }
	if err := json.NewDecoder(resp.Body).Decode(&listed); err != nil || len(listed.Spans) < len(spans) {
		t.Fatalf("GET %s: %d spans, %v", s.Info.TracesURL, len(listed.Spans), err)
	}
	resp.Body.Close()

	byID := map[string]otlpreceiver.Span{}
	for _, sp := range spans {
		byID[sp.SpanID] = sp
	}
	// Every span descends from an invocation span of its own trace, whose trace ID is X-Ray's.
	root := func(sp otlpreceiver.Span) otlpreceiver.Span {
		for {
			parent, ok := byID[sp.ParentSpanID]
			if !ok {
				return sp
			}
			if parent.TraceID != sp.TraceID {
				t.Fatalf("%s and its parent %s are in different traces", sp.Name, parent.Name)
			}
			sp = parent
		}
	}
	xrayID := regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)
	under := map[string]map[string]bool{}
	for _, sp := range spans {
		r := root(sp)
		if r.Kind != "SERVER" || (r.Name != "ApiFunction" && r.Name != "ReconcileFunction") || !xrayID.MatchString(r.XRayTraceID()) {
			t.Errorf("%s's root is %+v", sp.Name, r)
		}
		if under[r.Name] == nil {
			under[r.Name] = map[string]bool{}
		}
		under[r.Name][sp.Name] = true
	}
	for _, want := range []string{"transfer.claim", "transfer.prepare", "transfer.send", "transfer.settle", "DynamoDB.PutItem", "HTTP POST"} {
		if !under["ApiFunction"][want] {
			t.Errorf("no %s span under ApiFunction: %v", want, under["ApiFunction"])
		}
	}
	if !under["ReconcileFunction"]["DynamoDB.Query"] {
		t.Errorf("no DynamoDB.Query span under ReconcileFunction: %v", under["ReconcileFunction"])
	}
	// The exports were signed as X-Ray's endpoint wants them (the receiver does not check).
	for _, r := range rec.Requests() {
		if !strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=local/") ||
			!strings.Contains(r.Header.Get("Authorization"), "/us-east-1/xray/aws4_request") {
			t.Errorf("export Authorization = %q", r.Header.Get("Authorization"))
		}
	}
}

func TestNewTraceHeaderIsASampledXRayHeader(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	h := newTraceHeader(at)
	m := regexp.MustCompile(`^Root=1-([0-9a-f]{8})-[0-9a-f]{24};Parent=[0-9a-f]{16};Sampled=1$`).FindStringSubmatch(h)
	if m == nil || m[1] != "6b0f2740" {
		t.Fatalf("header %q, want Root=1-6b0f2740-...", h)
	}
	if newTraceHeader(at) == h {
		t.Error("two headers are the same")
	}
}
