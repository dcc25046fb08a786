package transfer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A signer rotation or a missing account is met far more often before the envelope is sent than
// between its send and its apply: the network refuses the first send (stellar-core's checkValid:
// txBAD_AUTH or txBAD_AUTH_EXTRA for the transaction's signatures, txFAILED for an operation's,
// opBAD_AUTH or opNO_ACCOUNT, txNO_ACCOUNT for its source). Nothing was queued and the key is
// free; but it is the service's side failing as an included op_bad_auth is, and answered
// RPC_ERROR it would page no one while every transfer (and every run of a queued one, a second
// later) failed the same way. So it is SERVICE_SIDE_FAILURE too: the
// same answer and the same page, nothing sent. Any other refusal stays RPC_ERROR, unpaged.
func TestServiceSideRefusalAtFirstSendPages(t *testing.T) {
	for _, c := range []struct {
		code, want string
		pages      int
	}{
		{"txBAD_AUTH", transfer.CodeServiceSideFailure, 1},
		{"txBAD_AUTH_EXTRA", transfer.CodeServiceSideFailure, 1},
		{"txFAILED", transfer.CodeServiceSideFailure, 1},
		{"txNO_ACCOUNT", transfer.CodeServiceSideFailure, 1},
		{"txBAD_SEQ", transfer.CodeRPCError, 0},
	} {
		t.Run(c.code, func(t *testing.T) {
			h, logs := pagingHarness(t)
			h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
				return transfer.SendResult{Status: transfer.SendError, Code: c.code}, false, nil
			}
			_, err := h.orch.Transfer(context.Background(), input("payout-refused-1", "5"))
			u := unavailable(t, err, c.want)
			if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-refused-1")); ok {
				t.Fatal("the key should be free: nothing was queued")
			}
			if pages := logs.alerts(t); len(pages) != c.pages || c.pages == 1 && pages[0]["alert"] != transfer.AlertServiceSideFailure {
				t.Fatalf("pages = %v, want %d %q", pages, c.pages, transfer.AlertServiceSideFailure)
			}
			if c.pages == 1 {
				if p, s := h.ledger.counts(); p != 1 || s != 1 {
					t.Fatalf("prepares, sends = %d, %d; want 1, 1: answered at once, no second envelope", p, s)
				}
				if !strings.Contains(u.Detail, c.code) || !strings.Contains(u.Detail, "nothing moved") {
					t.Fatalf("detail %q: want the network's code and that nothing moved", u.Detail)
				}
			}
		})
	}
}
