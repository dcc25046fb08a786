package config

import (
	"strings"
	"testing"
)

func TestLoadContract(t *testing.T) {
	const contract = "CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE"
	base := map[string]string{
		"TABLE_NAME": "t", "STELLAR_RPC_URL": "http://127.0.0.1:1/rpc", "NETWORK_PASSPHRASE": "p",
		"VAULT_ACCOUNT": "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7",
		"ASSETS":        "USDC:GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7",
	}
	load := func(extra map[string]string) (Config, error) {
		return Load(func(k string) string {
			if v, ok := extra[k]; ok {
				return v
			}
			return base[k]
		})
	}
	c, err := load(nil)
	if err != nil || c.VaultContract != (Contract{}) {
		t.Fatalf("unset: %+v %v", c.VaultContract, err)
	}
	c, err = load(map[string]string{"VAULT_CONTRACT": strings.ToLower(contract), "VAULT_CONTRACT_DECIMALS": "6",
		"VAULT_CONTRACT_WITHDRAW_FN": "redeem"})
	want := Contract{Contract: contract, DepositFn: "deposit", WithdrawFn: "redeem", Decimals: 6}
	if err != nil || c.VaultContract != want {
		t.Fatalf("set: %+v %v", c.VaultContract, err)
	}
	for _, bad := range []map[string]string{
		{"VAULT_CONTRACT": "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"},
		{"VAULT_CONTRACT": contract, "VAULT_CONTRACT_DECIMALS": "0"},
		{"VAULT_CONTRACT": contract, "VAULT_CONTRACT_DEPOSIT_FN": "de-posit"},
		{"VAULT_CONTRACT": contract, "STELLAR_BACKEND": "horizon", "HORIZON_URL": "http://127.0.0.1:1"},
	} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "VAULT_CONTRACT") {
			t.Fatalf("%v: %v", bad, err)
		}
	}
}
