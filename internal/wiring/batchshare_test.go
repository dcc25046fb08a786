package wiring_test

import (
	"io"
	"log/slog"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// TransfersPerTransaction above 1 whose batches BATCH_OPS_PER_LEDGER's share makes 1 (4 channels
// x (1 + 1) slots of 8) still runs its events as batches: the event source still gives an
// invocation k x BATCH_SIZE messages (template.yaml), and only transfer.RunQueuedBatch bounds them
// to k transactions; the one-transfer handler would run all of them at once.
func TestBatchesTheShareMakesOneStillRunAsAnEventsBatches(t *testing.T) {
	r := newLimitRig(t, "", "4")
	env := map[string]string{"BATCH_SIZE": "10", "CHANNEL_COUNT": "4", "BATCH_OPS_PER_LEDGER": "8", "SUBMITTER_TRANSACTIONS_PER_INVOCATION": "2"}
	svc, err := wiring.Build(wiring.Deps{Config: r.cfg, Getenv: func(k string) string { return env[k] }, Dynamo: r.db,
		Keys: r.keys, Clock: r.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if s := svc.Orchestrator.Settings(); s.BatchSize != 1 || s.TransactionsPerInvocation != 2 {
		t.Fatalf("Settings: BatchSize %d, TransactionsPerInvocation %d; want 1 (the share) and 2", s.BatchSize, s.TransactionsPerInvocation)
	}
	if svc.Orchestrator.Batches == nil {
		t.Error("the orchestrator has no Batches: SubmitterHandler runs every message of a k x BATCH_SIZE event alone, unbounded")
	}
	env["BATCH_SIZE"] = "1"
	svc, err = wiring.Build(wiring.Deps{Config: r.cfg, Getenv: func(k string) string { return env[k] }, Dynamo: r.db,
		Keys: r.keys, Clock: r.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil || svc.Orchestrator.Batches != nil {
		t.Errorf("BATCH_SIZE 1: Batches %v, %v; want none, the one-transfer path", svc.Orchestrator.Batches, err)
	}
}
