package devstack

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// The vault contract on the local stack, over HTTP: deposits and withdrawals. Ledgers close every
// second here: a close time is at least one second after the previous one, so faster ledgers
// would run the network's clock ahead of the wall clock and expire envelopes (txTOO_LATE).

func startContractStack(t *testing.T) *Stack {
	t.Helper()
	env := map[string]string{"VAULT_CONTRACT": "local"}
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Info.VaultContract == "" || !s.Info.ContractMode {
		t.Fatalf("VAULT_CONTRACT=local: Info has contract %q, ContractMode %v; want one, true", s.Info.VaultContract, s.Info.ContractMode)
	}
	return s
}

func contractTransfer(op, wallet, amount string) string {
	return fmt.Sprintf(`{"operationType":%q,"walletAddress":%q,"amount":%q,"asset":"USDC"}`, op, wallet, amount)
}

// vaultBalance reads wallet's balance entry through getLedgerEntries, in the asset's smallest unit.
func vaultBalance(t *testing.T, s *Stack, wallet string) int64 {
	t.Helper()
	key, err := stellarsim.VaultBalanceKey(s.Info.VaultContract, wallet)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := xdr.MarshalBase64(key)
	c := rpcclient.NewClient(s.Info.RPCURL, nil)
	defer func() { _ = c.Close() }()
	resp, err := c.GetLedgerEntries(context.Background(), protocol.GetLedgerEntriesRequest{Keys: []string{kb}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Entries) == 0 {
		return 0
	}
	var data xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &data); err != nil || data.ContractData == nil || data.ContractData.Val.I128 == nil {
		t.Fatalf("entry %v %+v", err, data)
	}
	return int64(data.ContractData.Val.I128.Lo)
}

func TestContractDepositWithdrawOverHTTP(t *testing.T) {
	t.Parallel()
	s := startContractStack(t)
	wallet := s.Info.Wallets[0].Account

	r := post(t, s, "contract-deposit-1", contractTransfer("deposit", wallet, "12.5"))
	if r.status != http.StatusOK || r.body["transactionHash"] == "" {
		t.Fatalf("deposit: %d %v", r.status, r.body)
	}
	if got := vaultBalance(t, s, wallet); got != 125_000_000 {
		t.Fatalf("after deposit: %d", got)
	}
	r = post(t, s, "contract-withdraw-1", contractTransfer("withdraw", wallet, "2.5"))
	if r.status != http.StatusOK {
		t.Fatalf("withdraw: %d %v", r.status, r.body)
	}
	if got := vaultBalance(t, s, wallet); got != 100_000_000 {
		t.Fatalf("after withdraw: %d", got)
	}

	// Above the balance: VAULT_UNDERFUNDED, retryable (503), refused before sending as in
	// classic mode; nothing lands.
	applied := len(s.Network.Applied())
	r = post(t, s, "contract-withdraw-2", contractTransfer("withdraw", wallet, "10.0000001"))
	if r.status != http.StatusServiceUnavailable || r.body["code"] != "VAULT_UNDERFUNDED" || r.body["classification"] != "retryable" {
		t.Fatalf("withdraw above balance: %d %v", r.status, r.body)
	}
	if len(s.Network.Applied()) != applied || vaultBalance(t, s, wallet) != 100_000_000 {
		t.Fatal("something landed")
	}

	// An archived balance entry is restored and the withdraw completes within one request.
	req, _ := http.NewRequest(http.MethodPost, s.Info.AdminURL+"vaults/"+s.Info.VaultContract+"/balances/"+wallet+"/archive", nil)
	if a := do(t, req); a.status != http.StatusOK || a.body["archived"] != true {
		t.Fatalf("archive: %d %v", a.status, a.body)
	}
	r = post(t, s, "contract-withdraw-3", contractTransfer("withdraw", wallet, "4"))
	if r.status != http.StatusOK {
		for _, e := range s.Network.Envelopes()[len(s.Network.Envelopes())-min(6, len(s.Network.Envelopes())):] {
			t.Logf("%s %s %s %s %s", e.At.Format("15:04:05.000"), e.Status, e.Code, e.Outcome, e.Source)
		}
		t.Fatalf("withdraw after archival: %d %v", r.status, r.body)
	}
	if got := vaultBalance(t, s, wallet); got != 60_000_000 {
		t.Fatalf("after restore and withdraw: %d", got)
	}
}
