package wiring

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type fakeBalances map[string]stellar.Balances

func (f fakeBalances) Balances(_ context.Context, account string) (stellar.Balances, error) {
	b, ok := f[account]
	if !ok {
		return stellar.Balances{}, fmt.Errorf("%w: %s", stellar.ErrAccountMissing, account)
	}
	return b, nil
}

type fakeLeases map[string]dynamo.ChannelLease

func (f fakeLeases) Channel(_ context.Context, ch string) (dynamo.ChannelLease, error) {
	if ch == "GBROKEN" {
		return dynamo.ChannelLease{}, errors.New("throttled")
	}
	l, ok := f[ch]
	if !ok {
		return dynamo.ChannelLease{}, transfer.ErrNotFound
	}
	return l, nil
}

type gaugeLog []string

func (g *gaugeLog) BalanceGauge(_ context.Context, account, asset string, stroops int64) {
	*g = append(*g, fmt.Sprintf("%s/%s=%d", account, asset, stroops))
}
func (g *gaugeLog) ChannelLeasesGauge(_ context.Context, n int) {
	*g = append(*g, fmt.Sprintf("leases=%d", n))
}

type fixedClock time.Time

func (c fixedClock) Now() time.Time { return time.Time(c) }

// Watch writes the vault's XLM and every configured asset (0 without a trustline), the fee
// account's XLM, and the channels that cannot be leased now (a live lease or quarantine).
func TestWatchWritesBalancesAndLeases(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var g gaugeLog
	var logs bytes.Buffer
	w := &Watch{
		Ledger: fakeBalances{
			"GVAULT": {Native: 50_000_000, Credit: map[string]int64{"USDC": 12_000_000_000}},
			"GFEE":   {Native: 7_000_000},
		},
		Gauges: &g, Vault: "GVAULT", Assets: []string{"USDC", "EURC"},
		Accounts: func(context.Context) (string, []string, error) {
			return "GFEE", []string{"GC1", "GC2", "GC3", "GC4"}, nil
		},
		Leases: fakeLeases{
			"GC1": {LeaseExpiresAt: now.Add(time.Second)},                                           // leased
			"GC2": {LeaseExpiresAt: now.Add(-time.Second), QuarantinedUntil: now.Add(time.Minute)},  // quarantined
			"GC3": {LeaseExpiresAt: now.Add(-time.Second), QuarantinedUntil: now.Add(-time.Second)}, // free again
		},
		Clock: fixedClock(now), Logger: logging.New(&logs, slog.LevelInfo),
	}
	w.Run(context.Background())
	want := "vault/XLM=50000000 vault/USDC=12000000000 vault/EURC=0 fee/XLM=7000000 leases=2"
	if got := strings.Join(g, " "); got != want {
		t.Fatalf("gauges %q, want %q", got, want)
	}
	if logs.Len() != 0 {
		t.Fatalf("logged %s", logs.Bytes())
	}

	// A failed read writes nothing for what it would have read (the alarm sees missing data) and
	// is logged; the other gauges are still written.
	g, logs = nil, bytes.Buffer{}
	w.Vault = "GGONE"
	w.Accounts = func(context.Context) (string, []string, error) { return "GFEE", []string{"GC1", "GBROKEN"}, nil }
	w.Run(context.Background())
	if got := strings.Join(g, " "); got != "fee/XLM=7000000" {
		t.Fatalf("gauges after failures %q", got)
	}
	if !strings.Contains(logs.String(), "vault's balances failed") || !strings.Contains(logs.String(), "channel leases failed") {
		t.Fatalf("failures not logged: %s", logs.Bytes())
	}

	// Without keys (no SIGNING_SECRET_ARN): the vault only.
	g = nil
	w = &Watch{Ledger: fakeBalances{"GVAULT": {Native: 1}}, Gauges: &g, Vault: "GVAULT", Assets: []string{"USDC"}}
	w.Run(context.Background())
	if got := strings.Join(g, " "); got != "vault/XLM=1 vault/USDC=0" {
		t.Fatalf("gauges without keys %q", got)
	}
}

// With SIGNER=kms the fee account is the KMS key's address (Keys.FeeSigner), not a seed's: the
// watch reports that account's balance, or the fee balance alarm (missing data breaches) would
// fire forever.
func TestKeyAccountsNamesTheSignersFeeAccount(t *testing.T) {
	fee := keypair.MustRandom()
	accounts := KeyAccounts(signing.StaticKeys{K: signing.Keys{Vault: keypair.MustRandom(), FeeSigner: signing.SeedSigner{KP: fee}}}, nil)
	got, chans, err := accounts(context.Background())
	if err != nil || got != fee.Address() || len(chans) != 0 {
		t.Fatalf("KeyAccounts = %q %v %v, want the fee signer's address %s", got, chans, err, fee.Address())
	}
}
