package config

import (
	"reflect"
	"strings"
	"testing"
)

const (
	testContract  = "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"
	testContract2 = "CAAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQCAIBAEAQC526"
	testIssuer    = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"
)

func loadWith(extra map[string]string) (Config, error) {
	base := map[string]string{
		"TABLE_NAME": "t", "STELLAR_RPC_URL": "http://127.0.0.1:1/rpc", "NETWORK_PASSPHRASE": "p",
		"VAULT_ACCOUNT": testIssuer, "ASSETS": "USDC:" + testIssuer,
	}
	return Load(func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		return base[k]
	})
}

func TestLoadContract(t *testing.T) {
	c, err := loadWith(nil)
	if err != nil || c.VaultContract.Enabled() {
		t.Fatalf("unset: %+v %v", c.VaultContract, err)
	}
	c, err = loadWith(map[string]string{"VAULT_CONTRACT": strings.ToLower(testContract), "VAULT_CONTRACT_DECIMALS": "6",
		"VAULT_CONTRACT_WITHDRAW_FN": "redeem"})
	want := Contract{Contracts: []AssetContract{{Code: "USDC", Contract: testContract}}, DepositFn: "deposit", WithdrawFn: "redeem", Decimals: 6}
	if err != nil || !reflect.DeepEqual(c.VaultContract, want) {
		t.Fatalf("set: %+v %v", c.VaultContract, err)
	}
	for _, bad := range []map[string]string{
		{"VAULT_CONTRACT": testIssuer},
		{"VAULT_CONTRACT": testContract, "VAULT_CONTRACT_DECIMALS": "0"},
		{"VAULT_CONTRACT": testContract, "VAULT_CONTRACT_DECIMALS": "19"},
		{"VAULT_CONTRACT": testContract, "VAULT_CONTRACT_DEPOSIT_FN": "de-posit"},
		{"VAULT_CONTRACT": testContract, "STELLAR_BACKEND": "horizon", "HORIZON_URL": "http://127.0.0.1:1"},
		// Line breaks inside an address: strkey's base32 would skip them.
		{"VAULT_CONTRACT": testContract[:20] + "\r\n" + testContract[20:]},
	} {
		if _, err := loadWith(bad); err == nil || !strings.Contains(err.Error(), "VAULT_CONTRACT") {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

// With two assets and one VAULT_CONTRACT, a withdrawal of EURC would call the USDC contract.
// One contract per asset (VAULT_CONTRACTS), or refused at init.
func TestLoadContractsOnePerAsset(t *testing.T) {
	two := "USDC:" + testIssuer + ",eurC:" + testIssuer
	if _, err := loadWith(map[string]string{"ASSETS": two, "VAULT_CONTRACT": testContract}); err == nil ||
		!strings.Contains(err.Error(), "VAULT_CONTRACTS") {
		t.Fatalf("one contract for two assets: %v", err)
	}
	c, err := loadWith(map[string]string{"ASSETS": two, "VAULT_CONTRACTS": " EURC:" + strings.ToLower(testContract2) + ", usdc:" + testContract})
	want := []AssetContract{{Code: "USDC", Contract: testContract}, {Code: "eurC", Contract: testContract2}}
	if err != nil || !reflect.DeepEqual(c.VaultContract.Contracts, want) || c.VaultContract.Decimals != 7 {
		t.Fatalf("VAULT_CONTRACTS: %+v %v", c.VaultContract, err)
	}
	for name, v := range map[string]map[string]string{
		"same contract twice": {"ASSETS": two, "VAULT_CONTRACTS": "USDC:" + testContract + ",EURC:" + testContract},
		"asset missing":       {"ASSETS": two, "VAULT_CONTRACTS": "USDC:" + testContract},
		"asset unknown":       {"ASSETS": two, "VAULT_CONTRACTS": "USDC:" + testContract + ",EURC:" + testContract2 + ",GBP:" + testContract[:55] + "A"},
		"unknown only":        {"VAULT_CONTRACTS": "USDC:" + testContract + ",GBPX:" + testContract2},
		"asset twice":         {"VAULT_CONTRACTS": "USDC:" + testContract + ",usdc:" + testContract2},
		"not a contract":      {"VAULT_CONTRACTS": "USDC:" + testIssuer},
		"no code":             {"VAULT_CONTRACTS": testContract},
		"both":                {"VAULT_CONTRACTS": "USDC:" + testContract, "VAULT_CONTRACT": testContract},
		"horizon":             {"VAULT_CONTRACTS": "USDC:" + testContract, "STELLAR_BACKEND": "horizon", "HORIZON_URL": "http://127.0.0.1:1"},
	} {
		if _, err := loadWith(v); err == nil || !strings.Contains(err.Error(), "VAULT_CONTRACT") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
