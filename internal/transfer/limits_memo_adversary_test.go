package transfer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A wallet's daily total counts what lands on the account: every M... address of one G... account
// is that account (doc.go, "Muxed wallets": "per M... address they could be dodged by changing the
// id"). Limits.Charges keys the wallet counter by WalletHash(req.WalletAddress), the M... address,
// so a client under a daily cap of 25 pays one account 10 + 10 + 10 + ... by changing the id (or
// naming the G... itself), each address with a cap of its own.
func TestWalletDailyLimitCountsTheMuxedWalletsAccount(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(25)}}
	ctx := context.Background()
	rules := muxedRules()
	pay := func(key, addr string) error {
		req, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: addr, Amount: "10", Asset: "USDC"})
		if err != nil {
			t.Fatal(err)
		}
		_, err = h.orch.Transfer(ctx, transfer.Input{ClientKey: key, Request: req})
		return err
	}
	if err := pay("order-mux-1", muxed1); err != nil {
		t.Fatal(err)
	}
	if err := pay("order-mux-2", muxed2); err != nil {
		t.Fatal(err)
	}
	// 20 of 25 have landed on the account: a third 10, to the account itself, passes its cap.
	err := pay("order-mux-3", wallet)
	if le, ok := errors.AsType[*transfer.LimitError](err); !ok || le.Code != transfer.CodeDailyLimitExceeded {
		t.Errorf("a third 10 to the same account under a daily cap of 25: %v, want DAILY_LIMIT_EXCEEDED (landed %d)", err, h.ledger.landedCount())
	}
	a := rules.Canonicalize
	r1, _ := a(transfer.RawRequest{OperationType: "withdraw", WalletAddress: muxed1, Amount: "1", Asset: "USDC"})
	r0, _ := a(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "1", Asset: "USDC"})
	now := h.clock.Now()
	if c1, c0 := h.orch.Limits.Charges(r1, now)[0].Counter, h.orch.Limits.Charges(r0, now)[0].Counter; c1 != c0 {
		t.Errorf("the M... address's wallet counter %s is not its account's %s", c1, c0)
	}
}
