package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func ptr[T any](v T) *T { return &v }

// The problem of a batched key's rejection names its operation's index on the wire, as a number,
// present for index 0 and absent for a transfer sent alone: the POST's answer (first or replayed),
// the GET's stored problem and a DELETE's TRANSFER_NOT_CANCELLABLE.
func TestBatchedRejectionNamesItsOperationIndex(t *testing.T) {
	hash := strings.Repeat("cd", 32)
	for _, idx := range []*int{nil, ptr(0), ptr(42)} {
		rej := &transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "failed", TransactionHash: hash,
			ResultCodes: []string{"tx_failed", "op_line_full"}, OperationIndex: idx}
		p := rej.Problem()
		f := newFixture(t)
		f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) { return transfer.Outcome{}, rej }
		f.svc.view = func(context.Context, string, string) (transfer.View, error) {
			return transfer.View{Status: "error", TransactionHash: hash, OperationIndex: idx, Problem: &p}, nil
		}
		f.svc.cancel = func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error) {
			return transfer.Cancellation{}, &transfer.NotCancellableError{State: "error", TransactionHash: hash, OperationIndex: idx}
		}
		bodies := map[string]string{}
		rec := f.do(post(goodBody(wallet), nil))
		bodies["POST"] = rec.Body.String()
		rec = f.do(req{"GET", "/wallets/" + wallet + "/transfers/" + goodKey, "", nil})
		var view map[string]json.RawMessage
		if err := json.Unmarshal(rec.Body.Bytes(), &view); err != nil {
			t.Fatalf("GET body %s: %v", rec.Body, err)
		}
		bodies["GET's error"] = string(view["error"])
		rec = f.do(req{"DELETE", "/wallets/" + wallet + "/transfers/" + goodKey, "", nil})
		bodies["DELETE"] = rec.Body.String()
		for what, body := range bodies {
			var m map[string]any
			if err := json.Unmarshal([]byte(body), &m); err != nil {
				t.Fatalf("%s body %s: %v", what, body, err)
			}
			got, ok := m["operationIndex"]
			switch {
			case idx == nil && ok:
				t.Errorf("%s of a transfer sent alone: operationIndex %v, want none", what, got)
			case idx != nil && got != float64(*idx):
				t.Errorf("%s: operationIndex %v, want %d: %s", what, got, *idx, body)
			}
			if m["transactionHash"] != hash {
				t.Errorf("%s: transactionHash %v, want %s", what, m["transactionHash"], hash)
			}
		}
	}
}
