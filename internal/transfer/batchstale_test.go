package transfer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Each key of a batch has its own judge (a take-over per key), so one judge may replace the batch
// by fee while another awaits the fee bump it read. A judge re-sends, two ledgers after its last
// send, the newest fee bump the batch item names, never an older one: stellar-core refuses the
// older one ERROR txINSUFFICIENT_FEE naming 10x the queued replacement's fee (canReplaceByFee),
// which the Ledger takes as the lane's price (a fee hint 100x the market for every envelope it
// builds next).
func TestABatchJudgeReSendsTheNewestFeeBumpTheBatchItemNames(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	ol := &outerLedger{marketLedger: &marketLedger{fakeLedger: h.ledger, market: []int64{0}}, landedOuter: map[string]string{}}
	// This judge's own replacement is declined (its fee account check counts other queued fees),
	// so nothing but the batch item tells it of the other judge's.
	h.orch.Ledger = declinedReplacer{ol}
	h.ledger.script = func(_ int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendPending}, false, nil // queued, outbid, never included
	}
	b, _ := forgedBatch(t, h, "batch-0001", "batch-0002")
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
	var once sync.Once
	var mu sync.Mutex
	replacedAt := -1
	ol.onSend = func(env transfer.Envelope) {
		// Another key's judge replaces the batch right after this judge's first send.
		once.Do(func() {
			if err := transfer.ReplaceBatchItem(ctx, h.store, first, replaced); err != nil {
				t.Errorf("the other judge's replacement: %v", err)
			}
			mu.Lock()
			replacedAt = len(ol.sentOuters)
			mu.Unlock()
		})
	}
	h.clock.Advance(6 * time.Second)
	out, err := h.orch.Transfer(ctx, input("batch-0002", "5"))
	t.Logf("the take-over answered %+v, %v", out, err)
	sent := ol.sent()
	mu.Lock()
	at := replacedAt
	mu.Unlock()
	if at < 1 || len(sent) <= at {
		t.Fatalf("sent %v, the other judge replaced after send %d; want re-sends after it", sent, at)
	}
	t.Logf("sent %d: %v", len(sent), sent)
	for i, h := range sent[at:] {
		if h != replaced.Envelope.OuterHash {
			t.Fatalf("send %d after the batch item named the replacement %s was the older fee bump %s (sent %v)", at+i+1, replaced.Envelope.OuterHash, h, sent)
		}
	}
}

// declinedReplacer is outerLedger whose Replace declines: the fee account cannot fund it.
type declinedReplacer struct{ *outerLedger }

func (declinedReplacer) Replace(context.Context, transfer.Envelope) (transfer.Envelope, error) {
	return transfer.Envelope{}, &transfer.UnavailableError{Code: transfer.CodeFeeAccountUnderfunded, Detail: "the fee account cannot fund the replacement"}
}
