package wiring

import (
	"log/slog"
	"os"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// Init is the start-up every function shares (functions/*/main.go): a JSON logger on standard
// output that redacts secret seeds, and tracing configured (TRACING: X-Ray by default, OpenTelemetry
// or off; internal/tracing). A step that fails calls Fatal: it logs
// the step and the error and exits 1, which Lambda reports as an init failure, so a misconfigured
// function never takes an invocation.
type Init struct {
	Logger *slog.Logger
	// exit ends the process; os.Exit except in tests.
	exit func(code int)
}

// Begin makes the logger at the level of AWS_LAMBDA_LOG_LEVEL (LogLevel) and configures tracing
// (tracing.Configure: an invalid TRACING, or TRACING=otel without its region or credentials); a
// failure is Fatal.
func Begin() *Init {
	level, known := LogLevel(os.Getenv)
	in := &Init{Logger: logging.New(os.Stdout, level), exit: os.Exit}
	if !known {
		in.Logger.Warn("AWS_LAMBDA_LOG_LEVEL is not TRACE, DEBUG, INFO, WARN, ERROR or FATAL; logging at INFO",
			"value", logging.Clip(os.Getenv(envLogLevel), 16))
	}
	if err := tracing.Configure(os.Getenv, in.Logger); err != nil {
		in.Fatal("tracing configuration", err)
	}
	return in
}

// envLogLevel is set by Lambda from the function's LoggingConfig.ApplicationLogLevel when the
// log format is JSON (the template's Globals); unset elsewhere (tests, the local stack).
const envLogLevel = "AWS_LAMBDA_LOG_LEVEL"

// LogLevel is the functions' log level: AWS_LAMBDA_LOG_LEVEL's (logging.LambdaLevel), so the
// functions do not build lines Lambda would drop, or INFO when it is unset; known is false when
// it is set to something else (INFO then, and Begin says so). The EMF metrics are not logs: they
// are written whatever the level (internal/metrics).
func LogLevel(getenv func(string) string) (level slog.Level, known bool) {
	v := getenv(envLogLevel)
	if v == "" {
		return slog.LevelInfo, true
	}
	return logging.LambdaLevel(v)
}

// Fatal logs what failed (step names the start-up step, e.g. "invalid configuration") with err,
// then exits 1.
func (in *Init) Fatal(step string, err error) {
	in.Logger.Error(step, "err", err)
	in.exit(1)
}

// Check is Fatal with step when err is not nil.
func (in *Init) Check(step string, err error) {
	if err != nil {
		in.Fatal(step, err)
	}
}
