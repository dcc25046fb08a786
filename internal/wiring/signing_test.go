package wiring_test

import (
	"errors"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

func TestSigningKeysFollowsSIGNER(t *testing.T) {
	secrets := signing.NewLocalSecrets()
	if _, err := wiring.SigningKeys(config.Config{Signer: config.SignerSecrets}, secrets, nil); !errors.Is(err, wiring.ErrNoSigningKeys) {
		t.Fatalf("secrets without SIGNING_SECRET_ARN: %v", err)
	}
	src, err := wiring.SigningKeys(config.Config{Signer: config.SignerSecrets, SigningSecretARN: "s"}, secrets, nil)
	if _, ok := src.(*signing.SecretKeys); !ok || err != nil {
		t.Fatalf("secrets: %T, %v", src, err)
	}
	var kmsClient signing.KMSAPI = wiring.AWSClients{}.KMS
	src, err = wiring.SigningKeys(config.Config{Signer: config.SignerKMS, VaultKMSKeyID: "alias/vault", SigningSecretARN: "s"}, secrets, kmsClient)
	if _, ok := src.(*signing.KMSKeys); !ok || err != nil {
		t.Fatalf("kms: %T, %v", src, err)
	}
}
