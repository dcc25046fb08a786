package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/devstack"
)

// PORT_BASE moves every listener; an *_ADDR moves one; a bad PORT_BASE is refused.
func TestListenAddrsFollowPortBase(t *testing.T) {
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	got, err := listenAddrs(env(nil))
	if err != nil || got != (addrs{"127.0.0.1:3000", "127.0.0.1:3001", "127.0.0.1:8000", "127.0.0.1:8010", "127.0.0.1:8020", "127.0.0.1:4318"}) {
		t.Fatalf("defaults: %+v, %v", got, err)
	}
	got, err = listenAddrs(env(map[string]string{"PORT_BASE": "4100", "KMS_ADDR": "127.0.0.1:9999"}))
	if err != nil || got != (addrs{"127.0.0.1:4100", "127.0.0.1:4101", "127.0.0.1:4102", "127.0.0.1:4103", "127.0.0.1:9999", "127.0.0.1:4105"}) {
		t.Fatalf("PORT_BASE=4100: %+v, %v", got, err)
	}
	for _, bad := range []string{"80", "65531", "4100x", "-1"} {
		if _, err := listenAddrs(env(map[string]string{"PORT_BASE": bad})); err == nil {
			t.Errorf("PORT_BASE=%s accepted", bad)
		}
	}
}

// The banner's export line names every address README.md's examples use, each where the stack
// listens, so the examples work on whatever ports PORT_BASE gave it.
func TestBannerExportsTheExamplesVariables(t *testing.T) {
	info := devstack.Info{
		APIURL: "http://127.0.0.1:4100", LambdaURL: "http://127.0.0.1:4101", DynamoDBEndpoint: "http://127.0.0.1:4102",
		HorizonURL: "http://127.0.0.1:4103", AdminURL: "http://127.0.0.1:4103/_sim/", Table: "transfers",
		Wallets: []devstack.Account{{Account: "GWALLET"}},
	}
	var out strings.Builder
	printBanner(&out, info)
	want := "  export API=http://127.0.0.1:4100 LAMBDA=http://127.0.0.1:4101 DYNAMO=http://127.0.0.1:4102 SIM=http://127.0.0.1:4103 WALLET=GWALLET\n"
	if !strings.Contains(out.String(), "\n"+want) {
		t.Fatalf("the banner has no line %q:\n%s", want, out.String())
	}
}

// The banner shows a generated webhook secret once, on the line right after the Webhook line it
// signs for, and the limits in force (LIMITS), an asset a line with each cap in the asset's
// units; without LIMITS it says there are none.
func TestBannerShowsTheWebhookSecretBesideItsURLAndTheLimits(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	info := devstack.Info{
		APIURL: "http://127.0.0.1:3000", WebhookURL: "http://127.0.0.1:8080/hook", WebhookSecret: secret,
		Limits: map[string]devstack.AssetLimits{"USDC": {PerTransfer: "5000", WalletDaily: "20"}, "EURC": {AssetDaily: "0.5"}},
	}
	var out strings.Builder
	printBanner(&out, info)
	lines := strings.Split(out.String(), "\n")
	webhook := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "  Webhook ") })
	if webhook < 0 || webhook+1 >= len(lines) || !strings.Contains(lines[webhook+1], secret) {
		t.Fatalf("the secret is not on the line after the Webhook line:\n%s", out.String())
	}
	if n := strings.Count(out.String(), secret); n != 1 {
		t.Errorf("the secret is printed %d times, want once:\n%s", n, out.String())
	}
	for _, want := range []string{
		"  Limits (LIMITS)    EURC: asset daily 0.5 EURC\n",
		"                     USDC: per transfer 5000 USDC, wallet daily 20 USDC\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the banner has no line %q:\n%s", want, out.String())
		}
	}
	info.Limits, info.WebhookSecret = nil, ""
	out.Reset()
	printBanner(&out, info)
	if !strings.Contains(out.String(), "  Limits             none") || strings.Contains(out.String(), "whsec_") {
		t.Errorf("without LIMITS and with WEBHOOK_SECRET set:\n%s", out.String())
	}
}

// The banner names the vault contract the stack deployed and says whether the transfers go
// through it (VAULT_CONTRACT=local), as README.md's "The vault contract" has a newcomer start it.
func TestBannerSaysWhetherTheVaultContractIsInUse(t *testing.T) {
	const c = "CBYSU5D2RKSQOCPO4P7DH3Y55RCOZQPCTGEITXPD3JQLNCCQ4QZQTC45"
	for _, tc := range []struct {
		mode bool
		want string
	}{
		{false, "  Vault contract     " + c + "  (deployed, unused: VAULT_CONTRACT=local sends the transfers through it)\n"},
		{true, "  Vault contract     " + c + "  (VAULT_CONTRACT=local: deposits and withdrawals call it)\n"},
	} {
		var out strings.Builder
		printBanner(&out, devstack.Info{APIURL: "http://127.0.0.1:3000", VaultContract: c, ContractMode: tc.mode})
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("ContractMode %v: the banner has no line %q:\n%s", tc.mode, tc.want, out.String())
		}
	}
}
