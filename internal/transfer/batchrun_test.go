package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// fakeBatches builds batches on h's fake network: one envelope per batch, whose hash it
// remembers with the requests it pays.
type fakeBatches struct {
	l        *fakeLedger
	built    [][]transfer.Request
	hashes   []string // the inner hash of each batch built
	checkErr error
	refuse   map[string]string // wallet -> the destination-side code the check gives
	checks   []int             // the requests of each CheckDestinations call
}

func (f *fakeBatches) PrepareBatch(_ context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	f.l.prepares++
	f.built = append(f.built, reqs)
	h := fmt.Sprintf("%064x", 1<<50+f.l.prepares)
	f.hashes = append(f.hashes, h)
	env := transfer.Envelope{XDR: "xdr-batch-" + h, InnerHash: h, MaxTime: terms.MaxTime.Unix(), SubmittedLedger: f.l.latest, Channel: "GCHANNEL", FeeStroops: int64(100 * (len(reqs) + 1))}
	if f.l.feeBump {
		env.OuterHash = fmt.Sprintf("%064x", 1<<45+f.l.prepares)
	}
	return env, nil
}

func (f *fakeBatches) CheckDestinations(_ context.Context, reqs []transfer.Request) ([]string, error) {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	f.checks = append(f.checks, len(reqs))
	if f.checkErr != nil {
		return nil, f.checkErr
	}
	codes := make([]string, len(reqs))
	for i, r := range reqs {
		codes[i] = f.refuse[r.WalletAddress]
	}
	return codes, nil
}

func walletN(n int) string { return wallet[:54] + string(rune('A'+n%26)) + "A" }

func inputTo(key, w, amount string) transfer.Input {
	req, err := transfer.Rules{Assets: []string{"USDC"}, Addresses: addresses{}}.Canonicalize(
		transfer.RawRequest{OperationType: "withdraw", WalletAddress: w, Amount: amount, Asset: "usdc"})
	if err != nil {
		panic(err)
	}
	return transfer.Input{ClientKey: key, Request: req, TraceID: "trace-b"}
}

// batchHarness is h with a queue, BATCH_SIZE size and fake batches, and n transfers enqueued to n
// wallets; it returns their messages.
func batchHarness(t *testing.T, size, n int) (*harness, *fakeBatches, []transfer.QueueMessage) {
	t.Helper()
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	s := transfer.DefaultSettings()
	s.BatchSize = size
	h.orch.Settings = func() transfer.Settings { return s }
	fb := &fakeBatches{l: h.ledger, refuse: map[string]string{}}
	h.orch.Batches = fb
	var msgs []transfer.QueueMessage
	for i := range n {
		in := inputTo(fmt.Sprintf("pay-%04d", i), walletN(i), "5")
		if res, err := h.orch.Enqueue(context.Background(), in); err != nil || !res.Accepted {
			t.Fatalf("enqueue %d: %+v, %v", i, res, err)
		}
		rec := h.batchItem(t, i)
		msgs = append(msgs, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	return h, fb, msgs
}

func (h *harness) batchItem(t *testing.T, i int) transfer.Record {
	t.Helper()
	rec, ok := h.store.Item(transfer.StoreKey(walletN(i), fmt.Sprintf("pay-%04d", i)))
	if !ok {
		t.Fatalf("no item %d", i)
	}
	return rec
}

// A batch lands: every key is settled with the batch's hash and its own operation index, from one
// transaction, and every message is done.
func TestRunQueuedBatchLandsEveryKeyOnce(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(fb.built) != 1 || len(fb.built[0]) != 3 {
		t.Fatalf("built %d batches (%v), want one of 3", len(fb.built), fb.built)
	}
	var hash string
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryDone || ans.Err != nil {
			t.Fatalf("message %d: %+v", i, ans)
		}
		if hash == "" {
			hash = rec.Result.TransactionHash
		}
		if rec.Status != transfer.StatusReplayable || rec.Batch == nil || rec.Batch.Index != i || rec.Batch.Size != 3 || rec.Result.TransactionHash != hash ||
			rec.Envelope.XDR != "" {
			t.Fatalf("key %d: %+v (batch %+v, result %+v)", i, rec, rec.Batch, rec.Result)
		}
	}
	b, err := h.store.GetBatch(context.Background(), hash)
	if err != nil || len(b.Ops) != 3 || b.Ops[2].StoreKey != h.batchItem(t, 2).StoreKey {
		t.Fatalf("batch item: %+v, %v", b, err)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}

// A batch in which one destination has no trustline (the check could not tell): the network fails
// the transaction; that key is a stored rejection naming the transaction and its index, the
// others are queued again at once and their messages delivered again.
func TestRunQueuedBatchNoTrustlineRejectsOneRequeuesTheRest(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	fb.checkErr = errors.New("rpc down")
	h.ledger.failResult = func(env transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_success", "op_success", "op_no_trust"}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if i == 2 {
			if ans.Delivery != transfer.DeliveryDone || problemCode(ans.Err) != transfer.CodeTransactionFailed || rec.Status != transfer.StatusRejected ||
				!slices.Equal(rec.Result.ResultCodes, []string{"tx_failed", "op_no_trust"}) || rec.Batch.Index != 2 {
				t.Fatalf("the key without a trustline: %+v; %+v (result %+v)", ans, rec, rec.Result)
			}
			continue
		}
		if ans.Delivery != transfer.DeliveryRetry || rec.Status != transfer.StatusQueued || rec.Envelope != nil || rec.Batch != nil {
			t.Fatalf("neighbour %d: %+v; %+v", i, ans, rec)
		}
	}
}

// The check refuses a destination: that key runs alone (its own envelope, judged by the network),
// the others are batched without it.
func TestRunQueuedBatchCheckedDestinationRunsAlone(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	fb.refuse[walletN(1)] = "op_no_trust"
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(fb.built) != 1 || len(fb.built[0]) != 2 || fb.built[0][1].WalletAddress != walletN(2) {
		t.Fatalf("batches built: %v", fb.built)
	}
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable || (i == 1) != (rec.Batch == nil) {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
}

// BATCH_SIZE 1 is the one-transfer path: each message runs through RunQueued, no batch built.
func TestRunQueuedBatchSizeOneRunsEachAlone(t *testing.T) {
	h, fb, msgs := batchHarness(t, 1, 3)
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(fb.built) != 0 {
		t.Fatalf("built %d batches with BATCH_SIZE 1", len(fb.built))
	}
	for i, ans := range answers {
		if rec := h.batchItem(t, i); ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable || rec.Batch != nil {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	if n := h.ledger.landedCount(); n != 3 {
		t.Fatalf("%d transactions landed, want 3", n)
	}
}

// A key cancelled after the event was read drops out of the batch; the rest are batched.
func TestRunQueuedBatchStaleMessageRunsAlone(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	msgs[0].ClaimID = "another-incarnation"
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if answers[0].Delivery != transfer.DeliveryStale || h.batchItem(t, 0).Status != transfer.StatusQueued {
		t.Fatalf("stale message: %+v", answers[0])
	}
	if len(fb.built) != 1 || len(fb.built[0]) != 2 {
		t.Fatalf("batches built: %v", fb.built)
	}
}

func TestBatchSizeIsValidated(t *testing.T) {
	for _, n := range []int{-1, 101} {
		s := transfer.DefaultSettings()
		s.BatchSize = n
		if err := s.Validate(); err == nil {
			t.Fatalf("BATCH_SIZE %d accepted", n)
		}
	}
}

// A batch refused on its first send: the keys are requeued together (nobody else can have sent
// it) and every message is delivered again; nothing names the envelope any more.
func TestRunQueuedBatchRefusedFirstSendRequeuesAll(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 2)
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryRetry || rec.Status != transfer.StatusQueued || rec.Envelope != nil || rec.Batch != nil {
			t.Fatalf("key %d after a refused batch: %+v; %+v", i, ans, rec)
		}
	}
	if len(fb.built) != 1 || h.ledger.landedCount() != 0 {
		t.Fatalf("built %d, landed %d", len(fb.built), h.ledger.landedCount())
	}
}

// A batch still undecided when the budget ends: every key is parked in_doubt naming the batch, and
// the sweep's Settle settles each by its own operation once the batch lands.
func TestRunQueuedBatchInDoubtThenSettledPerKey(t *testing.T) {
	h, _, msgs := batchHarness(t, 10, 2)
	h.ledger.noClose = true
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	var hash string
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryDone || problemCode(ans.Err) != transfer.CodeInDoubt || rec.Status != transfer.StatusInDoubt ||
			rec.Batch == nil || rec.Batch.Index != i {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
		hash = rec.Envelope.InnerHash
	}
	h.ledger.noClose = false
	h.clock.Advance(5 * time.Second)
	for i := range answers {
		s, err := h.orch.Settle(context.Background(), h.batchItem(t, i))
		if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Result.TransactionHash != hash {
			t.Fatalf("Settle of key %d: %+v, %v", i, s, err)
		}
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}

// A batch that failed because the vault ran short on one operation: nothing moved, every key is
// queued again (the vault's shortfall is not the client's mistake), and the batch pages once.
// A later sweep of a key the submitter left does not page again.
func TestRunQueuedBatchSourceShortfallRequeuesAllAndPagesOnce(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	logs := &logLines{}
	h.orch.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_success", "op_underfunded", "op_success"}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryRetry || problemCode(ans.Err) != transfer.CodeVaultUnderfunded || rec.Status != transfer.StatusQueued {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	if got := logs.alerts(t); len(got) != 1 || got[0]["alert"] != transfer.AlertVaultUnderfunded {
		t.Fatalf("pages: %v, want one %s", got, transfer.AlertVaultUnderfunded)
	}
	if len(fb.built) != 1 {
		t.Fatalf("built %d batches", len(fb.built))
	}
}

// A batch whose send's answer was lost and which landed: the submitter re-sends the same
// envelope (never a new one), finds it landed, and settles every key with it.
func TestRunQueuedBatchLostSendAnswerLanded(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 2)
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			return transfer.SendResult{}, true, errors.New("EOF after the request was written")
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	hash := h.batchItem(t, 0).Envelope.InnerHash
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryDone || ans.Err != nil || rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != hash {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
	if len(fb.built) != 1 || h.ledger.landedCount() != 1 {
		t.Fatalf("built %d, landed %d; want one of each", len(fb.built), h.ledger.landedCount())
	}
}

// A batch refused as a client's mistake (one request no longer served): each key runs alone, the
// faulty one is stored as its rejection and the others are paid, so no message loops.
func TestRunQueuedBatchValidationErrorRunsEachAlone(t *testing.T) {
	h, fb, msgs := batchHarness(t, 10, 3)
	refuse := &transfer.ValidationError{Code: "ASSET_NOT_SUPPORTED", Detail: "no longer served"}
	h.orch.Batches = &refusingBatches{fakeBatches: fb, err: refuse}
	h.orch.Ledger = &refusingLedger{fakeLedger: h.ledger, wallet: walletN(1), err: refuse}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if i == 1 {
			if ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusRejected || rec.Result.Code != "ASSET_NOT_SUPPORTED" {
				t.Fatalf("the refused key: %+v; %+v", ans, rec)
			}
			continue
		}
		if ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable || rec.Batch != nil {
			t.Fatalf("key %d: %+v; %+v", i, ans, rec)
		}
	}
}

type refusingBatches struct {
	*fakeBatches
	err error
}

func (r *refusingBatches) PrepareBatch(context.Context, []transfer.Request, transfer.Terms) (transfer.Envelope, error) {
	return transfer.Envelope{}, r.err
}

// refusingLedger refuses, as the client's mistake, every request paying wallet.
type refusingLedger struct {
	*fakeLedger
	wallet string
	err    error
}

func (r *refusingLedger) Prepare(ctx context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	if req.WalletAddress == r.wallet {
		return transfer.Envelope{}, r.err
	}
	return r.fakeLedger.Prepare(ctx, req, terms)
}
