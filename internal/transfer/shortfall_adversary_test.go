package transfer_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Adversarial tests of the judgement of a FAILED inclusion (SourceShortfall, releaseShortfall,
// Settle) on the paths that reach it other than the call that sent the envelope.

// inDoubtFailed leaves key's transfer in_doubt with an envelope the ledger has included FAILED with
// codes (the call that sent it died; the sweep has not yet run).
func inDoubtFailed(t *testing.T, h *harness, key string, codes []string) transfer.Record {
	t.Helper()
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = codes
	rec := crashAt(t, h, key, transfer.StepSent)
	h.clock.Advance(time.Minute)
	h.ledger.closeIfDue()
	doubt := transfer.InDoubtRecord(rec, transfer.CodeTimeout, h.clock.Now())
	if err := transfer.ReplaceItem(context.Background(), h.store, rec, doubt); err != nil {
		t.Fatalf("writing the in_doubt item: %v", err)
	}
	return h.item(t, key)
}

// A retry that meets an in_doubt item whose envelope was included FAILED op_underfunded settles it
// inline and answers as the call that sent it would have (doc.go, "Classification": released,
// 503 VAULT_UNDERFUNDED, "no new envelope in the same call"): an empty vault fails every new
// envelope the same way, each costing a fee and another page.
func TestInlineShortfallAnswersUnderfundedWithoutNewEnvelope(t *testing.T) {
	h, logs := pagingHarness(t)
	inDoubtFailed(t, h, "payout-inline-1", []string{"tx_failed", "op_underfunded"})
	prepares, sends := h.ledger.counts()

	_, err := h.orch.Transfer(context.Background(), input("payout-inline-1", "1"))
	unavailable(t, err, transfer.CodeVaultUnderfunded)
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-inline-1")); ok {
		t.Fatal("the key should be free: nothing moved and the envelope can never land")
	}
	p, s := h.ledger.counts()
	if p != prepares || s != sends {
		t.Fatalf("the retry built %d and sent %d new envelopes while the vault is empty, want none", p-prepares, s-sends)
	}
	if pages := logs.alerts(t); len(pages) != 1 {
		t.Fatalf("pages = %d, want one for the one FAILED inclusion", len(pages))
	}
}

// The paying side's failures are not only op_underfunded: a vault without a trustline for the
// asset (op_src_no_trust) or one the issuer has frozen (op_src_not_authorized) also fails on the
// vault's side. README.md's table calls every other code "destination" and stores it as a terminal
// 422 TRANSACTION_FAILED that never pages: the client is told its transfer failed for good on the
// destination's side, its key is burnt until the TTL, and nobody is told to fix the vault. Nothing
// moved and the sequence number was consumed (tx_failed), so the key can be released like any
// other shortfall.
func TestFailedOnVaultSideIsReleasedAndPaged(t *testing.T) {
	for _, op := range []string{"op_src_no_trust", "op_src_not_authorized"} {
		t.Run(op, func(t *testing.T) {
			h, logs := pagingHarness(t)
			h.ledger.failResult = func(transfer.Envelope) bool { return true }
			h.ledger.failCodes = []string{"tx_failed", op}
			_, err := h.orch.Transfer(context.Background(), input("payout-src-1", "1"))
			var r *transfer.RejectedError
			if errors.As(err, &r) {
				t.Fatalf("err = %v: a failure on the vault's side stored as a terminal rejection of the client's transfer", err)
			}
			unavailable(t, err, transfer.CodeVaultUnderfunded)
			if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-src-1")); ok {
				t.Fatal("the key should be free")
			}
			if pages := logs.alerts(t); len(pages) != 1 || pages[0]["alert"] != transfer.AlertVaultUnderfunded {
				t.Fatalf("pages = %v, want one vault page", pages)
			}
		})
	}
}

// Settle judges a shortfall of an in_doubt item only against the item as read: a stale reader
// whose item was meanwhile released and claimed again (a new incarnation, same key, new envelope)
// must not delete the new one, even though the ledger says FAILED op_underfunded for the envelope
// the stale reader holds.
func TestSettleShortfallNeverReleasesLaterIncarnation(t *testing.T) {
	ctx := context.Background()
	h, _ := pagingHarness(t)
	old := inDoubtFailed(t, h, "payout-inc-1", []string{"tx_failed", "op_underfunded"})
	if _, err := h.orch.Settle(ctx, old); err != nil {
		t.Fatalf("settle: %v", err)
	}
	// The vault is funded; the client's retry claims the key afresh and its envelope is in flight.
	h.ledger.failResult = func(transfer.Envelope) bool { return false }
	cur := crashAt(t, h, "payout-inc-1", transfer.StepSent)
	if cur.ClaimID == old.ClaimID {
		t.Fatal("the retry reused the claim ID")
	}
	h.clock.Advance(time.Minute)
	// DeleteItem takes a failed condition against a later incarnation for its own lost delete, so
	// the stale reader may be answered "released"; what matters is that the later item stands.
	if _, err := h.orch.Settle(ctx, old); err != nil && !errors.Is(err, transfer.ErrConditionFailed) {
		t.Fatalf("stale settle: %v", err)
	}
	got := h.item(t, "payout-inc-1")
	if got.ClaimID != cur.ClaimID || got.Envelope == nil || got.Envelope.InnerHash != cur.Envelope.InnerHash {
		t.Fatalf("the later incarnation was touched: %+v", got)
	}
}

// An async transfer whose envelope is included FAILED op_underfunded is queued again (never
// dropped), but each run against an empty vault builds, sends and pays the fee of one more
// envelope. What bounds that cost is the delivery's backoff: every run that meets the shortfall
// answers DeliveryRetry with VAULT_UNDERFUNDED's Retry-After (a minute), never the ledger interval
// that a proven-dead requeue gets, and each run is one envelope, one fee and one page.
func TestAsyncShortfallRequeueWaitsRetryAfterAndPaysOneFeePerRun(t *testing.T) {
	ctx := context.Background()
	h, logs := pagingHarness(t)
	q := &recordingQueue{}
	h.orch.Queue = q
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_underfunded"}
	if res, err := h.orch.Enqueue(ctx, input("async-short-1", "5")); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	m := q.sent[0]
	const runs = 3
	for i := 1; i <= runs; i++ {
		d, err := h.orch.RunQueued(ctx, m)
		if d != transfer.DeliveryRetry || problemCode(err) != transfer.CodeVaultUnderfunded {
			t.Fatalf("run %d: %s %v, want DeliveryRetry with VAULT_UNDERFUNDED", i, d, err)
		}
		if got := transfer.RetryAfter(err); got < time.Minute {
			t.Fatalf("run %d: Retry-After %s, want at least a minute (an operator has to fund the vault)", i, got)
		}
		rec := h.item(t, "async-short-1")
		if rec.Status != transfer.StatusQueued || rec.ClaimID != m.ClaimID || rec.Envelope != nil {
			t.Fatalf("run %d: item %+v, want queued again under the same incarnation", i, rec)
		}
		if p, s := h.ledger.counts(); p != i || s != i {
			t.Fatalf("run %d: %d envelopes, %d sends; want one of each per run", i, p, s)
		}
		if pages := logs.alerts(t); len(pages) != i {
			t.Fatalf("run %d: %d pages, want one per run", i, len(pages))
		}
		h.clock.Advance(time.Minute)
	}
}

// The underfunded answers to a refusal (txINSUFFICIENT_BALANCE) and the fee bid's refusal
// (txINSUFFICIENT_FEE, whose named fee may lead to FEE_ABOVE_CAP) prove the envelope dead only on a
// first send. Here the first send's answer is lost although the network queued the envelope, and
// the re-send is refused with each code: the call must not release the key, answer
// FEE_ACCOUNT_UNDERFUNDED, page, or build a second envelope; the queued envelope lands and the
// call answers it, paid once.
func TestResendRefusedForFeesProvesNothing(t *testing.T) {
	for _, code := range []string{"txINSUFFICIENT_BALANCE", "txINSUFFICIENT_FEE"} {
		t.Run(code, func(t *testing.T) {
			h, logs := pagingHarness(t)
			h.ledger.feeBump = true
			h.ledger.script = func(n int, _ transfer.Envelope) (transfer.SendResult, bool, error) {
				if n == 0 {
					return transfer.SendResult{}, true, errors.New("read tcp: i/o timeout after the request was written")
				}
				return transfer.SendResult{Status: transfer.SendError, Code: code}, false, nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
			defer cancel()
			out, err := h.orch.Transfer(ctx, input("payout-resend-1", "5"))
			if err != nil || out.TransactionHash == "" {
				t.Fatalf("err = %v, out = %+v: want the queued envelope's landing answered", err, out)
			}
			if p, s := h.ledger.counts(); p != 1 || s < 2 {
				t.Fatalf("prepares = %d, sends = %d; want 1 envelope, re-sent and refused at least once", p, s)
			}
			if h.ledger.landedCount() != 1 {
				t.Fatalf("landed = %d, want 1", h.ledger.landedCount())
			}
			if pages := logs.alerts(t); len(pages) != 0 {
				t.Fatalf("pages = %v, want none: nothing was underfunded", pages)
			}
		})
	}
}
