package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestCancelledItemIsNeverWrittenOver holds the DynamoDB store to what the in-memory store's
// test of the same name asks (internal/transfer/transfertest): a cancelled item is final until
// its TTL ends, so a Replace whose condition names a cancelled item (a take under a lease, a
// requeue) is refused before any request, as a Replace writing a cancelled item from anything
// but queued already is. Today the write is sent and applies.
func TestCancelledItemIsNeverWrittenOver(t *testing.T) {
	ctx := context.Background()
	f := minidynFixture(t)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const wallet = "GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3"
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1000.5", Asset: "USDC", Stroops: 10_005_000_000}
	queued := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, "final-0001"), ClaimID: "claim-queued", Status: transfer.StatusQueued,
		Fingerprint: req.Fingerprint(), Request: req, ClientKey: "final-0001", Version: 1, CreatedAt: t0, UpdatedAt: t0, Async: true,
	}
	if _, won, err := f.store.Claim(ctx, queued, t0); err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	cancelled := transfer.Cancelled(queued, transfer.Canceller{Caller: "ops", RequestID: "req-1"}, t0.Add(time.Second), time.Hour)
	if err := f.store.Replace(ctx, cancelled, transfer.Expect(queued)); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	cancelled, err := f.store.Get(ctx, cancelled.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	taken := cancelled
	taken.Status, taken.LeaseOwner, taken.LeaseExpiresAt, taken.ExpiresAt, taken.Audit = transfer.StatusInFlight, "submitter-1", t0.Add(time.Minute), 0, nil
	taken.Version++
	err = f.store.Replace(ctx, taken, transfer.Expect(cancelled))
	if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
		t.Errorf("a cancelled item taken (in_flight): err=%v, want a refusal before the write", err)
	}
	if got, err := f.store.Get(ctx, cancelled.StoreKey); err != nil || got.Status != transfer.StatusCancelled {
		t.Errorf("the cancelled item became %s (%v)", got.Status, err)
	}
}
