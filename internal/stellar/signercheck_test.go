package stellar

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// setVaultOptions applies one SetOptions from the vault, signed by its master key, and waits
// (on the clock) until RPC and Horizon show it.
func (e *suiteEnv) setVaultOptions(t *testing.T, so *txnbuild.SetOptions) {
	t.Helper()
	acct, ok := e.net.Account(e.vault)
	if !ok {
		t.Fatal("no vault")
	}
	maxTime := e.clock.Now().Add(time.Minute)
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount: &txnbuild.SimpleAccount{AccountID: e.vault, Sequence: acct.Sequence}, IncrementSequenceNum: true,
		BaseFee: txnbuild.MinBaseFee, Operations: []txnbuild.Operation{so},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, maxTime.Unix())},
	})
	if err != nil {
		t.Fatal(err)
	}
	if tx, err = tx.Sign(e.net.Passphrase(), e.keys.Vault); err != nil {
		t.Fatal(err)
	}
	env := transfer.Envelope{MaxTime: maxTime.Unix()}
	if env.InnerHash, err = tx.HashHex(e.net.Passphrase()); err != nil {
		t.Fatal(err)
	}
	if env.XDR, err = tx.Base64(); err != nil {
		t.Fatal(err)
	}
	e.send(t, env, transfer.SendPending)
	e.closeLedger()
	if a, ok := e.net.Transaction(env.InnerHash); !ok || a.Status != "SUCCESS" {
		t.Fatalf("SetOptions: %+v", a)
	}
}

func (e *suiteEnv) checkSigners(keys signing.Keys) error {
	return e.ledger.(interface {
		CheckSigners(context.Context, signing.Keys) error
	}).CheckSigners(context.Background(), keys)
}

// signerRefusal is err's one *SignerError; it fails the test when err is not exactly one.
func signerRefusal(t *testing.T, err error) *signing.SignerError {
	t.Helper()
	var se *signing.SignerError
	if !errors.Is(err, signing.ErrCannotSign) || !errors.As(err, &se) {
		t.Fatalf("CheckSigners = %v, want a *SignerError", err)
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok && len(j.Unwrap()) != 1 {
		t.Fatalf("CheckSigners = %v, want one refusal", err)
	}
	return se
}

// CheckSigners reads the vault (and, with channels, the fee account) from the backend and holds
// each key to the thresholds stellar-core checks its signatures against: the vault key to the
// vault's medium threshold (payments), and to its low threshold when the vault is the
// transaction source (no channels); the fee key to its account's low threshold (fee bumps).
// Refusals name the account, the key and the weights found and needed.
func TestCheckSignersHoldsKeysToTheThresholds(t *testing.T) {
	forEachBackend(t, func(t *testing.T, newEnv func(suiteOpts) *suiteEnv) {
		e := newEnv(suiteOpts{})
		keys := e.keys

		// The vault's own key at the defaults (master weight 1, thresholds 0): it signs.
		if err := e.checkSigners(keys); err != nil {
			t.Fatalf("the vault's master key: %v", err)
		}

		// A key that is not a signer of the vault.
		stranger := keypair.MustRandom()
		keys.VaultSigner = signing.SeedSigner{KP: stranger}
		se := signerRefusal(t, e.checkSigners(keys))
		if se.Role != "vault" || se.Account != e.vault || se.Key != stranger.Address() || se.Weight != 0 || se.Needed != 1 ||
			se.Level != signing.ThresholdMedium || se.Auth.MasterWeight != 1 {
			t.Fatalf("refusal %+v", se)
		}
		for _, want := range []string{e.vault, stranger.Address(), "its weight there is 0 (not a signer of the account)", "need weight 1"} {
			if !strings.Contains(se.Error(), want) {
				t.Fatalf("%q does not say %q", se.Error(), want)
			}
		}

		// Added as a signer at weight 1 under a medium threshold of 2: too light.
		u := func(v uint8) *txnbuild.Threshold { th := txnbuild.Threshold(v); return &th }
		e.setVaultOptions(t, &txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: stranger.Address(), Weight: 1},
			MasterWeight: u(3), LowThreshold: u(1), MediumThreshold: u(2), HighThreshold: u(3)})
		se = signerRefusal(t, e.checkSigners(keys))
		if se.Weight != 1 || se.Needed != 2 || se.Level != signing.ThresholdMedium || se.Auth.Medium != 2 || se.Auth.Signers[stranger.Address()] != 1 {
			t.Fatalf("refusal %+v", se)
		}
		if !strings.Contains(se.Error(), "its weight there is 1, and the vault's payments and contract calls need weight 2 (the medium threshold is 2;") {
			t.Fatalf("message %q", se.Error())
		}

		// Weight 2 reaches the medium threshold.
		e.setVaultOptions(t, &txnbuild.SetOptions{Signer: &txnbuild.Signer{Address: stranger.Address(), Weight: 2}})
		if err := e.checkSigners(keys); err != nil {
			t.Fatalf("a signer at the medium threshold: %v", err)
		}

		// A low threshold above the medium one: the vault as transaction source (no channels)
		// needs it; behind channels the vault only signs operations.
		e.setVaultOptions(t, &txnbuild.SetOptions{LowThreshold: u(3)})
		err := e.checkSigners(keys)
		if e.channels == 0 {
			se = signerRefusal(t, err)
			if se.Level != signing.ThresholdLow || se.Needed != 3 || se.Weight != 2 {
				t.Fatalf("refusal %+v", se)
			}
		} else if err != nil {
			t.Fatalf("with channels: %v", err)
		}

		// The fee key pays the fee bumps for its own account: a fee key whose account does not
		// exist is refused with channels, and not looked at without them.
		keys.FeeSigner = signing.SeedSigner{KP: keypair.MustRandom()}
		keys.VaultSigner = nil // the master key again (weight 3 reaches every threshold)
		err = e.checkSigners(keys)
		if e.channels == 0 {
			if err != nil {
				t.Fatalf("without channels the fee key signs nothing: %v", err)
			}
			return
		}
		se = signerRefusal(t, err)
		if se.Role != "fee" || !se.Missing || se.Account != keys.FeeSigner.Address() ||
			!strings.Contains(se.Error(), "the fee account "+se.Account+" does not exist on the network") {
			t.Fatalf("refusal %+v: %v", se, se)
		}
	})
}

// A backend that cannot be read is not a refusal: the error says the network could not be read.
func TestCheckSignersUnreadableNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close() // nothing listens there now: every request is refused
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	const passphrase = "Test SDF Network ; September 2015"
	vault := keys.Vault.Address()
	assets := []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}
	for _, backend := range []string{"rpc", "horizon"} {
		var l interface {
			CheckSigners(context.Context, signing.Keys) error
		}
		if backend == "rpc" {
			l, err = NewRPCLedger(RPCConfig{URL: "http://" + addr, Passphrase: passphrase, VaultAccount: vault, Assets: assets, Keys: signing.StaticKeys{K: keys}})
		} else {
			l, err = NewHorizonLedger(HorizonConfig{URL: "http://" + addr, Passphrase: passphrase, VaultAccount: vault, Assets: assets, Keys: signing.StaticKeys{K: keys}})
		}
		if err != nil {
			t.Fatal(err)
		}
		err = l.CheckSigners(context.Background(), keys)
		if err == nil || errors.Is(err, signing.ErrCannotSign) || !strings.Contains(err.Error(), "reading the vault account "+vault) {
			t.Fatalf("%s: CheckSigners = %v, want a read error", backend, err)
		}
	}
}
