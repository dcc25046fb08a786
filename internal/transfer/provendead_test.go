package transfer_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestNothingWasSubmittedIsNeverSaidAfterAnEnvelopeWasProvenDead: a call that takes over a key
// whose envelope an earlier invocation sent (its lease expired), proves that envelope dead and
// releases the key, and then cannot prepare the next one (the fee the network needs is above the
// cap), must not answer "nothing was submitted": an envelope of this request was submitted.
// Nothing moved, and the answer says so.
func TestNothingWasSubmittedIsNeverSaidAfterAnEnvelopeWasProvenDead(t *testing.T) {
	h := newHarness(t)
	in := input("order-dead-then-cap", "5")
	now := h.clock.Now()
	key := transfer.StoreKey(wallet, in.ClientKey)
	h.store.Put(transfer.Record{
		StoreKey: key, ClaimID: "dead-invocation", Status: transfer.StatusInFlight,
		Fingerprint: in.Request.Fingerprint(), Request: in.Request, ClientKey: in.ClientKey,
		LeaseOwner: "dead", LeaseExpiresAt: now.Add(-time.Minute), Version: 2, CreatedAt: now.Add(-2 * time.Minute), UpdatedAt: now.Add(-2 * time.Minute),
		Envelope: &transfer.Envelope{XDR: "xdr-sent", InnerHash: strings.Repeat("ab", 32), MaxTime: now.Add(-time.Minute).Unix(), SubmittedLedger: 90, Channel: "GVAULT"},
	})
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, Detail: "the classic lane needs 5000 stroops per operation; nothing was submitted"}
	_, err := h.orch.Transfer(context.Background(), in)
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap {
		t.Fatalf("err = %v, want FEE_ABOVE_CAP", err)
	}
	if strings.Contains(u.Detail, "nothing was submitted") || !strings.Contains(u.Detail, "nothing moved") {
		t.Fatalf("detail %q: an envelope was submitted and proven dead; want \"nothing moved\", never \"nothing was submitted\"", u.Detail)
	}
	if _, held := h.store.Item(key); held {
		t.Fatal("the key is still held")
	}
}

// A call that sent nothing still says "nothing was submitted" of the same refusal.
func TestNothingWasSubmittedIsSaidWhenNothingWasSent(t *testing.T) {
	h := newHarness(t)
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, Detail: "the classic lane needs 5000 stroops per operation; nothing was submitted"}
	_, err := h.orch.Transfer(context.Background(), input("order-cap", "5"))
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || !strings.Contains(u.Detail, "nothing was submitted") {
		t.Fatalf("err = %v, want FEE_ABOVE_CAP saying nothing was submitted", err)
	}
}
