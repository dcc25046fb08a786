package tracing_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// The tracing mode is process-wide (the SDKs keep globals), so no test here runs in parallel.

// emitter records the segments the X-Ray SDK would send to the daemon.
type emitter struct {
	mu   sync.Mutex
	segs []*xray.Segment
}

func (e *emitter) Emit(seg *xray.Segment) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.segs = append(e.segs, seg)
}
func (e *emitter) RefreshEmitterWithAddress(*net.UDPAddr) {}

func (e *emitter) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.segs)
}

// configure sets the mode from env (a missing key reads as unset) and fails the test on an error.
func configure(t *testing.T, env map[string]string) {
	t.Helper()
	if err := tracing.Configure(func(k string) string { return env[k] }, nil); err != nil {
		t.Fatal(err)
	}
}

func TestUntracedStepsAreNoOps(t *testing.T) {
	for _, mode := range []string{"", "xray", "otel", "off"} {
		t.Run("TRACING="+mode, func(t *testing.T) {
			env := otelEnv("http://127.0.0.1:1/v1/traces")
			env["TRACING"] = mode
			configure(t, env)
			ctx := context.Background()
			got, end := tracing.Observer{}.StartStep(ctx, "claim")
			end(errors.New("boom"))
			if got != ctx || xray.GetSegment(got) != nil || tracing.Traced(got) {
				t.Fatal("an untraced step changed the context")
			}
			// An instrumented HTTP client outside a trace neither fails nor panics.
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(204) }))
			defer srv.Close()
			resp, err := tracing.HTTPClient(srv.Client()).Get(srv.URL)
			if err != nil || resp.StatusCode != 204 {
				t.Fatalf("untraced request: %v %v", resp, err)
			}
			resp.Body.Close()
		})
	}
}

func TestTracedStepOpensASubsegment(t *testing.T) {
	configure(t, nil)
	em := &emitter{}
	ctx, err := xray.ContextWithConfig(context.Background(), xray.Config{Emitter: em})
	if err != nil {
		t.Fatal(err)
	}
	ctx, seg := xray.BeginSegment(ctx, "test")
	sctx, end := tracing.Observer{}.StartStep(ctx, "send")
	sub := xray.GetSegment(sctx)
	if sub == nil || sub.Name != "transfer.send" || sub.ParentSegment != seg {
		t.Fatalf("subsegment = %+v", sub)
	}
	end(errors.New("send failed"))
	if sub.InProgress || !sub.Fault {
		t.Fatalf("closed subsegment: in progress %v, fault %v", sub.InProgress, sub.Fault)
	}
	seg.Close(nil)
}

func TestHTTPClientKeepsTransportErrors(t *testing.T) {
	for _, mode := range []string{"xray", "otel", "off"} {
		t.Run("TRACING="+mode, func(t *testing.T) {
			env := otelEnv("http://127.0.0.1:1/v1/traces")
			env["TRACING"] = mode
			configure(t, env)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close() // connection refused from here on
			// Traced under otel (the client span is open when the dial fails); untraced otherwise,
			// as the X-Ray SDK would send a traced request's subsegment to a daemon.
			ctx := context.Background()
			if mode == "otel" {
				var end func(error)
				ctx, end = tracing.StartInvocation(tracedContext(sampledHeader), "fn")
				defer end(nil)
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr, nil)
			_, err = tracing.HTTPClient(nil).Do(req)
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "dial" {
				t.Fatalf("err = %v, want the *net.OpError of the dial", err)
			}
		})
	}
}
