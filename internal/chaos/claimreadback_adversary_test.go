package chaos

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Adversarial tests of a failed claim's read-back on the real store (the SDK's DynamoDB client,
// its standard retryer, a local DynamoDB) and the simulated network.

const (
	putItem = "DynamoDB_20120810.PutItem"
	getItem = "DynamoDB_20120810.GetItem"
)

// TestRealStoreClaimThatAppliedWithEveryAnswerLostIsTheCallersOwn. Rule: a claim whose PutItem
// applied but whose answer, and the answers of all the SDK's retries, were lost comes back as an
// error from Store.Claim though the write applied; the read-back finds the call's own ClaimID and
// the call carries on: one payment, a fresh 200, never a 503 or a wait on itself.
func TestRealStoreClaimThatAppliedWithEveryAnswerLostIsTheCallersOwn(t *testing.T) {
	r := quietRig(t)
	store, tr := r.storeLosing(t, func(op string, req map[string]any) fate {
		if isClaim(op, req) {
			return lose // the first applies; every retry fails its condition and is lost too
		}
		return pass
	})
	r.orch.Store = store
	out, err := r.orch.Transfer(context.Background(), r.input(0))
	sent, lost, _ := tr.counts()
	if lost[putItem] < 2 || sent[getItem] < 1 {
		t.Fatalf("PutItem sent %d, lost %d, GetItem sent %d: the test needs a claim that applied and failed, then a read-back", sent[putItem], lost[putItem], sent[getItem])
	}
	if err != nil || out.Replayed || out.TransactionHash == "" {
		t.Fatalf("transfer = %+v, %v; want this call's own fresh 200", out, err)
	}
	r.assertPaidOnce(t, 0, told{who: "caller", out: out})
}

// TestRealStoreFailedClaimAndReadNeverSayNothingWasSubmittedOfALandedTransfer. Rule (README,
// STORE_UNAVAILABLE): "nothing was submitted" only when the key was read back free. The first POST
// lands and its 200 is lost; the retry's claim and its read-back are both refused (DynamoDB
// unreachable through the SDK's retries): the retry knows nothing of the key and must not tell the
// client that nothing was submitted, for the transfer under the key has landed.
func TestRealStoreFailedClaimAndReadNeverSayNothingWasSubmittedOfALandedTransfer(t *testing.T) {
	r := quietRig(t)
	first, err := r.orch.Transfer(context.Background(), r.input(0))
	if err != nil {
		t.Fatal(err)
	}
	store, tr := r.storeLosing(t, func(op string, _ map[string]any) fate {
		if op == putItem || op == getItem {
			return refuse
		}
		return pass
	})
	r.orch.Store = store
	_, err = r.orch.Transfer(context.Background(), r.input(0))
	if _, _, refused := tr.counts(); refused[putItem] == 0 || refused[getItem] == 0 {
		t.Fatalf("refused %v: the test needs the claim and its read-back refused", refused)
	}
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeStoreUnavailable || strings.Contains(u.Detail, "nothing was submitted") {
		t.Fatalf("retry of %s = %v; want STORE_UNAVAILABLE that does not say nothing was submitted", first.TransactionHash, err)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}
}
