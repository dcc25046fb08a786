package transfer_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ownBidsLedger is the fake network whose Replace always declines: every ledger's bids at or
// above the queued rate were the deployment's own (internal/stellar's outbidByOthers).
type ownBidsLedger struct {
	*fakeLedger
	replaces atomic.Int32
}

func (l *ownBidsLedger) Replace(context.Context, transfer.Envelope) (transfer.Envelope, error) {
	l.replaces.Add(1)
	return transfer.Envelope{}, fmt.Errorf("%w: outbid only by this deployment's own transactions", transfer.ErrNoReplacement)
}

// An envelope outbid only by the deployment's own bids is never replaced: it waits at its bid
// until its maxTime, is proven dead like any other, and the transfer is paid once, by the
// envelope built after it, never by both.
func TestAnEnvelopeOutbidOnlyByOwnBidsIsProvenDeadAndPaidOnce(t *testing.T) {
	h := newHarness(t)
	h.ledger.feeBump = true
	ol := &ownBidsLedger{fakeLedger: h.ledger}
	h.orch.Ledger = ol
	h.ledger.script = func(_ int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		// The first envelope is queued and never included; any later one lands.
		return transfer.SendResult{Status: transfer.SendPending}, env.InnerHash != fmt.Sprintf("%064x", 1), nil
	}
	ctx := context.Background()
	_, err := h.orch.Transfer(ctx, input("order-own-bids", "5"))
	if err == nil || !strings.Contains(err.Error(), "TRANSACTION_EXPIRED") || ol.replaces.Load() == 0 || h.ledger.landedCount() != 0 {
		t.Fatalf("first call: %v after %d replacements declined, %d landed; want TRANSACTION_EXPIRED, nothing landed",
			err, ol.replaces.Load(), h.ledger.landedCount())
	}
	out, err := h.orch.Transfer(ctx, input("order-own-bids", "5"))
	rec := h.item(t, "order-own-bids")
	p, _ := h.ledger.counts()
	if err != nil || p != 2 || h.ledger.landedCount() != 1 || out.TransactionHash != rec.Envelope.InnerHash || out.TransactionHash != fmt.Sprintf("%064x", 2) {
		t.Fatalf("retry: %+v, %v; item %s %s; %d landed of %d prepared, want the second envelope landed once",
			out, err, rec.Status, rec.Envelope.InnerHash, h.ledger.landedCount(), p)
	}
}
