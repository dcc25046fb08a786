package devstack

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// With SIGNER=kms the stack checks, before it serves, that the vault's KMS key can sign for the
// vault (wiring.SignerCheck, as the functions' init does), on the local network through Stellar
// RPC and with the key read from the local KMS over HTTP: a key that is not a signer, or whose
// weight is below the medium threshold, stops the start with an error naming the vault, the
// key's public key and KMS key ARN, and the weights found and needed; a key with the weight
// starts, and pays.
func TestKMSSignerCheckedAtStart(t *testing.T) {
	th := func(v uint8) *txnbuild.Threshold { x := txnbuild.Threshold(v); return &x }
	for _, c := range []struct {
		name    string
		options func(kmsKey string) *txnbuild.SetOptions
		// weight and needed are the refusal's figures; needed 0: the stack starts.
		weight, needed int
		says           string
	}{
		{name: "not a signer", options: func(string) *txnbuild.SetOptions { return nil },
			weight: 0, needed: 1, says: "its weight there is 0 (not a signer of the account), and the vault's payments and contract calls need weight 1 (the medium threshold is 0;"},
		{name: "weight below the medium threshold", options: func(k string) *txnbuild.SetOptions {
			return &txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: k, Weight: 1},
				MasterWeight: th(0), LowThreshold: th(1), MediumThreshold: th(2), HighThreshold: th(2)}
		}, weight: 1, needed: 2, says: "its weight there is 1, and the vault's payments and contract calls need weight 2 (the medium threshold is 2; the account has master weight 0, thresholds low 1, medium 2, high 2, and 1 other signer(s))"},
		{name: "enough weight", options: func(k string) *txnbuild.SetOptions {
			return &txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: k, Weight: 2},
				MasterWeight: th(0), LowThreshold: th(1), MediumThreshold: th(2), HighThreshold: th(2)}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var vault, kmsKey string
			env := map[string]string{"SIGNER": "kms", "CHANNEL_COUNT": "0"}
			s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Getenv: func(k string) string { return env[k] },
				vaultSigner: func(v, k string) *txnbuild.SetOptions { vault, kmsKey = v, k; return c.options(k) }})
			if c.needed == 0 {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				t.Cleanup(func() { _ = s.Close() })
				wallet := s.Info.Wallets[0].Account
				if r := post(t, s, "kms-weight-0001", withdraw(wallet, "1")); r.status != 200 {
					t.Fatalf("withdraw = %d %v", r.status, r.body)
				}
				return
			}
			if err == nil {
				_ = s.Close()
				t.Fatal("Start succeeded, want the signer check's refusal")
			}
			var se *signing.SignerError
			if !errors.Is(err, signing.ErrCannotSign) || !errors.As(err, &se) {
				t.Fatalf("Start = %v, want a *signing.SignerError", err)
			}
			if se.Account != vault || se.Key != kmsKey || se.Key == se.Account || !strings.HasPrefix(se.KeyID, "arn:aws:kms:") ||
				se.Weight != c.weight || se.Needed != c.needed || se.Level != signing.ThresholdMedium {
				t.Fatalf("refusal %+v; want vault %s, key %s, weight %d, needed %d", se, vault, kmsKey, c.weight, c.needed)
			}
			msg := err.Error()
			t.Log(msg)
			for _, want := range []string{"signing key " + kmsKey + " (KMS key " + se.KeyID + ") cannot sign for the vault account " + vault, c.says} {
				if !strings.Contains(msg, want) {
					t.Fatalf("error %q does not say %q", msg, want)
				}
			}
		})
	}
}
