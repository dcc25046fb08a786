package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// capTo bounds h's invocations to k transactions (SUBMITTER_TRANSACTIONS_PER_INVOCATION).
func capTo(h *harness, k int) {
	s := h.orch.Settings()
	s.TransactionsPerInvocation = k
	h.orch.Settings = func() transfer.Settings { return s }
}

// wantOverInvocation checks that answer is the one to a message past the invocation's
// transactions (DeliveryRetry, CHANNELS_BUSY a ledger later) and that its item is as before.
func wantOverInvocation(t *testing.T, what string, ans transfer.Answer, rec, before transfer.Record) {
	t.Helper()
	var busy *transfer.UnavailableError
	if ans.Delivery != transfer.DeliveryRetry || !errors.As(ans.Err, &busy) || busy.Code != transfer.CodeChannelsBusy ||
		transfer.RetryAfter(ans.Err) != transfer.DefaultLedgerInterval {
		t.Errorf("%s: %+v, want DeliveryRetry with CHANNELS_BUSY after %v", what, ans, transfer.DefaultLedgerInterval)
	}
	if !reflect.DeepEqual(rec, before) {
		t.Errorf("%s: its item was touched:\n%+v\nwant\n%+v", what, rec, before)
	}
}

// Every transaction an invocation pays counts toward its k (TransactionsPerInvocation), a key
// that runs alone (a memo: a transaction has one) as much as a batch: 4 memo transfers and 3
// batchable ones at k 2 pay 2 memo transfers, each alone, and answer the 5 others DeliveryRetry
// untouched, rather than 4 lone transactions and a batch, each wanting a source the event source
// gave to other invocations.
func TestAKeyAloneIsOneOfTheInvocationsTransactions(t *testing.T) {
	h, fb, msgs := batchHarness(t, 3, 3)
	capTo(h, 2)
	rules := transfer.Rules{Assets: []string{"USDC"}, Addresses: addresses{}}
	var memoKeys []string
	var event []transfer.QueueMessage
	for i := range 4 {
		req, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: walletN(10 + i),
			Amount: "5", Asset: "usdc", Memo: &transfer.RawMemo{Type: "id", Value: "42"}})
		if err != nil {
			t.Fatal(err)
		}
		in := transfer.Input{ClientKey: fmt.Sprintf("memo-%04d", i), Request: req, TraceID: "trace-m"}
		if res, err := h.orch.Enqueue(context.Background(), in); err != nil || !res.Accepted {
			t.Fatalf("enqueue memo %d: %+v, %v", i, res, err)
		}
		rec, _ := h.store.Item(transfer.StoreKey(walletN(10+i), in.ClientKey))
		memoKeys = append(memoKeys, rec.StoreKey)
		event = append(event, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	event = append(event, msgs...)
	before := map[string]transfer.Record{}
	for _, m := range event {
		before[m.StoreKey], _ = h.store.Item(m.StoreKey)
	}

	answers := h.orch.RunQueuedBatch(context.Background(), event)
	if n := h.ledger.landedCount(); n != 2 || len(fb.built) != 0 {
		t.Fatalf("%d transactions landed, %d batches built; want 2 lone memo transfers and no batch", n, len(fb.built))
	}
	for i, ans := range answers {
		rec, _ := h.store.Item(event[i].StoreKey)
		if i < 2 {
			if ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable {
				t.Errorf("memo %d: %+v, item %s; want done and paid alone", i, ans, rec.Status)
			}
			continue
		}
		wantOverInvocation(t, fmt.Sprintf("message %d", i), ans, rec, before[event[i].StoreKey])
	}

	h.clock.Advance(transfer.DefaultLedgerInterval)
	h.orch.RunQueuedBatch(context.Background(), event[2:])
	for _, k := range memoKeys[2:] {
		if rec, _ := h.store.Item(k); rec.Status != transfer.StatusReplayable {
			t.Errorf("memo %s delivered again: %s, want paid", k, rec.Status)
		}
	}
	// Two memo transfers alone; the batch's three keys wait for the next delivery.
	if n := h.ledger.landedCount(); n != 4 {
		t.Errorf("%d transactions landed in all, want 4", n)
	}
}

// A destination the check refuses runs alone, and that lone transaction is one of the
// invocation's k: at k 2 and batches of 3, a refused first key and one batch of the next three
// are paid, the last three answered DeliveryRetry untouched.
func TestARefusedDestinationIsOneOfTheInvocationsTransactions(t *testing.T) {
	h, fb, msgs := batchHarness(t, 3, 7)
	capTo(h, 2)
	fb.refuse[walletN(0)] = "op_no_trust"
	before := make([]transfer.Record, len(msgs))
	for i := range msgs {
		before[i] = h.batchItem(t, i)
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if len(fb.built) != 1 || len(fb.built[0]) != 3 || fb.built[0][0].WalletAddress != walletN(1) {
		t.Fatalf("built %v, want one batch of keys 1 to 3", fb.built)
	}
	if n := h.ledger.landedCount(); n != 2 {
		t.Errorf("%d transactions landed, want 2 (the refused key alone and the batch)", n)
	}
	for i := 4; i < 7; i++ {
		wantOverInvocation(t, fmt.Sprintf("message %d", i), answers[i], h.batchItem(t, i), before[i])
	}
}

// The same key's message twice in one event, its first copy past the invocation's batches: the
// copy runs alone and pays it; the first, answered DeliveryRetry, is stale when it comes back;
// one payment.
func TestADuplicateMessagePastTheBatchesPaysItsKeyOnce(t *testing.T) {
	h, _, msgs := batchHarness(t, 3, 7)
	capTo(h, 2)
	event := append(append([]transfer.QueueMessage{}, msgs...), msgs[6])
	answers := h.orch.RunQueuedBatch(context.Background(), event)
	if answers[6].Delivery != transfer.DeliveryRetry || answers[7].Delivery != transfer.DeliveryDone {
		t.Errorf("the key's messages: %+v and %+v, want retry and done", answers[6], answers[7])
	}
	if rec := h.batchItem(t, 6); rec.Status != transfer.StatusReplayable {
		t.Errorf("item 6 is %s, want paid", rec.Status)
	}
	h.clock.Advance(transfer.DefaultLedgerInterval)
	if again := h.orch.RunQueuedBatch(context.Background(), event[6:7]); again[0].Delivery != transfer.DeliveryStale {
		t.Errorf("the first copy delivered again: %+v, want stale", again[0])
	}
	if n := h.ledger.landedCount(); n != 3 {
		t.Errorf("%d transactions landed, want 3 (two batches, the copy alone)", n)
	}
}

// A message past the invocation's batches whose transfer is cancelled before it comes back is
// acknowledged then, nothing built.
func TestAMessagePastTheBatchesCancelledMeanwhileIsStale(t *testing.T) {
	h, fb, msgs := batchHarness(t, 3, 7)
	capTo(h, 2)
	h.orch.RunQueuedBatch(context.Background(), msgs)
	if _, err := h.orch.Cancel(context.Background(), transfer.Wallet{Address: walletN(6)}, "pay-0006", transfer.Canceller{}); err != nil {
		t.Fatalf("cancel: %v", err)
	}
	if again := h.orch.RunQueuedBatch(context.Background(), msgs[6:]); again[0].Delivery != transfer.DeliveryStale {
		t.Errorf("delivered again: %+v, want stale", again[0])
	}
	if n := h.ledger.landedCount(); n != 2 || len(fb.built) != 2 {
		t.Errorf("%d landed, %d built, want the 2 batches only", n, len(fb.built))
	}
}

// failingChunk fails the destination check of a chunk of failLen requests.
type failingChunk struct {
	*fakeBatches
	failLen int
}

func (c *failingChunk) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]string, error) {
	if len(reqs) == c.failLen {
		return nil, errors.New("getLedgerEntries: unavailable")
	}
	return c.fakeBatches.CheckDestinations(ctx, reqs)
}

// 101 keys, checked as chunks of 100 and 1: the chunk of one whose check fails keeps its key
// (unchecked), the refusal in the other still runs its key alone, every message is answered and
// every key paid once.
func TestAFailedChunkKeepsOnlyItsOwnKeysUnchecked(t *testing.T) {
	h, fb, msgs := batchHarness(t, 100, 101)
	fb.refuse[walletN(3)] = "op_no_trust"
	h.orch.Batches = &failingChunk{fakeBatches: fb, failLen: 1}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	for i, a := range answers {
		if a.Delivery != transfer.DeliveryDone {
			t.Errorf("message %d: %+v, want done", i, a)
		}
	}
	batched := 0
	for _, b := range fb.built {
		batched += len(b)
		for _, r := range b {
			if r.WalletAddress == walletN(3) {
				t.Errorf("a refused destination was batched with %d others", len(b)-1)
			}
		}
	}
	// walletN repeats every 26: 101 keys to 26 destinations, of which one (4 keys) runs alone.
	if batched != 101-4 {
		t.Errorf("%d keys batched, want %d", batched, 101-4)
	}
}

// Batches that BATCH_OPS_PER_LEDGER made 1 (Settings.BatchSize 1 with BATCH_SIZE above 1: too
// many channels for the share) still come k x BATCH_SIZE messages an event (the event source's
// BatchSize is the template's, which cannot see the share): every key runs alone, and the event
// still pays at most k of them, the others answered DeliveryRetry untouched.
func TestBatchesMadeOneStillPayAtMostTheInvocationsTransactions(t *testing.T) {
	h, fb, msgs := batchHarness(t, 1, 5)
	capTo(h, 2)
	before := make([]transfer.Record, len(msgs))
	for i := range msgs {
		before[i] = h.batchItem(t, i)
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if n := h.ledger.landedCount(); n != 2 || len(fb.built) != 0 {
		t.Fatalf("%d transactions landed, %d batches built; want 2 keys alone", n, len(fb.built))
	}
	for i, ans := range answers {
		if i < 2 {
			if rec := h.batchItem(t, i); ans.Delivery != transfer.DeliveryDone || rec.Status != transfer.StatusReplayable {
				t.Errorf("message %d: %+v, item %s; want done and paid alone", i, ans, rec.Status)
			}
			continue
		}
		wantOverInvocation(t, fmt.Sprintf("message %d", i), ans, h.batchItem(t, i), before[i])
	}
	if len(fb.checks) != 0 {
		t.Errorf("destinations checked %v with no batch to keep them out of", fb.checks)
	}
}
