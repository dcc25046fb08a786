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

func TestLoadSigner(t *testing.T) {
	base := map[string]string{
		"TABLE_NAME": "transfers", "STELLAR_RPC_URL": "http://127.0.0.1:8010/rpc",
		"NETWORK_PASSPHRASE": "Standalone Network ; February 2017", "VAULT_ACCOUNT": "GABC", "ASSETS": "USDC:GISSUER",
	}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	c, err := config.Load(env(base))
	if err != nil || c.Signer != config.SignerSecrets {
		t.Fatalf("default signer = %q, %v", c.Signer, err)
	}
	arn := "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	c, err = config.Load(env(with("SIGNER", "KMS", "VAULT_KMS_KEY_ID", arn, "FEE_KMS_KEY_ID", "alias/fee", "CHANNEL_COUNT", "4")))
	if err != nil || c.Signer != config.SignerKMS || c.VaultKMSKeyID != arn || c.FeeKMSKeyID != "alias/fee" {
		t.Fatalf("kms config = %+v, %v", c, err)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		want string
	}{
		"unknown signer":       {with("SIGNER", "hsm"), "SIGNER must be secrets or kms"},
		"no vault key":         {with("SIGNER", "kms"), "VAULT_KMS_KEY_ID is required"},
		"channels, no fee key": {with("SIGNER", "kms", "VAULT_KMS_KEY_ID", arn, "CHANNEL_COUNT", "2"), "FEE_KMS_KEY_ID is required"},
		"key with a space":     {with("SIGNER", "kms", "VAULT_KMS_KEY_ID", "alias/my key"), "VAULT_KMS_KEY_ID must be a KMS key"},
	} {
		if _, err := config.Load(env(tc.env)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
