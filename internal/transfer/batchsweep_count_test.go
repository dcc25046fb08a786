package transfer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch whose invocation died after the send, included FAILED on the service's side and found
// by the sweep (Settle of each key), pages once (the ERROR line with "alert") and must reach the
// alarm on transfer_orchestration_failure_total once too, as a single transfer's sweep does
// (FailureCounter): the sweep answers no call that would count it. Once per batch, not per key,
// with the code of the page; a retry that settles a key inline counts its own answer instead.
func TestBatchServiceSideFailureFoundBySweepCountsOnce(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		codes []string
		code  string
	}{
		{[]string{"tx_failed", "op_success", "op_bad_auth", "op_success"}, transfer.CodeServiceSideFailure},
		{[]string{"tx_failed", "op_underfunded", "op_success", "op_success"}, transfer.CodeVaultUnderfunded},
		{[]string{"tx_bad_auth"}, transfer.CodeServiceSideFailure},
		{[]string{"tx_failed", "op_success", "op_no_trust", "op_success"}, ""},
	} {
		t.Run(c.codes[len(c.codes)-1]+"/"+c.code, func(t *testing.T) {
			h, logs := pagingHarness(t)
			rep := &counted{}
			h.orch.Observer = rep
			keys := []string{"sweep-count-1", "sweep-count-2", "sweep-count-3"}
			b, _ := forgedBatch(t, h, keys...)
			h.ledger.failResult = func(env transfer.Envelope) bool { return env.InnerHash == b.Envelope.InnerHash }
			h.ledger.failCodes = c.codes
			h.ledger.sendToNetwork(b.Envelope)
			h.clock.Advance(6 * time.Second)
			for _, k := range keys {
				if _, err := h.orch.Settle(ctx, h.item(t, k)); err != nil {
					t.Fatalf("Settle %s: %v", k, err)
				}
			}
			pages := logs.alerts(t)
			if c.code == "" {
				if len(pages) != 0 || len(rep.codes) != 0 {
					t.Fatalf("a destination's failure: pages %v, counted %v; want neither", pages, rep.codes)
				}
				return
			}
			if len(pages) != 1 {
				t.Fatalf("pages = %v, want one for the batch", pages)
			}
			if got := rep.failures(c.code); got != 1 || len(rep.codes) != 1 {
				t.Fatalf("failures counted with code %s = %d (counted %v), want 1 for the batch: the sweep's page must reach the alarm once", c.code, got, rep.codes)
			}
		})
	}
}
