package config_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func limitsEnv(limits string) config.Getenv {
	return env(map[string]string{
		"TABLE_NAME": "transfers", "STELLAR_RPC_URL": "http://127.0.0.1:8010/rpc",
		"NETWORK_PASSPHRASE": "Standalone Network ; February 2017", "VAULT_ACCOUNT": "GABC",
		"ASSETS": "USDC:GISSUER,EURC:GOTHER", "LIMITS": limits,
	})
}

func TestLoadLimits(t *testing.T) {
	c, err := config.Load(limitsEnv(` {"USDC": {"perTransfer": "5000", "walletDaily": "20000.5", "assetDaily": "1000000"},
		"EURC": {"walletDaily": "0.0000001"}} `))
	if err != nil {
		t.Fatal(err)
	}
	want := transfer.Limits{
		"USDC": {PerTransfer: 5000 * transfer.StroopsPerUnit, WalletDaily: 20000*transfer.StroopsPerUnit + 5_000_000, AssetDaily: 1_000_000 * transfer.StroopsPerUnit},
		"EURC": {WalletDaily: 1},
	}
	if !reflect.DeepEqual(c.Limits, want) {
		t.Fatalf("Limits = %+v, want %+v", c.Limits, want)
	}
	if c, err := config.Load(limitsEnv("")); err != nil || c.Limits != nil {
		t.Fatalf("no LIMITS: %+v, %v; want none", c.Limits, err)
	}
}

func TestLoadRefusesBadLimitsWithAClearError(t *testing.T) {
	for limits, want := range map[string]string{
		`[]`:                                                           "LIMITS must be a JSON object",
		`{"USDC": {"perTransfer": 5000}}`:                              "perTransfer must be a string, not a JSON number",
		`{"USDC": {"perTransfer": "-1"}}`:                              "USDC.perTransfer must be a positive decimal amount",
		`{"USDC": {"perTransfer": "0"}}`:                               "USDC.perTransfer must be a positive decimal amount",
		`{"USDC": {"walletDaily": "1.00000001"}}`:                      "USDC.walletDaily must be a positive decimal amount",
		`{"USDC": {"perTransfer": "1e3"}}`:                             "USDC.perTransfer must be a positive decimal amount",
		`{"USDC": {"daily": "5"}}`:                                     `unknown field "daily"`,
		`{"USDC": {"PerTransfer": "5"}}`:                               `did you mean "perTransfer"`,
		`{"USDC": {}}`:                                                 "USDC sets no limit",
		`{"usdc": {"perTransfer": "5"}}`:                               "usdc is not an asset of ASSETS (asset codes are case-sensitive: ASSETS spells it USDC)",
		`{"XLM": {"perTransfer": "5"}}`:                                "XLM is not an asset of ASSETS",
		`{"USDC": {"perTransfer": "5"}, "USDC": {"perTransfer": "6"}}`: "USDC appears more than once",
		`{"USDC": {"perTransfer": "5", "perTransfer": "6"}}`:           `field "perTransfer" appears more than once`,
		`{"USDC": {"perTransfer": "5"}} {}`:                            "unexpected data after the JSON object",
		`{"USDC": {"perTransfer": "5"}`:                                "LIMITS ends in the middle",
		`{"USDC": {"perTransfer": "SBSECRETSEEDSHOULDNEVERSHOWUP"}}`:   "USDC.perTransfer must be a positive decimal amount",
	} {
		_, err := config.Load(limitsEnv(limits))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("LIMITS=%s: %v, want an error saying %q", limits, err, want)
			continue
		}
		if strings.Contains(err.Error(), "SBSECRET") {
			t.Errorf("LIMITS=%s: the error echoes a value: %v", limits, err)
		}
	}
}
