package config_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH is bounded above by what DynamoDB's index sort keys hold
// (transfer.MaxKeyLengthBound): a larger value is refused at init with the range in the message,
// and read per call it falls back to the default as any invalid value does.
func TestMaxKeyLengthAboveTheIndexBoundIsRefused(t *testing.T) {
	base := map[string]string{
		"TABLE_NAME": "transfers", "STELLAR_RPC_URL": "http://127.0.0.1:8010/rpc",
		"NETWORK_PASSPHRASE": "Standalone Network ; February 2017", "VAULT_ACCOUNT": "gabc", "ASSETS": "usdc:gissuer",
	}
	with := func(v string) map[string]string {
		m := map[string]string{"TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH": v}
		for k, x := range base {
			m[k] = x
		}
		return m
	}
	bound := strconv.Itoa(transfer.MaxKeyLengthBound)
	for _, ok := range []string{"8", "255", bound} {
		if _, err := config.Load(env(with(ok))); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
		if got := config.Settings(env(with(ok))).MaxKeyLength; strconv.Itoa(got) != ok {
			t.Errorf("Settings with %s: MaxKeyLength %d", ok, got)
		}
	}
	for _, bad := range []string{strconv.Itoa(transfer.MaxKeyLengthBound + 1), "1000", "2048", "7"} {
		_, err := config.Load(env(with(bad)))
		if err == nil || !strings.Contains(err.Error(), "TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH must be a whole number from 8 to "+bound) ||
			!strings.Contains(err.Error(), "1,024-byte index sort keys") {
			t.Errorf("%s: %v, want a refusal naming the range and why", bad, err)
		}
		if got := config.Settings(env(with(bad))).MaxKeyLength; got != transfer.DefaultMaxKeyLength {
			t.Errorf("Settings with %s: MaxKeyLength %d, want the default %d", bad, got, transfer.DefaultMaxKeyLength)
		}
	}
}
