package wiring

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/logging"
)

func TestInitFatalLogsTheStepAndExits(t *testing.T) {
	var out bytes.Buffer
	code := -1
	in := &Init{Logger: logging.New(&out, slog.LevelInfo), exit: func(c int) { code = c }}
	in.Check("signing keys", nil)
	if code != -1 || out.Len() != 0 {
		t.Fatalf("Check(nil) exited %d or logged %q", code, out.String())
	}
	in.Check("signing keys", errors.New("secret not found"))
	if code != 1 || !strings.Contains(out.String(), `"msg":"signing keys"`) || !strings.Contains(out.String(), "secret not found") {
		t.Fatalf("exit %d, log %q", code, out.String())
	}
}

func TestLogLevelFollowsLambda(t *testing.T) {
	for v, want := range map[string]slog.Level{
		"": slog.LevelInfo, "TRACE": logging.LevelTrace, "debug": slog.LevelDebug, "INFO": slog.LevelInfo,
		"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": logging.LevelFatal, "loud": slog.LevelInfo,
	} {
		got, known := LogLevel(func(k string) string {
			if k == "AWS_LAMBDA_LOG_LEVEL" {
				return v
			}
			return ""
		})
		if got != want || known != (v != "loud") {
			t.Errorf("AWS_LAMBDA_LOG_LEVEL=%q: level %v known %v, want %v", v, got, known, want)
		}
	}
}
