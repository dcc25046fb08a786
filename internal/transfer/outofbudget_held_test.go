package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestNothingMovedIsNeverSaidWhileAnotherEnvelopeOfTheKeyMayLand: this call's first envelope is
// refused before inclusion (nothing moved, the key released); while it pauses, another call of
// the same request claims the key and sends its envelope, then dies. Its lease ends just as this
// call's budget does: that envelope can still land, so the answer is not the old refusal's
// "nothing moved" (a client told so might pay again under a new key) but TRANSFER_IN_PROGRESS:
// retry with the same key, which takes the envelope over and learns its fate.
func TestNothingMovedIsNeverSaidWhileAnotherEnvelopeOfTheKeyMayLand(t *testing.T) {
	h := newHarness(t)
	in := input("order-refused-then-other-sends", "5")
	key := transfer.StoreKey(wallet, in.ClientKey)
	s := transfer.DefaultSettings()
	start := h.clock.Now()
	deadline := start.Add(s.Timeout)
	refusedFirst, inserted := false, false
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			refusedFirst = true
			return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, false, nil
	}
	h.clock.OnAdvance(func(now time.Time) {
		if !refusedFirst || inserted {
			return
		}
		inserted = h.store.PutIfAbsent(transfer.Record{
			StoreKey: key, ClaimID: "other-call", Status: transfer.StatusInFlight,
			Fingerprint: in.Request.Fingerprint(), Request: in.Request, ClientKey: in.ClientKey,
			LeaseOwner: "other", LeaseExpiresAt: deadline.Add(-s.MinValidity - s.ProofWindow + time.Second),
			Version: 2, CreatedAt: now, UpdatedAt: now,
			Envelope: &transfer.Envelope{XDR: "xdr-other", InnerHash: strings.Repeat("cd", 32), MaxTime: deadline.Add(time.Minute).Unix(), SubmittedLedger: 100, Channel: "GVAULT"},
		})
	})
	_, err := h.orch.Transfer(context.Background(), in)
	if !inserted {
		t.Fatal("the other call never claimed the key")
	}
	var busy *transfer.InProgressError
	if !errors.As(err, &busy) {
		t.Fatalf("err = %v; the key holds another envelope of this request that may land: want TRANSFER_IN_PROGRESS, never \"nothing moved\"", err)
	}
}
