// Package signing holds the signing keys of the service's Stellar accounts and what signs with
// them:
//
//   - the key set (keys.go, Keys): the vault's key, the fee account's, and the channel accounts'
//     listed or derived from a SEP-5 master seed (MasterSeed);
//   - where it comes from (keysource.go, KeySource): one secret document in AWS Secrets Manager
//     (secret.go gives its format; SecretKeys reads it and refreshes it every DefaultKeyRefresh),
//     or, with SIGNER=kms, KMSKeys, whose vault and fee keys are AWS KMS Ed25519 keys that sign
//     over KMS's Sign API (kms.go; README.md, "Signing keys in KMS"); the local stack puts its
//     generated document in LocalSecrets and loads it the same way (localsecrets.go);
//   - the seam both kinds of key sign through (signer.go, Signer): a decorated Ed25519 signature
//     over a 32-byte transaction hash;
//   - the rules a key is held to before it signs (signercheck.go): an account's thresholds and
//     signer weights as stellar-core counts them, and the *SignerError naming the account, the key
//     and the weights when a key falls short. The ledger reads the accounts and applies the rules
//     (internal/stellar, CheckSigners).
//
// Secret seeds never appear in errors, logs or formatted output of this package's types: Keys,
// MasterSeed, SecretKeys, LocalSecrets and the signers format, log and marshal to JSON with
// public keys only, and the secret document's errors name fields, never values.
//
// The keys are a package of their own because both the ledger (internal/stellar) and the
// transaction sources (internal/stellar/sources: a channel's lease carries its key) use them, and
// they need nothing of either, of the network or of the domain: nothing that holds a seed imports
// a ledger, a source or a store (internal/repotest, houseImportRules).
package signing
