package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An expired claim of a batched key whose batch item cannot be tied to its operation (missing, or
// holding another key at its index) is parked in_doubt by the sweep's Settle, as takeOverBatched
// and ErrBatchMismatch promise ("left for an operator"): nothing is sent or judged, but the key
// enters the in-doubt list, its gauge and alarm, where an operator's tools reach it. Left
// in_flight, it would stay there for ever: no judge can read its batch, the operator's list shows
// only in_doubt items and resolve refuses anything else.
func TestABatchedKeyWhoseBatchCannotBeReadIsParkedForAnOperator(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	now := h.clock.Now()
	var attached []transfer.Record
	taken := takenByDeadSubmitter(t, h, "orphan-0001", "orphan-0002")
	env := transfer.Envelope{XDR: "xdr-batch", InnerHash: fmt.Sprintf("%064x", 0xbad), MaxTime: now.Add(time.Minute).Unix(),
		SubmittedLedger: 100, Channel: "GCHANNEL", FeeStroops: 300}
	for i, rec := range taken {
		attached = append(attached, transfer.BatchAttached(rec, env, transfer.BatchRef{Index: i, Size: len(taken)}, now))
	}
	// The keys name a batch whose item the store does not hold.
	if err := transfer.ReplaceAllItems(ctx, h.store, taken, attached); err != nil {
		t.Fatalf("attach: %v", err)
	}
	h.clock.Advance(5 * time.Second)
	cur, err := h.store.Get(ctx, attached[0].StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	st, err := h.orch.Settle(ctx, cur)
	if err != nil && !errors.Is(err, transfer.ErrBatchMismatch) {
		t.Fatalf("Settle: %v", err)
	}
	got, gerr := h.store.Get(ctx, cur.StoreKey)
	if gerr != nil || got.Status != transfer.StatusInDoubt || st.Resolution != transfer.ResolvedInDoubt ||
		got.Envelope == nil || got.Envelope.InnerHash != env.InnerHash || got.Batch == nil {
		t.Fatalf("Settle = %+v, %v; the key is %s (%+v): an expired batched key its batch cannot judge must be parked in_doubt for an operator",
			st.Resolution, err, got.Status, got.Envelope)
	}
	if n := h.ledger.sent(env.InnerHash); n != 0 {
		t.Fatalf("the unreadable batch was sent %d times", n)
	}
}
