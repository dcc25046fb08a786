package transfer_test

import (
	"context"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The page of a service-side failure is the alarm on transfer_orchestration_failure_total with its
// code (template.yaml, ServiceSideFailureAlarm); the ERROR line with "alert" is what the operator
// reads once paged, and no alarm reads the log. A call counts its own answer (Report), but the
// sweep and an operator's discard settle through Settle, which answers no call: an in_flight item
// whose invocation died after the send, found FAILED op_bad_auth by the sweep, released with only
// the log line, would page no one about the vault's broken signing. Settle counts the failure it
// pages, once; a retry that settles it inline counts it once too, as its own answer.
func TestServiceSideFailureFoundBySweepPagesOnce(t *testing.T) {
	ctx := context.Background()
	for _, codes := range [][]string{{"tx_failed", "op_bad_auth"}, {"tx_failed", "op_underfunded"}} {
		t.Run(codes[1], func(t *testing.T) {
			h, logs := pagingHarness(t)
			rep := &reports{}
			h.orch.Observer = rep
			rec := inDoubtFailed(t, h, "payout-sweep-1", codes)
			want := transfer.SourceShortfall(*rec.Envelope, transfer.Lookup{Status: transfer.LookupFailed, ResultCodes: codes})
			s, err := h.orch.Settle(ctx, rec)
			if err != nil || s.Resolution != transfer.ResolvedReleased {
				t.Fatalf("settle = %+v, %v; want released", s, err)
			}
			if pages := logs.alerts(t); len(pages) != 1 {
				t.Fatalf("pages = %v, want one alert line", pages)
			}
			if got := failures(rep, want); got != 1 {
				t.Fatalf("reports with code %s = %d (all: %+v), want 1: the sweep's page must reach the alarm", want, got, rep.all)
			}

			// Inline: the retry's own answer is the one count.
			h2, _ := pagingHarness(t)
			rep2 := &reports{}
			h2.orch.Observer = rep2
			inDoubtFailed(t, h2, "payout-sweep-2", codes)
			_, err = h2.orch.Transfer(ctx, input("payout-sweep-2", "1"))
			unavailable(t, err, want)
			if got := failures(rep2, want); got != 1 {
				t.Fatalf("inline: reports with code %s = %d (all: %+v), want 1", want, got, rep2.all)
			}
		})
	}
}

// failures counts r's reports with code.
func failures(r *reports, code string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, rep := range r.all {
		if rep.Code == code {
			n++
		}
	}
	return n
}
