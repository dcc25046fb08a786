package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// outerLedger is marketLedger whose look-ups find a landed transaction only by an outer hash the
// envelope looked up names (as Stellar RPC finds a fee bump by its own hash): landedOuter is the
// outer hash of the fee bump that landed, per inner hash. onSend sees every envelope sent.
type outerLedger struct {
	*marketLedger
	omu         sync.Mutex
	landedOuter map[string]string
	sentOuters  []string
	onSend      func(env transfer.Envelope)
}

func (l *outerLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	l.omu.Lock()
	l.sentOuters = append(l.sentOuters, env.OuterHash)
	l.omu.Unlock()
	if l.onSend != nil {
		l.onSend(env)
	}
	res, err := l.fakeLedger.Send(ctx, env)
	l.fakeLedger.mu.Lock()
	_, queued := l.fakeLedger.queued[env.InnerHash]
	l.fakeLedger.mu.Unlock()
	if queued {
		l.omu.Lock()
		l.landedOuter[env.InnerHash] = env.OuterHash
		l.omu.Unlock()
	}
	return res, err
}

func (l *outerLedger) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	lk, err := l.fakeLedger.Lookup(ctx, env)
	l.omu.Lock()
	outer, ok := l.landedOuter[env.InnerHash]
	l.omu.Unlock()
	if err == nil && lk.Status != transfer.LookupNotFound && (!ok || !slices.Contains(env.Outers(), outer)) {
		lk = transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: lk.LatestLedger, LatestLedgerCloseTime: lk.LatestLedgerCloseTime, OldestLedger: lk.OldestLedger}
	}
	return lk, err
}

func (l *outerLedger) sent() []string {
	l.omu.Lock()
	defer l.omu.Unlock()
	return slices.Clone(l.sentOuters)
}

// outbidBatchHarness is batchHarness of n keys on fee-bumped batches whose first fee bump the
// network queues and never includes (outbid), and whose replacement it includes.
func outbidBatchHarness(t *testing.T, n int) (*harness, *outerLedger, *fakeBatches, []transfer.QueueMessage) {
	t.Helper()
	h, fb, msgs := batchHarness(t, 10, n)
	h.ledger.feeBump = true
	ol := &outerLedger{marketLedger: &marketLedger{fakeLedger: h.ledger, market: []int64{0}}, landedOuter: map[string]string{}}
	h.orch.Ledger = ol
	first := int64(100 * (n + 1))
	h.ledger.script = func(_ int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendPending}, env.FeeStroops != first, nil
	}
	s := h.orch.Settings()
	s.Timeout = 60 * time.Second
	h.orch.Settings = func() transfer.Settings { return s }
	return h, ol, fb, msgs
}

// An outbid batch is replaced by fee: the same inner transaction in a new fee bump, whose outer
// hash is on the batch item (the next version) before any send of it, and which lands; every key
// is settled once, naming the inner hash, and the keys' items are not written for it.
func TestABatchReplacementIsOnTheBatchItemBeforeItIsSent(t *testing.T) {
	h, ol, _, msgs := outbidBatchHarness(t, 3)
	var violations []string
	ol.onSend = func(env transfer.Envelope) {
		b, err := h.store.GetBatch(context.Background(), env.InnerHash)
		if err != nil || !slices.Contains(b.Envelope.Outers(), env.OuterHash) {
			violations = append(violations, fmt.Sprintf("sent %s while the batch item names %v (%v)", env.OuterHash, b.Envelope.Outers(), err))
		}
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(violations) > 0 {
		t.Fatalf("an outer hash was sent before it was on the batch item: %v", violations)
	}
	var inner string
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if ans.Delivery != transfer.DeliveryDone || ans.Err != nil || rec.Status != transfer.StatusReplayable {
			t.Fatalf("key %d: %+v, %s", i, ans, rec.Status)
		}
		inner = rec.Envelope.InnerHash
	}
	b, err := h.store.GetBatch(context.Background(), inner)
	if err != nil || b.Version != 2 || len(b.Envelope.Outers()) != 2 || b.Envelope.FeeStroops != 4_000 {
		t.Fatalf("batch item %+v, %v; want version 2 naming both fee bumps, the replacement at 10x", b, err)
	}
	sent := ol.sent()
	if !slices.Contains(sent, b.Envelope.Outers()[1]) || ol.calls != 1 {
		t.Fatalf("sent %v after %d replacements; want the replacement sent", sent, ol.calls)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}

// lossyReplaceStore answers every ReplaceBatch with a transport error, after writing it when
// applies is set (an answer lost) or without writing it.
type lossyReplaceStore struct {
	*transfertest.Store
	applies bool
}

func (s lossyReplaceStore) ReplaceBatch(ctx context.Context, next transfer.BatchEnvelope) error {
	if s.applies {
		if err := s.Store.ReplaceBatch(ctx, next); err != nil {
			return err
		}
	}
	return errors.New("connection reset")
}

// A batch replacement's write whose answer was lost is read back: written (the batch item holds
// the new outer hash at the next version), the replacement is sent and lands; not written, it is
// never sent, and the batch item names only the envelope that was (which, outbid, is proven dead
// after its maxTime: the keys are queued again).
func TestABatchReplacementWhoseWriteAnswerWasLostIsReadBack(t *testing.T) {
	for _, applies := range []bool{true, false} {
		t.Run(fmt.Sprintf("applied=%v", applies), func(t *testing.T) {
			h, ol, fb, msgs := outbidBatchHarness(t, 2)
			h.orch.Store = lossyReplaceStore{Store: h.store, applies: applies}
			answers := h.orch.RunQueuedBatch(context.Background(), msgs)
			if len(fb.hashes) != 1 {
				t.Fatalf("built %d batches, want 1", len(fb.hashes))
			}
			inner := fb.hashes[0]
			b, err := h.store.GetBatch(context.Background(), inner)
			if err != nil {
				t.Fatal(err)
			}
			sent := ol.sent()
			if !applies {
				if b.Version != 1 || len(sent) == 0 || slices.ContainsFunc(sent, func(o string) bool { return o != b.Envelope.OuterHash }) {
					t.Fatalf("batch item v%d %v, sent %v: want only the first fee bump sent and named", b.Version, b.Envelope.Outers(), sent)
				}
				// The first fee bump is never included: proven dead after its maxTime, every key
				// is queued again.
				if h.ledger.landedCount() != 0 || problemCode(answers[0].Err) != transfer.CodeTransactionExpired || h.batchItem(t, 0).Status != transfer.StatusQueued {
					t.Fatalf("landed %d, answer %+v: want nothing landed and the keys queued again", h.ledger.landedCount(), answers[0])
				}
				return
			}
			if b.Version != 2 || !slices.Contains(sent, b.Envelope.OuterHash) || h.ledger.landedCount() != 1 {
				t.Fatalf("batch item v%d %v, sent %v, landed %d: want the replacement recorded, sent and landed", b.Version, b.Envelope.Outers(), sent, h.ledger.landedCount())
			}
			for i, ans := range answers {
				if rec := h.batchItem(t, i); ans.Err != nil || rec.Status != transfer.StatusReplayable {
					t.Fatalf("key %d: %+v, %s", i, ans, rec.Status)
				}
			}
		})
	}
}

// A submitter replaced its batch by fee (the batch item names both fee bumps) and died; the first
// fee bump is the one that landed. A synchronous retry of one key takes it over, re-sends the
// newest envelope the batch item names (never rebuilt), and finds the landing by the replaced
// fee bump's outer hash; the sweep's Settle of the other key finds it too.
func TestATakeOverAfterABatchReplacementSendsTheNewestAndFindsTheReplaced(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ol := &outerLedger{marketLedger: &marketLedger{fakeLedger: h.ledger, market: []int64{0}}, landedOuter: map[string]string{}}
	h.orch.Ledger = ol
	b, attached := forgedBatch(t, h, "batch-0001", "batch-0002")
	// forgedBatch's envelope is the batch item's version 1; make it a fee bump, as channels do.
	first := b
	first.Envelope.OuterHash = fmt.Sprintf("%064x", 1<<46)
	first.Envelope.XDR = "xdr-first-fee-bump"
	first.Version = 2
	if err := transfer.ReplaceBatchItem(ctx, h.store, b, first); err != nil {
		t.Fatalf("the first fee bump: %v", err)
	}
	replaced := first
	replaced.Envelope.OuterHash = fmt.Sprintf("%064x", 1<<47)
	replaced.Envelope.OuterHashes = []string{first.Envelope.OuterHash, replaced.Envelope.OuterHash}
	replaced.Envelope.XDR, replaced.Envelope.FeeStroops = "xdr-replacement", 3_000
	replaced.Version = 3
	if err := transfer.ReplaceBatchItem(ctx, h.store, first, replaced); err != nil {
		t.Fatalf("the replacement: %v", err)
	}
	// The first fee bump was queued before the replacement and lands.
	h.ledger.sendToNetwork(first.Envelope)
	ol.landedOuter[first.Envelope.InnerHash] = first.Envelope.OuterHash
	h.clock.Advance(6 * time.Second)
	out, err := h.orch.Transfer(ctx, input("batch-0002", "5"))
	if err != nil || out.TransactionHash != b.Envelope.InnerHash || out.OperationIndex == nil || *out.OperationIndex != 1 {
		t.Fatalf("retry of the second key: %+v, %v; want the batch's landing, operation 1", out, err)
	}
	if sent := ol.sent(); len(sent) == 0 || sent[0] != replaced.Envelope.OuterHash {
		t.Fatalf("the take-over sent %v; want the newest fee bump %s", sent, replaced.Envelope.OuterHash)
	}
	s, err := h.orch.Settle(ctx, h.item(t, "batch-0001"))
	if err != nil || s.Resolution != transfer.ResolvedLanded || s.Record.Batch.Index != 0 || attached[0].Status != transfer.StatusInFlight {
		t.Fatalf("Settle of the first key: %+v, %v", s, err)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}
