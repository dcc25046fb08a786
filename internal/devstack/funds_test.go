package devstack

import (
	"fmt"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// The local stack over HTTP, as a client sees it: a withdrawal above what the classic vault holds
// is refused before anything is sent (503 VAULT_UNDERFUNDED, retryable, with Retry-After), the
// key is free, no envelope reaches the network and no fee is charged; bad input on the same call
// is a 4xx, never a 500; once the vault is funded the same key pays exactly once.
func TestClassicVaultUnderfundedRefusedBeforeSendingOverHTTP(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	vault, wallet := s.Info.Vault.Account, s.Info.Wallets[0].Account
	held, err := s.Network.Balance(vault, s.usdc())
	if err != nil {
		t.Fatal(err)
	}
	xlm := func(account string) int64 {
		a, _ := s.Network.Account(account)
		return a.Balance
	}
	units := held/10_000_000 + 1 // one unit more than the vault holds
	envelopes, items := len(transferEnvelopes(s)), itemCount(t, s)
	vaultXLM, feeXLM := xlm(vault), xlm(s.Info.FeeAccount.Account)

	r := post(t, s, "order-underfunded-1", withdraw(wallet, fmt.Sprint(units)))
	if r.status != 503 || r.body["code"] != "VAULT_UNDERFUNDED" || r.body["classification"] != "retryable" || r.header.Get("Retry-After") == "" {
		t.Fatalf("above the vault's balance = %d %v %v, want 503 VAULT_UNDERFUNDED with Retry-After", r.status, r.body, r.header)
	}
	if got := transferEnvelopes(s); len(got) != envelopes {
		t.Fatalf("the network received %d envelopes, want none: %+v", len(got)-envelopes, got[envelopes:])
	}
	if got := itemCount(t, s); got != items {
		t.Fatalf("%d items, want %d: the key must be free", got, items)
	}
	if v, f := xlm(vault), xlm(s.Info.FeeAccount.Account); v != vaultXLM || f != feeXLM {
		t.Fatalf("XLM vault %d -> %d, fee account %d -> %d: want no fee charged", vaultXLM, v, feeXLM, f)
	}
	for _, body := range []string{
		withdraw(wallet, "-5"), withdraw(wallet, "abc"), withdraw(wallet, "99999999999999999999999"),
		withdraw(badChecksum(wallet), fmt.Sprint(units)), `{"operationType":"withdraw"}`, `not json`,
	} {
		if bad := post(t, s, "order-underfunded-bad", body); bad.status < 400 || bad.status >= 500 {
			t.Fatalf("%s = %d %v, want a 4xx", body, bad.status, bad.body)
		}
	}

	if err := s.Network.Mint(vault, s.usdc(), 10_000_000*units); err != nil { // an operator funds the vault
		t.Fatal(err)
	}
	before, _ := s.Network.Balance(wallet, s.usdc())
	paid := post(t, s, "order-underfunded-1", withdraw(wallet, fmt.Sprint(units)))
	if paid.status != 200 || paid.body["replayed"] != false {
		t.Fatalf("after funding = %d %v", paid.status, paid.body)
	}
	if again := post(t, s, "order-underfunded-1", withdraw(wallet, fmt.Sprint(units))); again.status != 200 || again.body["replayed"] != true {
		t.Fatalf("replay = %d %v", again.status, again.body)
	}
	if after, _ := s.Network.Balance(wallet, s.usdc()); after-before != 10_000_000*units {
		t.Fatalf("wallet moved by %d stroops, want %d once", after-before, 10_000_000*units)
	}
}

// The fee account that pays the channels' fee bumps left with less than one fee above its
// reserve: 503 FEE_ACCOUNT_UNDERFUNDED before anything is sent, the key free; once funded, the
// same key pays.
func TestFeeAccountUnderfundedRefusedBeforeSendingOverHTTP(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	if len(s.Info.Channels) == 0 {
		t.Skip("the stack runs without channel accounts: the vault pays its own fees")
	}
	fee, wallet := s.Info.FeeAccount.Account, s.Info.Wallets[0].Account
	a, _ := s.Network.Account(fee)
	reserve := int64(2+a.NumSubEntries+a.NumSponsoring-a.NumSponsored) * 5_000_000
	if err := s.Network.Burn(fee, stellarsim.Native, a.Balance-reserve-50); err != nil {
		t.Fatal(err)
	}
	envelopes, items := len(transferEnvelopes(s)), itemCount(t, s)
	r := post(t, s, "order-feeshort-1", withdraw(wallet, "1"))
	if r.status != 503 || r.body["code"] != "FEE_ACCOUNT_UNDERFUNDED" || r.header.Get("Retry-After") == "" {
		t.Fatalf("fee account short = %d %v, want 503 FEE_ACCOUNT_UNDERFUNDED", r.status, r.body)
	}
	if got := len(transferEnvelopes(s)); got != envelopes {
		t.Fatalf("the network received %d envelopes, want none", got-envelopes)
	}
	if got := itemCount(t, s); got != items {
		t.Fatalf("%d items, want %d: the key must be free", got, items)
	}
	if err := s.Network.Mint(fee, stellarsim.Native, 10_000_000); err != nil {
		t.Fatal(err)
	}
	if paid := post(t, s, "order-feeshort-1", withdraw(wallet, "1")); paid.status != 200 {
		t.Fatalf("after funding = %d %v", paid.status, paid.body)
	}
}
