package reconcile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An operator resolving a batched key by hash, whose batch the ledger included FAILED, is refused;
// the refusal says what the sweep then does with this key, which its own operation decides
// (transfer.JudgeOperation), not the batch's failure as a whole (transfer.SourceShortfall): a key
// whose operation succeeded beside a neighbour's op_no_trust is queued again, not stored as a
// rejection; a key whose own operation failed op_no_trust beside the vault's op_underfunded is a
// stored rejection, not released. Told otherwise, the operator tells the client something false.
func TestResolveRefusalOfFailedBatchSaysWhatTheSweepDoesWithTheKey(t *testing.T) {
	for _, c := range []struct {
		name  string
		codes []string
		index int
		says  string // what the refusal must say the sweep does
		never string
	}{
		{"neighbour failed", []string{"tx_failed", "op_no_trust", "op_success"}, 1, "queue", "store the rejection"},
		{"own rejection beside a shortfall", []string{"tx_failed", "op_underfunded", "op_no_trust"}, 1, "rejection", "releases the key"},
		{"own rejection", []string{"tx_failed", "op_success", "op_no_trust"}, 1, "rejection", "releases the key"},
		{"shortfall", []string{"tx_failed", "op_underfunded", "op_success"}, 1, "queue", "store the rejection"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			b, recs := f.putBatch(t, "batch-key-0", "batch-key-1")
			f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash,
				Ledger: 80, ResultCodes: c.codes}
			rec := recs[c.index]
			payload := `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + b.Envelope.InnerHash + `","operator":"alice"}`
			answer, err := f.svc.Answer(invocation("req-1"), json.RawMessage(payload))
			p, ok := answer.(*reconcile.Problem)
			if !ok || err != nil || p.Code != reconcile.CodeTransactionFailed {
				t.Fatalf("answer %+v %v, want the TRANSACTION_FAILED refusal", answer, err)
			}
			if !strings.Contains(p.Detail, c.says) || strings.Contains(p.Detail, c.never) {
				t.Fatalf("the refusal says %q; want it to say %q, never %q", p.Detail, c.says, c.never)
			}
			// What the sweep does, which the refusal must have said.
			s, err := f.orch.Settle(context.Background(), rec)
			if err != nil {
				t.Fatal(err)
			}
			want := transfer.ResolvedRequeued
			if c.says == "rejection" {
				want = transfer.ResolvedFailed
			}
			if s.Resolution != want {
				t.Fatalf("Settle: %s, want %s", s.Resolution, want)
			}
		})
	}
}
