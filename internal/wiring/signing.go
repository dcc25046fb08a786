package wiring

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// ErrNoSigningKeys is SigningKeys' answer when the configuration names no signing keys at all:
// SIGNER=secrets without SIGNING_SECRET_ARN. A function that signs fails at init with it; the
// reconcile function, which signs only to create channels, runs without keys.
var ErrNoSigningKeys = errors.New("SIGNING_SECRET_ARN is required (or SIGNER=kms with VAULT_KMS_KEY_ID)")

// SigningKeys is the key source cfg names (README.md, "Signing keys in KMS"):
//
//   - SIGNER=secrets (the default): every key from the Secrets Manager secret SIGNING_SECRET_ARN.
//   - SIGNER=kms: the vault's and the fee account's keys are KMS keys (VAULT_KMS_KEY_ID,
//     FEE_KMS_KEY_ID) signing through kmsClient, their seeds never in this process; channel keys,
//     when SIGNING_SECRET_ARN is set, from that secret (channel keys only: a vaultSeed or feeSeed
//     there is refused).
//
// Nothing is called until the source's first Keys call.
func SigningKeys(cfg config.Config, secrets signing.SecretsManagerAPI, kmsClient signing.KMSAPI) (signing.KeySource, error) {
	if cfg.Signer != config.SignerKMS {
		if cfg.SigningSecretARN == "" {
			return nil, ErrNoSigningKeys
		}
		return signing.NewSecretKeys(signing.SecretKeysConfig{Client: secrets, SecretID: cfg.SigningSecretARN})
	}
	kc := signing.KMSKeysConfig{Client: kmsClient, VaultKeyID: cfg.VaultKMSKeyID, FeeKeyID: cfg.FeeKMSKeyID}
	if cfg.SigningSecretARN != "" {
		ch, err := signing.NewSecretKeys(signing.SecretKeysConfig{Client: secrets, SecretID: cfg.SigningSecretARN, ChannelsOnly: true})
		if err != nil {
			return nil, err
		}
		kc.Channels = ch
	}
	return signing.NewKMSKeys(kc)
}

// kmsOptions points the KMS client at endpoint when set (KMS_ENDPOINT: the local stack's
// emulator).
func kmsOptions(endpoint string) func(*kms.Options) {
	return func(o *kms.Options) {
		if endpoint != "" {
			o.BaseEndpoint = &endpoint
		}
	}
}

var _ signing.SecretsManagerAPI = (*secretsmanager.Client)(nil)
