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
			rep := &counted{}
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
			if got := rep.failures(want); got != 1 {
				t.Fatalf("failures counted with code %s = %d (reports %+v, counted %v), want 1: the sweep's page must reach the alarm", want, got, rep.all, rep.codes)
			}

			// Inline: the retry's own answer is the one count.
			h2, _ := pagingHarness(t)
			rep2 := &counted{}
			h2.orch.Observer = rep2
			inDoubtFailed(t, h2, "payout-sweep-2", codes)
			_, err = h2.orch.Transfer(ctx, input("payout-sweep-2", "1"))
			unavailable(t, err, want)
			if got := rep2.failures(want); got != 1 {
				t.Fatalf("inline: failures counted with code %s = %d (reports %+v, counted %v), want 1", want, got, rep2.all, rep2.codes)
			}
		})
	}
}

// counted is an Observer that is a FailureCounter: the calls' reports and the failures no call
// answered.
type counted struct {
	reports
	codes []string
}

func (c *counted) CountFailure(_ context.Context, _ transfer.Operation, _ transfer.Classification, code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.codes = append(c.codes, code)
}

// failures counts what the alarm on code's failures sees: the calls' reports with code and the
// failures counted alone.
func (c *counted) failures(code string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, rep := range c.all {
		if rep.Code == code {
			n++
		}
	}
	for _, got := range c.codes {
		if got == code {
			n++
		}
	}
	return n
}
