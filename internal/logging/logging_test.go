package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/logging"
)

func TestEveryLineCarriesRequestAndTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := logging.New(&buf, slog.LevelInfo).With("component", "test")
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-123"})
	ctx = logging.WithTraceHeader(ctx, "Root=1-5f84c7a9-1e2d3c4b5a69788796a5b4c3;Parent=53995c3f42cd8ad8;Sampled=1")
	log.InfoContext(ctx, "one", "k", "v")
	log.WithGroup("g").ErrorContext(ctx, "two")
	log.InfoContext(context.Background(), "no invocation")
	log.DebugContext(ctx, "below level")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), buf.String())
	}
	for i, line := range lines[:2] {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %d is not JSON: %v", i, err)
		}
		if m["requestId"] != "req-123" || m["xrayTraceId"] != "1-5f84c7a9-1e2d3c4b5a69788796a5b4c3" || m["component"] != "test" {
			t.Errorf("line %d = %v", i, m)
		}
	}
	if strings.Contains(lines[2], "requestId") || strings.Contains(lines[2], "xrayTraceId") {
		t.Errorf("a line without an invocation has IDs: %s", lines[2])
	}
}

func TestTraceID(t *testing.T) {
	for header, want := range map[string]string{
		"":                                  "",
		"Root=1-abc-def":                    "1-abc-def",
		"Parent=1;Root=1-abc-def;Sampled=0": "1-abc-def",
		"Sampled=1":                         "",
	} {
		ctx := context.Background()
		if header != "" {
			ctx = logging.WithTraceHeader(ctx, header)
		}
		if got := logging.TraceID(ctx); got != want {
			t.Errorf("TraceID(%q) = %q, want %q", header, got, want)
		}
	}
}

func TestNewRedactsSeedShapedValues(t *testing.T) {
	var b bytes.Buffer
	l := logging.New(&b, slog.LevelInfo)
	seed := keypair.MustRandom().Seed()
	notSeed := "S" + strings.Repeat("A", 55) // seed-shaped, bad checksum: an ordinary word
	l.Info("request", "idempotencyKey", "x"+seed+"0", "err", errors.New("bad field "+strings.ToLower(seed)), "n", 3, "word", notSeed)
	out := b.String()
	if strings.Contains(strings.ToUpper(out), seed) || strings.Count(out, "[redacted]") != 2 || !strings.Contains(out, `"n":3`) ||
		!strings.Contains(out, `"x[redacted]0"`) || !strings.Contains(out, notSeed) {
		t.Fatalf("log = %s", out)
	}
	if !logging.ContainsSeed("prefix"+seed) || logging.ContainsSeed(notSeed) || logging.Redact("short") != "short" {
		t.Fatal("ContainsSeed / Redact")
	}
}

// TestClipRedactsFirst: a seed that a clip would cut in two is redacted whole first; the cut
// falls on a UTF-8 boundary.
func TestClipRedactsFirst(t *testing.T) {
	seed := keypair.MustRandom().Seed()
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{strings.Repeat("x", 20) + seed + "tail", 40, strings.Repeat("x", 20) + "[redacted]tail"},
		{seed, 32, "[redacted]"},
		{strings.Repeat("x", 30) + strings.ToLower(seed), 35, strings.Repeat("x", 30) + "[reda…"},
		{"ééé", 3, "é…"},
		{"short", 10, "short"},
	} {
		if got := logging.Clip(c.in, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// Lambda's log-level filtering reads "level" and an RFC 3339 "timestamp"; TRACE and FATAL are
// named as Lambda names them, not as slog would (DEBUG-4, ERROR+4).
func TestLinesCarryLambdaLevelAndTimestamp(t *testing.T) {
	var buf bytes.Buffer
	l := logging.New(&buf, logging.LevelTrace)
	l.Log(context.Background(), logging.LevelTrace, "t")
	l.Log(context.Background(), logging.LevelFatal, "f")
	l.Warn("w")
	var want = []string{"TRACE", "FATAL", "WARN"}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		ts, _ := m["timestamp"].(string)
		if _, err := time.Parse(time.RFC3339Nano, ts); err != nil || m["time"] != nil {
			t.Errorf("line %s: timestamp %q (%v)", line, ts, err)
		}
		if m["level"] != want[i] {
			t.Errorf("line %s: level %v, want %s", line, m["level"], want[i])
		}
	}
	for v, want := range map[string]slog.Level{"TRACE": logging.LevelTrace, "fatal": logging.LevelFatal, " Warn ": slog.LevelWarn} {
		if got, ok := logging.LambdaLevel(v); !ok || got != want {
			t.Errorf("LambdaLevel(%q) = %v, %v", v, got, ok)
		}
	}
	if _, ok := logging.LambdaLevel("VERBOSE"); ok {
		t.Error("LambdaLevel(VERBOSE) is known")
	}
}
