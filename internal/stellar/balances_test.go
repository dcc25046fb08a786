package stellar

import (
	"context"
	"errors"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// Both backends read the same balances from the local network: the vault's XLM and USDC, a
// wallet's zero USDC, and a missing account as ErrAccountMissing.
func TestBalancesFromRPCAndHorizon(t *testing.T) {
	s := startSim(t)
	h, err := NewHorizonLedger(HorizonConfig{
		URL: s.net.URL(), Passphrase: s.net.Passphrase(), VaultAccount: s.vault,
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: s.usdc.Issuer}}, Keys: s.ledger.keys,
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, read := range map[string]func(context.Context, string) (Balances, error){
		"rpc": s.ledger.Balances, "horizon": h.Balances,
	} {
		b, err := read(context.Background(), s.vault)
		if err != nil || b.Native != 100*unit || len(b.Credit) != 1 || b.Credit["USDC"] != 1_000*unit {
			t.Errorf("%s: vault balances %+v, %v; want 100 XLM and 1000 USDC", name, b, err)
		}
		b, err = read(context.Background(), s.wallet)
		if got, ok := b.Credit["USDC"]; err != nil || b.Native != 10*unit || !ok || got != 0 {
			t.Errorf("%s: wallet balances %+v, %v; want 10 XLM and 0 USDC", name, b, err)
		}
		if _, err := read(context.Background(), keypair.MustRandom().Address()); !errors.Is(err, ErrAccountMissing) {
			t.Errorf("%s: a missing account: %v, want ErrAccountMissing", name, err)
		}
	}
}
