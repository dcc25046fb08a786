package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An operator resolving an in-doubt transfer by hash, whose envelope the ledger included FAILED
// because the vault lacked the asset (op_underfunded), is refused: only SUCCESS is resolved by
// hash. The refusal tells the operator what will happen next; it must say what the sweep does
// with a shortfall (release the key: transfer.SourceShortfall), not that it stores a rejection,
// which would have the operator tell the client its transfer failed for good.
func TestResolveRefusalOfShortfallSaysTheKeyIsReleased(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-short1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.ledger.landed[rec.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: rec.Envelope.InnerHash,
		Ledger: 80, ResultCodes: []string{"tx_failed", "op_underfunded"}}
	payload := `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + rec.Envelope.InnerHash + `","operator":"alice"}`
	answer, err := f.svc.Answer(invocation("req-1"), json.RawMessage(payload))
	p, ok := answer.(*reconcile.Problem)
	if !ok || err != nil || p.Code != reconcile.CodeTransactionFailed {
		t.Fatalf("answer %+v %v, want the TRANSACTION_FAILED refusal", answer, err)
	}

	// What the sweep then does with it.
	if _, err := f.svc.Sweep(context.Background()); err != nil {
		t.Fatalf("sweep: %v", err)
	}
	_, gerr := f.store.Get(context.Background(), rec.StoreKey)
	released := errors.Is(gerr, transfer.ErrNotFound)
	if released && strings.Contains(p.Detail, "store the rejection") {
		t.Fatalf("the refusal said %q, but the sweep released the key (VAULT_UNDERFUNDED): the operator was told something false", p.Detail)
	}
	if !released {
		t.Fatalf("the sweep left %v: a shortfall should be released", gerr)
	}
}
