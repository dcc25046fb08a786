package devstack

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// startKMSStack is the local stack with SIGNER=kms: the vault's and the fee account's keys are in
// the local KMS emulator, reached by the AWS SDK's KMS client over HTTP, and the vault's KMS key
// is a signer of the vault (master weight 0).
func startKMSStack(t *testing.T, env map[string]string) *Stack {
	t.Helper()
	env["SIGNER"] = "kms"
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.KMS == nil || s.Info.Signer != "kms" || s.Info.VaultKMSKey == nil || s.Info.VaultKMSKey.Account == s.Info.Vault.Account {
		t.Fatalf("stack info %+v: want the KMS signer, its key apart from the vault's address", s.Info)
	}
	return s
}

// signedBy reports whether the envelope's transaction (the inner one of a fee bump) carries a
// valid signature of address, and how many signatures it has.
func signedBy(t *testing.T, envelopeXDR, passphrase, address string) (bool, int) {
	t.Helper()
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envelopeXDR, &env); err != nil {
		t.Fatalf("envelope: %v", err)
	}
	inner := env
	if env.IsFeeBump() {
		inner = xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: env.FeeBump.Tx.InnerTx.V1}
	}
	hash, err := network.HashTransactionInEnvelope(inner, passphrase)
	if err != nil {
		t.Fatal(err)
	}
	kp := keypair.MustParseAddress(address)
	for _, sig := range inner.Signatures() {
		if sig.Hint == xdr.SignatureHint(kp.Hint()) && kp.Verify(hash[:], sig.Signature) == nil {
			return true, len(inner.Signatures())
		}
	}
	return false, len(inner.Signatures())
}

// A transfer signed through the KMS path end to end: the service signs with the KMS
// key (GetPublicKey, Sign over HTTP), the local network accepts the vault's payment on the KMS
// key's weight (the vault's own key is disabled), with channels (the fee bump signed by the fee
// account's KMS key) and without. A KMS outage is 503 SIGNING_KEYS_UNAVAILABLE with nothing sent,
// and the same request succeeds once KMS answers again.
func TestKMSSignerEndToEnd(t *testing.T) {
	for name, channels := range map[string]string{"channels": "", "vault as source": "0"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			env := map[string]string{}
			if channels != "" {
				env["CHANNEL_COUNT"] = channels
			}
			s := startKMSStack(t, env)
			wallet := s.Info.Wallets[0].Account
			before, _ := s.Network.Balance(wallet, s.usdc())
			signs, sentBefore := s.KMS.Signs(), len(transferEnvelopes(s))

			r := post(t, s, "kms-order-0001", withdraw(wallet, "2"))
			if r.status != 200 {
				t.Fatalf("withdraw = %d %v", r.status, r.body)
			}
			tx, ok := s.Network.Transaction(r.body["transactionHash"].(string))
			if !ok || tx.Status != "SUCCESS" {
				t.Fatalf("the network reports %+v, %v", tx, ok)
			}
			if after, _ := s.Network.Balance(wallet, s.usdc()); after-before != 20_000_000 {
				t.Fatalf("wallet moved by %d stroops, want 20000000", after-before)
			}
			if ok, _ := signedBy(t, tx.EnvelopeXDR, s.Info.NetworkPassphrase, s.Info.VaultKMSKey.Account); !ok {
				t.Fatalf("the transaction carries no signature of the vault's KMS key")
			}
			if ok, _ := signedBy(t, tx.EnvelopeXDR, s.Info.NetworkPassphrase, s.Info.Vault.Account); ok {
				t.Fatalf("the transaction is signed by the vault's master key")
			}
			wantSigns := 1 // the vault's key; with channels the fee account's key signs the fee bump too
			if channels == "" {
				wantSigns = 2
				if tx.FeeSource != s.Info.FeeKMSKey.Account || s.Info.FeeAccount.Account != s.Info.FeeKMSKey.Account {
					t.Fatalf("fee source %s, want the fee account's KMS key %s", tx.FeeSource, s.Info.FeeKMSKey.Account)
				}
			}
			// Each envelope sent was signed in KMS (a rebuilt one too: right after start, RPC may
			// still show the vault's sequence number from before its SetOptions, txBAD_SEQ).
			built := map[string]bool{}
			for _, e := range transferEnvelopes(s)[sentBefore:] {
				built[e.Hash] = true
			}
			if got := s.KMS.Signs() - signs; got != wantSigns*len(built) {
				t.Fatalf("%d KMS signatures for %d envelopes, want %d each", got, len(built), wantSigns)
			}

			// The vault on the network: the KMS key at weight 1, the master key at 0.
			resp, err := http.Get(s.Info.HorizonURL + "/accounts/" + s.Info.Vault.Account)
			if err != nil {
				t.Fatal(err)
			}
			var acct struct {
				Signers []struct {
					Key    string `json:"key"`
					Weight int    `json:"weight"`
				} `json:"signers"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&acct)
			resp.Body.Close()
			weights := map[string]int{}
			for _, sg := range acct.Signers {
				weights[sg.Key] = sg.Weight
			}
			if len(weights) != 2 || weights[s.Info.VaultKMSKey.Account] != 1 || weights[s.Info.Vault.Account] != 0 {
				t.Fatalf("vault signers %v, want the KMS key at 1 and the master key at 0", weights)
			}

			// KMS refuses: nothing is sent, the answer is 503 SIGNING_KEYS_UNAVAILABLE.
			for i, exception := range []string{"AccessDeniedException", "ThrottlingException", RefuseDown} {
				sent := len(transferEnvelopes(s))
				s.KMS.Refuse(exception)
				r := post(t, s, "kms-order-0002", withdraw(wallet, "3"))
				if r.status != 503 || r.body["code"] != "SIGNING_KEYS_UNAVAILABLE" {
					t.Fatalf("%d %s: withdraw = %d %v, want 503 SIGNING_KEYS_UNAVAILABLE", i, exception, r.status, r.body)
				}
				if n := len(transferEnvelopes(s)); n != sent {
					t.Fatalf("%s: %d envelopes sent, want none", exception, n-sent)
				}
			}
			s.KMS.Refuse("")
			if r := post(t, s, "kms-order-0002", withdraw(wallet, "3")); r.status != 200 {
				t.Fatalf("after the outage: withdraw = %d %v", r.status, r.body)
			}
		})
	}
}
