package transfer_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// panickyLedger panics where a bug would: in Done of the batch envelope doneHash (a batch's
// per-key judges run it in their own goroutines), with a value that holds a secret; and in Prepare
// of a transfer to wallet, with a runtime error.
type panickyLedger struct {
	*fakeLedger
	fb     *fakeBatches
	wallet string
	calm   bool // no more panics
}

const panicSecret = "SCZANGBA5YHTNYVVV4C3U252E2B6P6F5T3U6MM63WBSBZATAQI3EBTQ4"

func (p *panickyLedger) Done(ctx context.Context, env transfer.Envelope) {
	// The batch fake appends its hashes under the ledger's lock, from the batch's goroutines.
	p.fb.l.mu.Lock()
	first := len(p.fb.hashes) > 0 && env.InnerHash == p.fb.hashes[0]
	p.fb.l.mu.Unlock()
	if !p.calm && first {
		panic("signing with " + panicSecret + " failed")
	}
	p.fakeLedger.Done(ctx, env)
}

func (p *panickyLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	if !p.calm && req.WalletAddress == p.wallet {
		var s []int
		_ = s[len(req.WalletAddress)] // a runtime error: index out of range
	}
	return p.fakeLedger.Prepare(ctx, req, terms)
}

// A panic in one of RunQueuedBatch's goroutines fails only its own messages, never the invocation:
// here a batch's per-key judge panics (its goroutine is one of the batch's own) and a message
// running alone panics; each of their messages is answered DeliveryRetry INTERNAL_ERROR (delivered
// again, its item deciding what the next delivery does), the message beside them is paid, and the
// log holds the panic's type and stack but no value that is not a runtime error (it could hold a
// secret).
func TestAPanicInABatchRunFailsOnlyItsMessages(t *testing.T) {
	for _, serial := range []bool{false, true} {
		h, fb, msgs := batchHarness(t, 10, 4)
		h.orch.Serial = serial
		logs := &logLines{}
		h.orch.Logger = slog.New(slog.NewJSONHandler(logs, nil))
		pl := &panickyLedger{fakeLedger: h.ledger, fb: fb, wallet: walletN(2)}
		h.orch.Ledger = pl
		fb.refuse[walletN(2)] = "op_no_trust" // runs alone, and panics in Prepare
		fb.refuse[walletN(3)] = "op_no_trust" // runs alone and is paid
		answers := h.orch.RunQueuedBatch(context.Background(), msgs)
		for i, ans := range answers {
			rec := h.batchItem(t, i)
			if i == 3 {
				if ans.Delivery != transfer.DeliveryDone || ans.Err != nil || rec.Status != transfer.StatusReplayable {
					t.Fatalf("serial %v: the message beside the panics: %+v; %+v", serial, ans, rec)
				}
				continue
			}
			if ans.Delivery != transfer.DeliveryRetry || problemCode(ans.Err) != transfer.CodeInternalError {
				t.Fatalf("serial %v: message %d of a run that panicked: %+v", serial, i, ans)
			}
		}
		out := logs.buf.String()
		if strings.Contains(out, panicSecret) {
			t.Fatalf("serial %v: the log holds the panic's secret value:\n%s", serial, out)
		}
		if strings.Count(out, `"panicType":"string"`) != 1 || strings.Count(out, `"panicType":"runtime.boundsError"`)+strings.Count(out, "assignment to entry in nil map") != 1 ||
			!strings.Contains(out, "batchpanic_test.go") {
			t.Fatalf("serial %v: the log should name each panic once, with its stack:\n%s", serial, out)
		}
		// The next deliveries, once the panicking runs' leases ended: the batch landed before its
		// judge panicked, so its keys are settled from that landing (never paid again), and the
		// message alone is paid.
		pl.calm = true
		h.clock.Advance(2 * transfer.DefaultSettings().Timeout)
		for i := range 3 {
			ans, err := h.orch.RunQueued(context.Background(), msgs[i])
			if rec := h.batchItem(t, i); ans == transfer.DeliveryRetry || rec.Status != transfer.StatusReplayable || (i < 2) != (rec.Batch != nil) {
				t.Fatalf("serial %v: the next delivery of message %d: %s, %v; %+v", serial, i, ans, err, rec)
			}
		}
		if n := h.ledger.landedCount(); n != 3 {
			t.Fatalf("serial %v: %d transactions landed, want 3 (the batch and two alone)", serial, n)
		}
	}
}
