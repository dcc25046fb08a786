package transfer_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestViewNeverAnswersAReleasedTransferWithAnOlderSuccess: a key's second transfer goes in doubt
// and is released (its item deleted: nothing moved); until the stream writes its "released"
// record, GET must not answer the first transfer's success: the view carries no createdAt or
// claim, so the client polling for its second transfer reads "success" with a hash and believes
// it paid. GET answers for the key's newest incarnation or says it does not know (not found or
// pending), never an older one's outcome.
func TestViewFromAnEarlierTransfersRecordSaysWhichTransferItDescribes(t *testing.T) {
	h := newArchivingHarness(t)
	ctx := context.Background()
	key := transfer.StoreKey(wallet, "order-advrec-1")
	w := transfer.Wallet{Address: wallet}

	first, settled, _ := h.transferArchived(t, "order-advrec-1")
	h.clock.Advance(25 * time.Hour)
	h.store.Remove(key)

	// The second transfer of the key, in doubt.
	second := settled
	second.ClaimID, second.Status, second.ExpiresAt = "claim-advrec-2", transfer.StatusInDoubt, 0
	second.CreatedAt, second.UpdatedAt = h.clock.Now(), h.clock.Now()
	second.Result = &transfer.Result{Code: "TRANSFER_TIMEOUT"}
	h.store.Put(second)
	if v, err := h.orch.View(ctx, w, "order-advrec-1"); err != nil || v.Status != "pending" || !v.InDoubt {
		t.Fatalf("view of the second transfer in doubt = %+v, %v", v, err)
	}

	// Released: the item is deleted; the stream has not written its record yet.
	h.clock.Advance(time.Minute)
	h.store.Remove(key)
	// Until the release's own record is written (from the stream), or for good when a claim is
	// released unsent (no record), the key's newest record answers: it must say it is an earlier
	// transfer's (outside the window, claimed before the second), never pass for the second's.
	v, err := h.orch.View(ctx, w, "order-advrec-1")
	if err == nil && v.Status == "success" && v.TransactionHash == first.TransactionHash && (!v.OutsideReplayWindow || !v.CreatedAt.Equal(settled.CreatedAt) || !v.CreatedAt.Before(second.CreatedAt)) {
		t.Fatalf("view after the second transfer's release = %+v: the first transfer's success answers as if it were the second's", v)
	}
}
