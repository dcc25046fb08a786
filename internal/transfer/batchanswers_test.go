package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batched key rejected by its own operation names that operation's index in every answer that
// names the landed transaction (doc.go, "Batches"): the first answer (a synchronous retry that
// takes the key over and judges it), the POST's replay, the GET's stored problem and a DELETE's
// TRANSFER_NOT_CANCELLABLE; a key requeued by the same transaction names nothing.
func TestBatchedRejectionNamesItsOperationInEveryAnswer(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	b, _ := forgedBatch(t, h, "opidx-0001", "opidx-0002", "opidx-0003")
	h.ledger.failResult = func(env transfer.Envelope) bool { return env.InnerHash == b.Envelope.InnerHash }
	h.ledger.failCodes = []string{"tx_failed", "op_success", "op_no_trust", "op_success"}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second) // the lease ends; a ledger closes with the batch in it

	rejection := func(what string, err error, replayed bool) {
		t.Helper()
		var rej *transfer.RejectedError
		if !errors.As(err, &rej) {
			t.Fatalf("%s: %v, want a stored rejection", what, err)
		}
		p := rej.Problem()
		if p.TransactionHash != b.Envelope.InnerHash || p.OperationIndex == nil || *p.OperationIndex != 1 || p.Replayed != replayed {
			t.Fatalf("%s: %+v (operationIndex %v); want the batch's hash %s, operation 1, replayed %v", what, p, p.OperationIndex, b.Envelope.InnerHash, replayed)
		}
	}
	_, err := h.orch.Transfer(ctx, input("opidx-0002", "5"))
	rejection("the first answer", err, false)
	_, err = h.orch.Transfer(ctx, input("opidx-0002", "5"))
	rejection("the POST's replay", err, true)

	v, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "opidx-0002")
	if err != nil || v.Status != "error" || v.Problem == nil || v.Problem.OperationIndex == nil || *v.Problem.OperationIndex != 1 ||
		v.OperationIndex == nil || *v.OperationIndex != 1 {
		t.Fatalf("GET: %+v, %v; want the problem and the view naming operation 1", v, err)
	}
	_, err = h.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, "opidx-0002", transfer.Canceller{})
	var nc *transfer.NotCancellableError
	if !errors.As(err, &nc) || nc.TransactionHash != b.Envelope.InnerHash || nc.OperationIndex == nil || *nc.OperationIndex != 1 ||
		nc.Problem().OperationIndex == nil {
		t.Fatalf("DELETE: %v (%+v); want TRANSFER_NOT_CANCELLABLE naming operation 1", err, nc)
	}

	// The neighbour is requeued by the same transaction: nothing of it landed, so no answer names
	// the transaction or an operation.
	s, err := h.orch.Settle(ctx, h.item(t, "opidx-0001"))
	if err != nil || s.Resolution != transfer.ResolvedRequeued {
		t.Fatalf("Settle of the neighbour: %+v, %v", s, err)
	}
	if v, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "opidx-0001"); err != nil || v.OperationIndex != nil || v.TransactionHash != "" {
		t.Fatalf("the requeued neighbour's view: %+v, %v", v, err)
	}
}
