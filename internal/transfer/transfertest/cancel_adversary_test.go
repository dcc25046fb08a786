package transfertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestCancelledItemIsNeverWrittenOver: a cancelled item's only successor is a new claim once its
// TTL ends (record.go, StatusCancelled: "nothing ever will be" built or sent). The store refuses,
// before writing, a cancelled item written from anything but queued, but takes any write from a
// cancelled item: a writer that read the cancelled item and took it (in_flight under a lease),
// requeued it, or settled it would succeed, and a taken cancelled item is built and sent. The
// orchestrator's writers check the status they read; the store, which holds them to the item's
// invariants, should hold this one as it holds the cancel's own (a Replace whose condition names
// a cancelled item is refused before the write).
func TestCancelledItemIsNeverWrittenOver(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const wallet = "GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3"
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1000.5", Asset: "USDC", Stroops: 10_005_000_000}
	queued := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, "final-0001"), ClaimID: "claim-queued", Status: transfer.StatusQueued,
		Fingerprint: req.Fingerprint(), Request: req, ClientKey: "final-0001", Version: 1, CreatedAt: t0, UpdatedAt: t0, Async: true,
	}
	s := transfertest.NewStore()
	if _, won, err := s.Claim(ctx, queued, t0); err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	cancelled := transfer.Cancelled(queued, transfer.Canceller{Caller: "ops", RequestID: "req-1"}, t0.Add(time.Second), time.Hour)
	if err := s.Replace(ctx, cancelled, transfer.Expect(queued)); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	cancelled, _ = s.Item(cancelled.StoreKey)

	taken := cancelled
	taken.Status, taken.LeaseOwner, taken.LeaseExpiresAt, taken.ExpiresAt, taken.Audit = transfer.StatusInFlight, "submitter-1", t0.Add(time.Minute), 0, nil
	taken.Version++
	requeued := transfer.Requeued(cancelled, t0.Add(2*time.Second))
	for name, next := range map[string]transfer.Record{"taken (in_flight)": taken, "requeued": requeued} {
		err := s.Replace(ctx, next, transfer.Expect(cancelled))
		if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("a cancelled item %s: err=%v, want a refusal before the write", name, err)
		}
		if got, _ := s.Item(cancelled.StoreKey); got.Status != transfer.StatusCancelled {
			t.Fatalf("the cancelled item became %s", got.Status)
		}
	}
}
