package transfer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// marketLedger is the fake network with replace-by-fee the way internal/stellar builds it: the
// replacement bids max(10x its basis, what the market asks now), and the same inner transaction
// wrapped at the same fee by the same fee account is the same fee bump (the same outer hash).
type marketLedger struct {
	*fakeLedger
	mu     sync.Mutex
	market []int64 // the market's bid at each Replace call; the last one repeats
	calls  int
	built  []string // the outer hash each Replace returned
}

func (l *marketLedger) Replace(_ context.Context, env transfer.Envelope) (transfer.Envelope, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	bid := l.market[min(l.calls, len(l.market)-1)]
	l.calls++
	fee := max(10*env.FeeStroops, bid)
	next := env
	next.OuterHashes = nil
	next.OuterHash = fmt.Sprintf("%064x", 1<<50+fee)
	next.XDR = "xdr-" + next.OuterHash
	next.FeeStroops = fee
	l.built = append(l.built, next.OuterHash)
	return next, nil
}

// TestAReplacementTheItemNamesAlreadyIsSentAgain: the queued fee bump (100 stroops) is outbid
// at 1000, refused, then at 2000 (the market rose), refused; the market falls back and the next
// replacement of the queued one is the 1000-stroop fee bump again. Its outer hash is on the item
// (the core rule holds), so it is sent, not taken for a foreign envelope that stops replacing
// for the rest of the call.
func TestAReplacementTheItemNamesAlreadyIsSentAgain(t *testing.T) {
	h := newHarness(t)
	h.ledger.feeBump = true
	ml := &marketLedger{fakeLedger: h.ledger, market: []int64{1_000, 2_000, 1_000}}
	h.orch.Ledger = ml
	h.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = 90 * time.Second // room for three replacements before maxTime
		return s
	}
	sentAfterRebuild := 0
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		ml.mu.Lock()
		calls := ml.calls
		ml.mu.Unlock()
		switch {
		case env.FeeStroops == 100:
			// The first fee bump: queued, outbid, never included.
			return transfer.SendResult{Status: transfer.SendPending}, false, nil
		case env.FeeStroops == 1_000 && calls >= 3:
			sentAfterRebuild++
			return transfer.SendResult{Status: transfer.SendPending}, true, nil
		default:
			return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
		}
	}
	out, err := h.orch.Transfer(context.Background(), input("order-rbf-again", "5"))
	if err != nil {
		t.Fatalf("transfer: %v (built %v)", err, ml.built)
	}
	if sentAfterRebuild == 0 {
		t.Fatalf("the 1000-stroop fee bump built again (its hash on the item) was never sent; built %v", ml.built)
	}
	rec := h.item(t, "order-rbf-again")
	if prepares, _ := h.ledger.counts(); prepares != 1 || rec.Status != transfer.StatusReplayable || out.TransactionHash != rec.Envelope.InnerHash {
		t.Fatalf("item %s after %d prepares; want the first envelope's replacement landed", rec.Status, prepares)
	}
	for _, h := range ml.built {
		if !contains(rec.Envelope.Outers(), h) {
			t.Fatalf("outer hash %s built and maybe sent is not on the item %v", h, rec.Envelope.Outers())
		}
	}
	if got := rec.Envelope.OuterHash; got != fmt.Sprintf("%064x", 1<<50+1_000) {
		t.Fatalf("the item's current fee bump is %s, want the one sent last (1000 stroops)", got)
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
