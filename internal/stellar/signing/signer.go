package signing

import (
	"context"
	"fmt"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Signer is one Ed25519 signing key of a Stellar account: a secret seed held in this process
// (SeedSigner, SIGNER=secrets) or a key that never leaves AWS KMS (KMSSigner, SIGNER=kms).
//
// A Stellar signature is an Ed25519 signature over the 32-byte transaction hash (SHA-256 of the
// network ID and the tagged transaction: the signature base), decorated with a hint, the last 4
// bytes of the public key (Stellar docs, "Signatures and Multisig"; go-stellar-sdk
// txnbuild.Transaction.Sign does the same with a keypair).
type Signer interface {
	// Address is the key's public key as a G... strkey.
	Address() string
	// SignHash signs hash, the 32-byte transaction (or fee-bump) hash. Errors never carry secrets.
	SignHash(ctx context.Context, hash [32]byte) (xdr.DecoratedSignature, error)
}

// SeedSigner signs with a secret seed held in memory (the Secrets Manager signer).
type SeedSigner struct{ KP *keypair.Full }

// Address is the seed's public key.
func (s SeedSigner) Address() string { return s.KP.Address() }

// SignHash signs hash with the seed.
func (s SeedSigner) SignHash(_ context.Context, hash [32]byte) (xdr.DecoratedSignature, error) {
	return s.KP.SignDecorated(hash[:])
}

// Format implements fmt.Formatter with the public key only.
func (s SeedSigner) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "stellar.SeedSigner{%s}", address(s.KP))
}

// seedSigner is kp as a Signer; nil when kp is nil (never a non-nil interface holding nil).
func seedSigner(kp *keypair.Full) Signer {
	if kp == nil {
		return nil
	}
	return SeedSigner{KP: kp}
}

var _ Signer = SeedSigner{}
