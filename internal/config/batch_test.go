package config

import (
	"strings"
	"testing"
)

// BATCH_SIZE: 1 to 100, read per call; above 1 only with a classic vault (a Soroban transaction
// holds one operation).
func TestBatchSize(t *testing.T) {
	if _, err := loadWith(map[string]string{"BATCH_SIZE": "50"}); err != nil {
		t.Fatalf("BATCH_SIZE 50: %v", err)
	}
	if s := Settings(func(k string) string { return map[string]string{"BATCH_SIZE": "50"}[k] }); s.BatchSize != 50 {
		t.Fatalf("Settings.BatchSize = %d, want 50", s.BatchSize)
	}
	if s := Settings(func(string) string { return "" }); s.BatchSize != 0 {
		t.Fatalf("unset BATCH_SIZE gives %d, want 0 (each transfer alone)", s.BatchSize)
	}
	for _, bad := range []string{"0", "101", "-3", "ten"} {
		if _, err := loadWith(map[string]string{"BATCH_SIZE": bad}); err == nil || !strings.Contains(err.Error(), "BATCH_SIZE") {
			t.Fatalf("BATCH_SIZE %q: %v", bad, err)
		}
	}
	if _, err := loadWith(map[string]string{"BATCH_SIZE": "10", "VAULT_CONTRACT": testContract}); err == nil ||
		!strings.Contains(err.Error(), "BATCH_SIZE 10 needs a classic vault") {
		t.Fatalf("BATCH_SIZE 10 with a vault contract: %v", err)
	}
	if _, err := loadWith(map[string]string{"BATCH_SIZE": "1", "VAULT_CONTRACT": testContract}); err != nil {
		t.Fatalf("BATCH_SIZE 1 with a vault contract: %v", err)
	}
}
