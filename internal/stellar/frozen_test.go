package stellar_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Protocol 26 (CAP-77): a wallet whose trustline the validators froze. stellar-core refuses the
// payment at submission with txFROZEN_KEY_ACCESSED (TransactionFrame::accessesFrozenKey,
// PaymentOpFrame::doesAccessFrozenKey), so nothing moves: the service answers a retryable 503
// naming the code in core's spelling, the key released; once the trustline is unfrozen a retry
// with the same key pays exactly once.
func TestFrozenWalletTrustlineRefusedRetryableThenPaysOnce(t *testing.T) {
	clock, n := startSimNet(t, simNetOpts{})
	a := fundedKeys(t, n, fundOpts{vaultTrustline: true, vaultUSDC: 100 * unit, wallet: true, walletTrustline: true,
		noChannelMaster: true})
	keys, usdc, vault, wallet := a.keys, a.usdc, a.vault, a.wallet
	var id xdr.AccountId
	if err := id.SetAddress(wallet); err != nil {
		t.Fatal(err)
	}
	asset, err := usdc.XDR()
	if err != nil {
		t.Fatal(err)
	}
	var line xdr.LedgerKey
	if err := line.SetTrustline(id, asset.ToTrustLineAsset()); err != nil {
		t.Fatal(err)
	}
	if err := n.FreezeKeys(line); err != nil {
		t.Fatal(err)
	}
	db, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, db)
	ledger, err := stellar.NewRPCLedger(stellar.RPCConfig{URL: n.RPCURL(), Passphrase: n.Passphrase(), VaultAccount: vault,
		Assets: []txnbuild.CreditAsset{{Code: usdc.Code, Issuer: usdc.Issuer}}, Keys: signing.StaticKeys{K: keys},
		MaxFeeStroops: 1_000_000, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	orch := &transfer.Orchestrator{Store: store, Ledger: ledger, Clock: clock, Logger: slog.New(slog.DiscardHandler)}
	in := transfer.Input{ClientKey: "payout-frozen", Request: transfer.Request{OperationType: transfer.Withdraw,
		WalletAddress: wallet, Amount: "5", Asset: "USDC", Stroops: 5 * unit}}

	_, err = orch.Transfer(context.Background(), in)
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Problem().Kind != transfer.KindUnavailable || !strings.Contains(u.Detail, "txFROZEN_KEY_ACCESSED") {
		t.Fatalf("payment to a frozen trustline: %v, want a retryable 503 naming txFROZEN_KEY_ACCESSED", err)
	}
	if len(n.Applied()) != 0 {
		t.Fatalf("applied %+v, want nothing", n.Applied())
	}
	if _, err := store.Get(context.Background(), transfer.StoreKey(wallet, in.ClientKey)); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the key is still held (%v): want it released", err)
	}

	if err := n.UnfreezeKeys(line); err != nil {
		t.Fatal(err)
	}
	out, err := orch.Transfer(context.Background(), in)
	if err != nil || out.Replayed {
		t.Fatalf("retry after unfreezing: %+v %v", out, err)
	}
	if got, _ := n.Balance(wallet, usdc); got != 5*unit {
		t.Fatalf("wallet holds %d, want exactly one payment of 5", got)
	}
}
