package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/config"
)

func env(m map[string]string) config.Getenv { return func(k string) string { return m[k] } }

func TestSettingsDefaultsAndOverrides(t *testing.T) {
	s := config.Settings(env(nil))
	if s.Timeout != 45*time.Second || s.KeyTTL != 24*time.Hour || s.MaxKeyLength != 255 {
		t.Fatalf("defaults = %+v", s)
	}
	s = config.Settings(env(map[string]string{
		"TRANSFER_ORCHESTRATION_TIMEOUT_MS": "20000", "TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH": "64",
		"IDEMPOTENCY_KEY_TTL_MS": "60000",
	}))
	if s.Timeout != 20*time.Second || s.MaxKeyLength != 64 || s.KeyTTL != time.Minute {
		t.Fatalf("overrides = %+v", s)
	}
	if s := config.Settings(env(map[string]string{"TRANSFER_ORCHESTRATION_TIMEOUT_MS": "-1", "TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH": "3"})); s.Timeout != 45*time.Second || s.MaxKeyLength != 255 {
		t.Fatalf("invalid per-call values fall back to defaults: %+v", s)
	}
}

func TestLoad(t *testing.T) {
	good := map[string]string{
		"TABLE_NAME": "transfers", "STELLAR_RPC_URL": "http://127.0.0.1:8010/rpc",
		"NETWORK_PASSPHRASE": "Standalone Network ; February 2017", "VAULT_ACCOUNT": "gabc",
		"ASSETS": "usdc:gissuer, EURC:GOTHER",
	}
	c, err := config.Load(env(good))
	if err != nil {
		t.Fatal(err)
	}
	if c.Backend != "rpc" || c.VaultAccount != "GABC" || len(c.Assets) != 2 || c.Assets[0].Code != "usdc" || c.Assets[0].Issuer != "GISSUER" {
		t.Fatalf("config = %+v", c)
	}
	if c.Breaker.FailureThreshold != 5 || c.Breaker.ResetTimeout != 30*time.Second || c.MaxFeeStroops != 100_000 {
		t.Fatalf("defaults = %+v", c)
	}
	bad := map[string]string{"STELLAR_BACKEND": "carrier-pigeon", "ASSETS": "USDC", "MAX_FEE_STROOPS": "ten",
		"CIRCUIT_BREAKER_RESET_TIMEOUT_MS": "soon", "IDEMPOTENCY_KEY_TTL_MS": "3599999"}
	_, err = config.Load(env(bad))
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"TABLE_NAME", "STELLAR_BACKEND", "NETWORK_PASSPHRASE", "VAULT_ACCOUNT", "ASSETS", "MAX_FEE_STROOPS", "CIRCUIT_BREAKER_RESET_TIMEOUT_MS", "IDEMPOTENCY_KEY_TTL_MS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}
