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

// BATCH_OPS_PER_LEDGER holds the batches' operation slots per ledger: CHANNEL_COUNT x (batch + 1)
// with channels (a fee bump counts one slot more), the batch alone on the vault; never below 1.
func TestBatchWithinLedgerShare(t *testing.T) {
	for _, c := range []struct{ size, channels, ops, want int }{
		{100, 4, 500, 100},   // 404 slots
		{100, 16, 500, 30},   // 16 x 31 = 496
		{100, 16, 1616, 100}, // exactly 16 x 101
		{100, 0, 500, 100},   // the vault: one transaction of 100 a ledger
		{100, 0, 60, 60},
		{10, 300, 500, 1}, // no room for 2 + 1 a channel: each alone
		{1, 16, 500, 1},
		{0, 16, 500, 0},
	} {
		if got := BatchWithinLedgerShare(c.size, c.channels, c.ops); got != c.want {
			t.Errorf("BatchWithinLedgerShare(%d, %d channels, %d ops) = %d, want %d", c.size, c.channels, c.ops, got, c.want)
		}
	}
	env := func(m map[string]string) Getenv { return func(k string) string { return m[k] } }
	if s := Settings(env(map[string]string{"BATCH_SIZE": "100", "CHANNEL_COUNT": "16"})); s.BatchSize != 30 {
		t.Errorf("16 channels, BATCH_SIZE 100, the default share: Settings.BatchSize = %d, want 30", s.BatchSize)
	}
	if s := Settings(env(map[string]string{"BATCH_SIZE": "100", "CHANNEL_COUNT": "16", "BATCH_OPS_PER_LEDGER": "5000"})); s.BatchSize != 100 {
		t.Errorf("16 channels, BATCH_SIZE 100, 5,000 slots: Settings.BatchSize = %d, want 100", s.BatchSize)
	}
	for _, bad := range []string{"0", "-1", "lots"} {
		if _, err := loadWith(map[string]string{"BATCH_OPS_PER_LEDGER": bad}); err == nil || !strings.Contains(err.Error(), "BATCH_OPS_PER_LEDGER") {
			t.Errorf("BATCH_OPS_PER_LEDGER %q: %v", bad, err)
		}
	}
}

// SUBMITTER_TRANSACTIONS_PER_INVOCATION: the batches one submitter event forms at most
// (template.yaml's k), read per call; unset is 0, no bound; anything but a positive whole number
// fails Load.
func TestTransactionsPerInvocation(t *testing.T) {
	env := func(m map[string]string) Getenv { return func(k string) string { return m[k] } }
	if s := Settings(env(map[string]string{"SUBMITTER_TRANSACTIONS_PER_INVOCATION": "8"})); s.TransactionsPerInvocation != 8 {
		t.Errorf("Settings.TransactionsPerInvocation = %d, want 8", s.TransactionsPerInvocation)
	}
	if s := Settings(env(nil)); s.TransactionsPerInvocation != 0 {
		t.Errorf("unset: Settings.TransactionsPerInvocation = %d, want 0", s.TransactionsPerInvocation)
	}
	if _, err := loadWith(map[string]string{"SUBMITTER_TRANSACTIONS_PER_INVOCATION": "2"}); err != nil {
		t.Errorf("SUBMITTER_TRANSACTIONS_PER_INVOCATION 2: %v", err)
	}
	for _, bad := range []string{"0", "-1", "eight"} {
		if _, err := loadWith(map[string]string{"SUBMITTER_TRANSACTIONS_PER_INVOCATION": bad}); err == nil || !strings.Contains(err.Error(), "SUBMITTER_TRANSACTIONS_PER_INVOCATION") {
			t.Errorf("SUBMITTER_TRANSACTIONS_PER_INVOCATION %q: %v", bad, err)
		}
	}
}

// A batched submitter whose BATCH_OPS_PER_LEDGER makes its batches smaller than BATCH_SIZE is
// told so at init, with the size that fits; one within its share, or unbatched, is told nothing.
func TestBatchShareNoteNamesTheSizeThatFits(t *testing.T) {
	env := func(kv ...string) Getenv {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	note := BatchShareNote(env("BATCH_SIZE", "100", "CHANNEL_COUNT", "16"))
	if !strings.Contains(note, "BATCH_SIZE 100") || !strings.Contains(note, "at most 30") || !strings.Contains(note, "dead-letter") {
		t.Errorf("100 a transaction on 16 channels at the default 500: %q; want the size that fits (30) and the dead-letter risk", note)
	}
	for _, quiet := range []Getenv{
		env("BATCH_SIZE", "25", "CHANNEL_COUNT", "16"),
		env("BATCH_SIZE", "100", "CHANNEL_COUNT", "16", "BATCH_OPS_PER_LEDGER", "1616"),
		env("BATCH_SIZE", "1", "CHANNEL_COUNT", "16"),
		env("CHANNEL_COUNT", "16"),
		env("BATCH_SIZE", "ten"),
	} {
		if note := BatchShareNote(quiet); note != "" {
			t.Errorf("BatchShareNote = %q; want none", note)
		}
	}
}

// BatchSizeSet is BATCH_SIZE as set, before BATCH_OPS_PER_LEDGER's share: 10 at 4 channels and 8
// slots, where Settings.BatchSize is 1; 0 when unset or out of range.
func TestBatchSizeSetIsBeforeTheShare(t *testing.T) {
	env := func(m map[string]string) Getenv { return func(k string) string { return m[k] } }
	share := map[string]string{"BATCH_SIZE": "10", "CHANNEL_COUNT": "4", "BATCH_OPS_PER_LEDGER": "8"}
	if got, s := BatchSizeSet(env(share)), Settings(env(share)); got != 10 || s.BatchSize != 1 {
		t.Errorf("BatchSizeSet = %d, Settings.BatchSize = %d; want 10 and 1", got, s.BatchSize)
	}
	for _, v := range []string{"", "0", "101", "ten"} {
		if got := BatchSizeSet(env(map[string]string{"BATCH_SIZE": v})); got != 0 {
			t.Errorf("BATCH_SIZE %q: BatchSizeSet = %d, want 0", v, got)
		}
	}
}
