package lambdatest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/lambdatest"
	"github.com/stellar-transfer/orchestrator/internal/tracing/otlpreceiver"
)

// TRACING=otel in the real bootstrap (internal/tracing, "The OpenTelemetry path"): the emulator
// hands the function the caller's X-Ray trace header, as Lambda does; the function's spans
// continue it and reach the OTLP receiver, signed for X-Ray, before the emulator has the answer.
func TestRIEApiFunctionOTel(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rec := otlpreceiver.New()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	const root, parent = "1-6b0f2740-0123456789abcdef01234567", "89abcdef01234567"
	// The emulator's classic mode drops the invocation's X-Amzn-Trace-Id (its Lambda Managed
	// Instances mode passes it on but runs only a bootstrap under /var/task or /opt), so a proxy
	// in front of its Runtime API adds the header as Lambda does (tracedRuntime).
	e := tracedRuntime(t, "api", s.env(nil, "TRACING=otel", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+srv.URL+otlpreceiver.Path),
		"Root="+root+";Parent="+parent+";Sampled=1")
	key := "rie-otel-00000001"
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"3","asset":"USDC"}`, s.wallet)
	post := apiEvent(t, "apigw-v2-request-post-transfer.json", "POST", "/transfers",
		map[string]string{"idempotency-key": key, "content-type": "application/json"}, body)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := e.Invoke(ctx, post)
	if err != nil {
		t.Fatal(err)
	}
	if resp, got := httpResponse(t, r); resp.StatusCode != 200 || !hexHash.MatchString(fmt.Sprint(got["transactionHash"])) {
		t.Fatalf("POST /transfers = %d %v", resp.StatusCode, got)
	}
	// Flushed before the answer: everything is here, in one export.
	spans := rec.Spans()
	if n := len(rec.Requests()); n != 1 {
		t.Fatalf("%d exports for one invocation, want 1", n)
	}
	byID := map[string]otlpreceiver.Span{}
	var inv otlpreceiver.Span
	for _, sp := range spans {
		byID[sp.SpanID] = sp
		if sp.Name == "ApiFunction" {
			inv = sp
		}
	}
	if inv.Kind != "SERVER" || inv.ParentSpanID != parent || inv.XRayTraceID() != root || inv.Resource["service.name"] != "ApiFunction" {
		t.Fatalf("invocation span %+v; want the child of %s in %s", inv, parent, root)
	}
	var names []string
	for _, sp := range spans {
		if sp.XRayTraceID() != root {
			t.Errorf("%s is in trace %s, want %s", sp.Name, sp.XRayTraceID(), root)
		}
		// Every span descends from the invocation.
		up := sp
		for up.SpanID != inv.SpanID {
			next, ok := byID[up.ParentSpanID]
			if !ok {
				t.Fatalf("%s does not descend from the invocation span", sp.Name)
			}
			up = next
		}
		names = append(names, sp.Name)
	}
	for _, want := range []string{"transfer.claim", "transfer.prepare", "transfer.send", "transfer.settle", "DynamoDB.PutItem", "HTTP POST"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s span: %v", want, names)
		}
	}
	auth := rec.Requests()[0].Header.Get("Authorization")
	if !regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=local/\d{8}/us-east-1/xray/aws4_request, SignedHeaders=\S+, Signature=[0-9a-f]{64}$`).MatchString(auth) {
		t.Errorf("export Authorization = %q", auth)
	}

	noSecretsIn(t, s, e.Log())

	// Without the proxy (no trace header, as the emulator runs it) TRACING=otel answers the same
	// and records nothing: no sampled trace to continue.
	plain := start(t, "api", s.env(nil, "TRACING=otel", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+srv.URL+otlpreceiver.Path), 29*time.Second)
	getEv := apiEvent(t, "apigw-v2-request-get-transfer.json", "GET", "/wallets/"+s.wallet+"/transfers/"+key, nil, "")
	if resp, view := httpResponse(t, invoke(t, plain, getEv)); resp.StatusCode != 200 || view["status"] != "success" {
		t.Fatalf("GET = %d %v", resp.StatusCode, view)
	}
	if n := len(rec.Requests()); n != 1 {
		t.Errorf("%d exports after an untraced invocation, want still 1", n)
	}
}

// tracedRuntime runs functions/<fn>'s bootstrap under the emulator behind a proxy of the Runtime
// API that stands in for Lambda's active tracing: every invocation the function receives carries
// Lambda-Runtime-Trace-Id: header. The bootstrap is started by a shell wrapper that points
// AWS_LAMBDA_RUNTIME_API at the proxy, the real address as the path's first segment.
func tracedRuntime(t *testing.T, fn string, env []string, header string) *lambdatest.Emulator {
	t.Helper()
	rieBin, boot := rie(t, fn)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		target, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		req, err := http.NewRequestWithContext(r.Context(), r.Method, "http://"+target+"/"+rest, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		if strings.HasSuffix(rest, "/runtime/invocation/next") {
			w.Header().Set("Lambda-Runtime-Trace-Id", header)
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	wrapper := filepath.Join(t.TempDir(), "bootstrap")
	script := "#!/bin/sh\nAWS_LAMBDA_RUNTIME_API=\"" + strings.TrimPrefix(proxy.URL, "http://") + "/$AWS_LAMBDA_RUNTIME_API\" exec " + boot + "\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := lambdatest.Start(ctx, lambdatest.Options{RIE: rieBin, Bootstrap: wrapper, Env: env, FunctionName: functions[fn], Timeout: 29 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", functions[fn], e.Log())
		}
	})
	return e
}

func TestRIETracingBadConfiguration(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	expectInitFailure(t, "api", s.env(nil, "TRACING=opentelemetry"), `"msg":"tracing configuration"`, "TRACING must be xray, otel or off")
	expectInitFailure(t, "api", s.env([]string{"AWS_REGION"}, "TRACING=otel"), `"msg":"tracing configuration"`, "TRACING=otel needs AWS_REGION")
}

// The init time of each function with TRACING=xray and TRACING=otel, side by side (README.md,
// "Tracing: X-Ray or OpenTelemetry"): the INIT REPORT of runs alternating between the two, each
// on a fresh emulator. Logged, not asserted.
func TestRIEInitByTracing(t *testing.T) {
	if testing.Short() {
		t.Skip("about 40 cold starts")
	}
	s := newStack(t)
	rec := otlpreceiver.New()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	cheap := map[string]any{
		"api":       apiEvent(t, "apigw-v2-request-get-transfer.json", "GET", "/wallets/"+s.wallet+"/transfers/none", nil, ""),
		"alert":     events.DynamoDBEvent{},
		"reconcile": map[string]string{"action": "list"},
		"submitter": events.SQSEvent{},
	}
	const rounds = 5
	var lines []string
	for _, fn := range []string{"api", "alert", "reconcile", "submitter"} {
		rieBin, boot := rie(t, fn)
		inits := map[string][]float64{}
		for range rounds {
			for _, mode := range []string{"xray", "otel"} {
				env := s.env(nil, "TRACING="+mode, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+srv.URL+otlpreceiver.Path)
				ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
				e, err := lambdatest.Start(ctx, lambdatest.Options{RIE: rieBin, Bootstrap: boot, Env: env, FunctionName: functions[fn], Timeout: 30 * time.Second})
				if err != nil {
					cancel()
					t.Fatal(err)
				}
				r := invoke(t, e, cheap[fn])
				d, ok := e.InitDuration()
				_ = e.Close()
				cancel()
				if r.Status != 200 || !ok {
					t.Fatalf("%s TRACING=%s: %d %s, INIT REPORT %v\n%s", fn, mode, r.Status, r.Body, ok, e.Log())
				}
				inits[mode] = append(inits[mode], float64(d.Microseconds())/1000)
			}
		}
		b := bootstrap[fn]
		lines = append(lines, fmt.Sprintf("%-18s arm64 %.1f MiB  init ms (median of %d) xray %.1f  otel %.1f   (xray %v; otel %v)",
			functions[fn], mib(b.armSize), rounds, median(inits["xray"]), median(inits["otel"]), inits["xray"], inits["otel"]))
	}
	t.Logf("init by tracing mode, this machine (linux/%s bootstraps):\n%s", runtime.GOARCH, strings.Join(lines, "\n"))
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
