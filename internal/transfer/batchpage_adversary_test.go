package transfer_test

import (
	"context"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The page of a shortfall on the paying or the service's side is the alarm on
// transfer_orchestration_failure_total with its code (template.yaml: VaultUnderfundedAlarm,
// FeeAccountUnderfundedAlarm, ServiceSideFailureAlarm); no alarm reads the ERROR line with
// "alert" (serviceside_sweep_test.go). A queued transfer alone counts its answer (RunQueued's
// Report), so a vault that cannot pay pages. A batch must page the same way wherever it learns of
// the shortfall, or a deployment with BATCH_SIZE above 1 requeues its keys for ever while nobody
// is told to fund the vault.

// A batch refused before sending because the vault cannot pay its sum pages.
func TestABatchRefusedForTheVaultsShortfallBeforeSendingPages(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	rep := &counted{}
	h.orch.Observer = rep
	h.orch.Batches = &refusingBatches{fakeBatches: fb, err: &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded,
		Detail: "the vault holds less than the batch's sum"}}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		if rec := h.batchItem(t, i); ans.Delivery != transfer.DeliveryRetry || rec.Status != transfer.StatusQueued {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	if got := rep.failures(transfer.CodeVaultUnderfunded); got < 1 {
		t.Fatalf("failures counted with code %s = %d (reports %+v, counted %v): the batch's shortfall pages no one", transfer.CodeVaultUnderfunded, got, rep.all, rep.codes)
	}
}

// A batch whose first send the network refuses because the account paying the fee cannot
// (txINSUFFICIENT_BALANCE) pages.
func TestABatchRefusedOnItsFirstSendForTheFeePayersShortfallPages(t *testing.T) {
	h, _, msgs := batchHarness(t, 10, 2)
	rep := &counted{}
	h.orch.Observer = rep
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendError, Code: "txINSUFFICIENT_BALANCE", LatestLedger: 100}, false, nil
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		if rec := h.batchItem(t, i); ans.Delivery != transfer.DeliveryRetry || rec.Status != transfer.StatusQueued {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	if got := rep.failures(transfer.CodeVaultUnderfunded) + rep.failures(transfer.CodeFeeAccountUnderfunded); got < 1 {
		t.Fatalf("no underfunded failure counted (reports %+v, counted %v): the refused batch pages no one", rep.all, rep.codes)
	}
}

// The sweep's Settle of a batched key whose batch it finds FAILED on the vault's side
// (op_underfunded) requeues every key and pages once, as Settle does for one transfer.
func TestABatchFoundFailedOnTheVaultsSideByTheSweepPagesOnce(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	rep := &counted{}
	h.orch.Observer = rep
	b, _ := forgedBatch(t, h, "short-0001", "short-0002")
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_success", "op_underfunded"}
	h.ledger.sendToNetwork(b.Envelope)
	h.clock.Advance(6 * time.Second) // the lease ends; a ledger closes with the batch in it, FAILED
	for _, k := range []string{"short-0001", "short-0002"} {
		rec := h.item(t, k)
		s, err := h.orch.Settle(ctx, rec)
		if err != nil || s.Resolution != transfer.ResolvedRequeued {
			t.Fatalf("Settle of %s: %+v, %v", k, s, err)
		}
	}
	if got := rep.failures(transfer.CodeVaultUnderfunded); got != 1 {
		t.Fatalf("failures counted with code %s = %d (reports %+v, counted %v), want 1: the sweep's page must reach the alarm", transfer.CodeVaultUnderfunded, got, rep.all, rep.codes)
	}
}

// takingOverStore is the harness's store where, just before the batch's requeue transaction
// (every write queued), a synchronous caller takes the first key over: its lease owner changes
// and it re-sends the batch's envelope, so the refusal the submitter saw proves nothing any more.
type takingOverStore struct {
	*transfertest.Store
	done bool
}

func (s *takingOverStore) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	if !s.done && len(writes) > 0 && writes[0].Next.Status == transfer.StatusQueued {
		s.done = true
		cur, err := s.Store.Get(ctx, writes[0].Next.StoreKey)
		if err == nil {
			next := cur
			next.LeaseOwner, next.Version = "synchronous-caller", cur.Version+1
			if err := s.Store.Replace(ctx, next, transfer.Expect(cur)); err != nil {
				return err
			}
		}
	}
	return s.Store.ReplaceAll(ctx, writes)
}

// A batch refused on its first send whose keys cannot be requeued together (a key was taken over
// meanwhile, and its taker sends the same envelope again) leaves the other keys in doubt: their
// messages' answers (logged, and reported to the metrics) say in doubt, never the refusal's
// "nothing moved", which the take-over made false.
func TestAKeyParkedAfterARefusedBatchIsNotAnsweredNothingMoved(t *testing.T) {
	h, _, msgs := batchHarness(t, 10, 2)
	h.orch.Store = &takingOverStore{Store: h.store}
	rep := &counted{}
	h.orch.Observer = rep
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendTryAgainLater, LatestLedger: 100}, false, nil
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	parked := h.batchItem(t, 1)
	if parked.Status != transfer.StatusInDoubt {
		t.Fatalf("the key still held is %s, want in_doubt", parked.Status)
	}
	if got := problemCode(answers[1].Err); got != transfer.CodeInDoubt {
		t.Fatalf("the parked key's answer is %s (%v), want %s", got, answers[1].Err, transfer.CodeInDoubt)
	}
	for _, r := range rep.all {
		if r.Code == transfer.CodeRPCError {
			t.Fatalf("a run reported %+v: nothing moved is not known once a key was taken over", r)
		}
	}
}

// doneLedger records the envelopes whose source the orchestrator releases (Ledger.Done).
type doneLedger struct {
	*fakeLedger
	done []string
}

func (l *doneLedger) Done(_ context.Context, env transfer.Envelope) {
	l.done = append(l.done, env.InnerHash)
}

// A batch's channel is released once the batch is decided (doc.go, "Batches": Ledger.Done), never
// while it can still land: after a refused first send whose requeue a take-over broke, its taker
// sends the same envelope again, and a channel released now would be leased to another batch built
// on the same sequence number, which the first may still take.
func TestAChannelIsNotReleasedWhileItsParkedBatchCanStillLand(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 2)
	h.orch.Store = &takingOverStore{Store: h.store}
	l := &doneLedger{fakeLedger: h.ledger}
	h.orch.Ledger = l
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendTryAgainLater, LatestLedger: 100}, false, nil
	}
	h.orch.RunQueuedBatch(context.Background(), msgs)
	if got := h.batchItem(t, 1); got.Status != transfer.StatusInDoubt {
		t.Fatalf("the key still held is %s, want in_doubt", got.Status)
	}
	for _, hash := range l.done {
		if hash == fb.hashes[0] {
			t.Fatalf("the channel of batch %s was released while a taker re-sends it", hash[:8])
		}
	}
}
