package transfer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// heldAfter asserts that rec, a key requeued at failedAt for a failure answered code, is held back
// for that failure's Retry-After (a minute) with the failure as its result (doc.go, "The item",
// requeue: a requeue whose answer pages is held back).
func heldAfter(t *testing.T, what string, rec transfer.Record, failedAt time.Time, code string) {
	t.Helper()
	if rec.Status != transfer.StatusQueued || rec.NotBefore != failedAt.Add(time.Minute).Unix() || rec.Result == nil || rec.Result.Code != code {
		t.Fatalf("%s: item %s, notBefore %d, result %+v; want queued, held back until %d with %s",
			what, rec.Status, rec.NotBefore, rec.Result, failedAt.Add(time.Minute).Unix(), code)
	}
}

// A batch whose first send the network refuses as the service's side (txBAD_AUTH: a signer
// rotated) requeues its keys held back for the failure's Retry-After, as one transfer's refusal
// is (submit: releaseFor): its answer pages, and doc.go holds back every requeue whose answer
// pages. Without the hold a second delivery of a key's message (SQS delivers at least once) runs
// at once against the unchanged signers, refused and paged again, and a synchronous call with
// the key waits its whole budget on an item nobody runs before the minute is out.
func TestABatchRefusedOnItsFirstSendAsTheServicesSideIsHeldBack(t *testing.T) {
	ctx := context.Background()
	h, _, msgs := batchHarness(t, 10, 2)
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendError, Code: "txBAD_AUTH", LatestLedger: 100}, false, nil
	}
	answers := h.orch.RunQueuedBatch(ctx, msgs)
	failedAt := h.clock.Now()
	for i, ans := range answers {
		if ans.Delivery != transfer.DeliveryRetry || transfer.RetryAfter(ans.Err) != time.Minute {
			t.Fatalf("key %d: %+v, want a retry after a minute", i, ans)
		}
		heldAfter(t, "key after the refused batch", h.batchItem(t, i), failedAt, transfer.CodeServiceSideFailure)
	}
	prepares, sends := h.ledger.counts()
	h.clock.Advance(time.Second)
	if d, err := h.orch.RunQueued(ctx, msgs[0]); d != transfer.DeliveryRetry || transfer.RetryAfter(err) != 59*time.Second {
		t.Fatalf("a copy of a key's message a second later = %s, %v; want a retry after the 59 s left", d, err)
	}
	if p, s := h.ledger.counts(); p != prepares || s != sends {
		t.Fatalf("a copy of a key's message built %d and sent %d envelopes against the unchanged signers, want none", p-prepares, s-sends)
	}
}

// A batch Prepare refuses for a shortfall of the paying side (VAULT_UNDERFUNDED: the vault holds
// less than the batch's sum) requeues its keys held back too, as one transfer's Prepare refusal
// is (execute: releaseFor).
func TestABatchRefusedByPrepareForTheVaultsShortfallIsHeldBack(t *testing.T) {
	ctx := context.Background()
	h, fb, msgs := batchHarness(t, 10, 2)
	h.orch.Batches = &refusingBatches{fakeBatches: fb, err: &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded,
		RetryAfter: time.Minute, Detail: "the vault holds less than the batch's sum; nothing was submitted"}}
	answers := h.orch.RunQueuedBatch(ctx, msgs)
	failedAt := h.clock.Now()
	for i, ans := range answers {
		if ans.Delivery != transfer.DeliveryRetry {
			t.Fatalf("key %d: %+v, want a retry", i, ans)
		}
		heldAfter(t, "key after the refused batch", h.batchItem(t, i), failedAt, transfer.CodeVaultUnderfunded)
	}
	h.clock.Advance(time.Second)
	prepares, _ := h.ledger.counts()
	if d, err := h.orch.RunQueued(ctx, msgs[1]); d != transfer.DeliveryRetry || transfer.RetryAfter(err) != 59*time.Second {
		t.Fatalf("a copy of a key's message a second later = %s, %v; want a retry after the 59 s left", d, err)
	}
	if p, _ := h.ledger.counts(); p != prepares {
		t.Fatalf("a copy of a key's message prepared %d envelopes against the unfunded vault, want none", p-prepares)
	}
}

// A synchronous call that meets a held item is answered its stored failure (HeldAnswer). The
// failure is the last run's answer, which says only what that run did: a Prepare refused for the
// vault's shortfall says "nothing was submitted". But the held item is one transfer (one
// incarnation), and an earlier run of it sent an envelope that was included FAILED (a fee
// charged): a client reads "nothing was submitted" literally (afterProvenDead), so the held answer
// must not say it of a transfer an envelope of which was submitted.
func TestAHeldAnswerNeverSaysNothingWasSubmittedOfATransferThatSentAnEnvelope(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	key := "payout-held-submitted"
	if res, err := h.orch.Enqueue(ctx, input(key, "1")); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	rec := h.item(t, key)
	m := transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}

	// Run 1: its envelope is included FAILED op_underfunded (sent, a fee charged, nothing moved).
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_underfunded"}
	if d, err := h.orch.RunQueued(ctx, m); d != transfer.DeliveryRetry || problemCode(err) != transfer.CodeVaultUnderfunded {
		t.Fatalf("run 1 = %s, %v; want a retry, VAULT_UNDERFUNDED", d, err)
	}
	if _, sends := h.ledger.counts(); sends == 0 {
		t.Fatal("run 1 sent nothing")
	}

	// Run 2, once the hold has passed: Prepare refuses for the same shortfall, sending nothing.
	h.clock.Advance(time.Minute + time.Second)
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded, RetryAfter: time.Minute,
		Detail: "the vault holds 0 USDC; nothing was submitted: retry with the same key once the vault is funded"}
	if d, err := h.orch.RunQueued(ctx, m); d != transfer.DeliveryRetry || problemCode(err) != transfer.CodeVaultUnderfunded {
		t.Fatalf("run 2 = %s, %v; want a retry, VAULT_UNDERFUNDED", d, err)
	}

	// A synchronous call with the key meanwhile: the held failure, true of the transfer.
	h.clock.Advance(time.Second)
	_, err := h.orch.Transfer(ctx, input(key, "1"))
	u := unavailable(t, err, transfer.CodeVaultUnderfunded)
	if strings.Contains(u.Detail, "nothing was submitted") {
		t.Errorf("held answer %q: an envelope of this transfer was submitted (run 1's, included FAILED)", u.Detail)
	}
}
