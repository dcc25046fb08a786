package transfer_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// replacingLedger is the fake network with replace-by-fee: each replacement bids 10x its basis
// (stellar-core's FEE_MULTIPLIER) and records the basis it was asked to outbid.
type replacingLedger struct {
	*fakeLedger
	mu     sync.Mutex
	bases  []transfer.Envelope
	serial int
}

func (l *replacingLedger) Replace(_ context.Context, env transfer.Envelope) (transfer.Envelope, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bases = append(l.bases, env)
	l.serial++
	next := env
	next.OuterHashes = nil
	next.OuterHash = fmt.Sprintf("%064x", 1<<50+l.serial)
	next.XDR = "xdr-" + next.OuterHash
	next.FeeStroops = 10 * env.FeeStroops
	return next, nil
}

// TestReplacementOutbidsWhatIsQueuedNotWhatWasRefused: a replacement the network refuses
// (TRY_AGAIN_LATER: not queued) is not what the next replacement must outbid. The next one bids
// 10x the envelope still queued (the first), never 10x the refused one: 100x what is queued,
// which soon passes MAX_FEE_STROOPS and stops replacing for nothing.
func TestReplacementOutbidsWhatIsQueuedNotWhatWasRefused(t *testing.T) {
	h := newHarness(t)
	h.ledger.feeBump = true
	rl := &replacingLedger{fakeLedger: h.ledger}
	h.orch.Ledger = rl
	sends := map[string]int{}
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		sends[env.OuterHash]++
		switch {
		case env.FeeStroops == 100:
			// The first fee bump: queued, outbid, never included.
			return transfer.SendResult{Status: transfer.SendPending}, false, nil
		case env.FeeStroops == 1_000 && len(rl.bases) == 1:
			// The first replacement: refused, not queued.
			return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
		default:
			return transfer.SendResult{Status: transfer.SendPending}, true, nil
		}
	}
	out, err := h.orch.Transfer(context.Background(), input("order-rbf-basis", "5"))
	if err != nil {
		t.Fatalf("transfer: %v (bases %+v)", err, rl.bases)
	}
	if len(rl.bases) < 2 {
		t.Fatalf("%d replacements built, want 2", len(rl.bases))
	}
	if got := rl.bases[1].FeeStroops; got != 100 {
		t.Fatalf("the second replacement outbid an envelope of %d stroops, want the queued first (100), not the refused replacement (1000)", got)
	}
	rec := h.item(t, "order-rbf-basis")
	if outers := rec.Envelope.Outers(); len(outers) != 3 || rec.Status != transfer.StatusReplayable || out.TransactionHash != rec.Envelope.InnerHash {
		t.Fatalf("item %s, outer hashes %v; want replayable holding all three fee bumps", rec.Status, outers)
	}
}
