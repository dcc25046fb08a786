package wiring

import (
	"log/slog"
	"os"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
)

// Init is the start-up every function shares (functions/*/main.go): a JSON logger on standard
// output that redacts secret seeds, and X-Ray configured. A step that fails calls Fatal: it logs
// the step and the error and exits 1, which Lambda reports as an init failure, so a misconfigured
// function never takes an invocation.
type Init struct {
	Logger *slog.Logger
	// exit ends the process; os.Exit except in tests.
	exit func(code int)
}

// Begin makes the logger and configures X-Ray (tracing.Configure); a failure is Fatal.
func Begin() *Init {
	in := &Init{Logger: logging.New(os.Stdout, slog.LevelInfo), exit: os.Exit}
	if err := tracing.Configure(); err != nil {
		in.Fatal("X-Ray configuration", err)
	}
	return in
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
