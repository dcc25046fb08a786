package stellar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A contract ledger's Prepare refuses, before it asks for a source, an amount finer than its
// asset's decimals (INVALID_AMOUNT, the client's mistake). Its admission must leave that request
// to Prepare too: answered CHANNELS_BUSY while every slot is beyond the wait, the client would
// retry, after the Retry-After, a request that can never go through, and a slot is booked for it.
func TestAContractAdmissionLeavesAnAmountItsPrepareRefuses(t *testing.T) {
	clock := vclock.New(time.Unix(1_800_000_000, 0))
	tickets := &admitTickets{next: 6, nextAt: clock.Now().Add(20 * time.Second)}
	keys, _, pool, _ := admitLedgerPool(t, clock, tickets)
	_, srv := newFakeRPC(t)
	assets := usdcOnly()
	inner, err := NewRPCLedger(RPCConfig{URL: srv.URL, Passphrase: testPassphrase, VaultAccount: keys.Vault.Address(), Assets: assets,
		Keys: signing.StaticKeys{K: keys}, MaxFeeStroops: 1_000_000, Clock: clock, Channels: pool})
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewContractLedger(inner, ContractConfig{Contracts: map[string]string{"USDC": randomContract()}, Decimals: 2})
	if err != nil {
		t.Fatal(err)
	}
	// 1 stroop is 0.0000001: five decimal places more than the asset has.
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: keypair.MustRandom().Address(), Asset: "USDC", Stroops: 1}
	maxTime := clock.Now().Add(60 * time.Second)
	_, perr := l.Prepare(context.Background(), req, transfer.Terms{MaxTime: maxTime})
	var ve *transfer.ValidationError
	if !errors.As(perr, &ve) || ve.Code != transfer.CodeInvalidAmount {
		t.Fatalf("Prepare: %v, want INVALID_AMOUNT (the premise of this test)", perr)
	}
	if _, err := l.Admit(context.Background(), req, maxTime); err != nil {
		t.Errorf("Admit: %v, want nil: Prepare refuses the request with %s, a 4xx, not a busy answer to retry", err, ve.Code)
	}
	if n := tickets.booked(); n != 0 {
		t.Errorf("%d bookings for a request Prepare refuses, want 0", n)
	}
}
