package signing

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// KMSAPI is the part of the AWS KMS client KMSSigner uses; *kms.Client implements it.
type KMSAPI interface {
	GetPublicKey(ctx context.Context, in *kms.GetPublicKeyInput, optFns ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error)
	Sign(ctx context.Context, in *kms.SignInput, optFns ...func(*kms.Options)) (*kms.SignOutput, error)
}

// ErrKMSKey is wrapped by NewKMSSigner's errors about the key itself (wrong key spec or usage, a
// public key that is not Ed25519), as opposed to KMS being unreachable.
var ErrKMSKey = errors.New("stellar: the KMS key cannot sign for Stellar")

// KMSSigner signs with an AWS KMS key of key spec ECC_NIST_EDWARDS25519 and key usage
// SIGN_VERIFY: the private key never leaves KMS. Each signature is KMS Sign with signing
// algorithm ED25519_SHA_512 and message type RAW (pure Ed25519, RFC 8032: the scheme of a Stellar
// signature) over the 32-byte transaction hash, and is verified with crypto/ed25519 against the
// key's public key before it is used (AWS KMS API Reference: Sign, GetPublicKey; "Ed25519 key
// spec" in the AWS KMS Developer Guide). Safe for concurrent use.
type KMSSigner struct {
	client KMSAPI
	keyID  string
	pub    ed25519.PublicKey
	addr   string
	hint   xdr.SignatureHint
}

// NewKMSSigner reads keyID's public key with GetPublicKey (one call) and returns its signer.
// keyID is a key ID, key ARN, alias name or alias ARN. Errors: KMS's own (unreachable, access
// denied, not found) wrapped; ErrKMSKey when the key is not an Ed25519 signing key.
func NewKMSSigner(ctx context.Context, client KMSAPI, keyID string) (*KMSSigner, error) {
	if client == nil || keyID == "" {
		return nil, errors.New("stellar: a KMS signer needs a KMS client and a key ID")
	}
	out, err := client.GetPublicKey(ctx, &kms.GetPublicKeyInput{KeyId: aws.String(keyID)})
	if err != nil {
		return nil, fmt.Errorf("stellar: KMS GetPublicKey %s: %w", keyID, err)
	}
	if out.KeySpec != kmstypes.KeySpecEccNistEdwards25519 || out.KeyUsage != kmstypes.KeyUsageTypeSignVerify ||
		!slices.Contains(out.SigningAlgorithms, kmstypes.SigningAlgorithmSpecEd25519Sha512) {
		return nil, fmt.Errorf("%w: %s has key spec %q and usage %q; want ECC_NIST_EDWARDS25519, SIGN_VERIFY, ED25519_SHA_512",
			ErrKMSKey, keyID, out.KeySpec, out.KeyUsage)
	}
	// The public key is a DER SubjectPublicKeyInfo (RFC 8410 for Ed25519), which crypto/x509 parses.
	parsed, err := x509.ParsePKIXPublicKey(out.PublicKey)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: the public key is not a DER SubjectPublicKeyInfo: %v", ErrKMSKey, keyID, err)
	}
	pub, ok := parsed.(ed25519.PublicKey)
	if !ok || len(pub) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: %s: the public key is a %T, not Ed25519", ErrKMSKey, keyID, parsed)
	}
	addr, err := strkey.Encode(strkey.VersionByteAccountID, pub)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKMSKey, keyID, err)
	}
	s := &KMSSigner{client: client, keyID: keyID, pub: pub, addr: addr}
	copy(s.hint[:], pub[len(pub)-4:])
	return s, nil
}

// Address is the KMS key's public key as a G... strkey.
func (s *KMSSigner) Address() string { return s.addr }

// KeyID is the key as configured (an ARN, key ID or alias).
func (s *KMSSigner) KeyID() string { return s.keyID }

// ErrBadKMSSignature is returned when KMS answers with a signature that does not verify against
// the key's public key (never used: a transaction it signed would be refused txBAD_AUTH).
var ErrBadKMSSignature = errors.New("stellar: KMS returned a signature that does not verify")

// SignHash has KMS sign hash (ED25519_SHA_512, RAW) and verifies the signature before returning
// it. Errors: KMS's own (unreachable, AccessDeniedException, ThrottlingException, ...) wrapped,
// or ErrBadKMSSignature.
func (s *KMSSigner) SignHash(ctx context.Context, hash [32]byte) (xdr.DecoratedSignature, error) {
	// A KMS that hangs (an unreachable endpoint often leaves the connection open) must not eat the
	// invocation's budget: a Sign answers in milliseconds, so KMSSignTimeout ends the wait, the
	// SDK's retries included, and the transfer is answered SIGNING_KEYS_UNAVAILABLE.
	ctx, cancel := context.WithTimeout(ctx, KMSSignTimeout)
	defer cancel()
	out, err := s.client.Sign(ctx, &kms.SignInput{
		KeyId: aws.String(s.keyID), Message: hash[:],
		MessageType: kmstypes.MessageTypeRaw, SigningAlgorithm: kmstypes.SigningAlgorithmSpecEd25519Sha512,
	})
	if err != nil {
		return xdr.DecoratedSignature{}, fmt.Errorf("stellar: KMS Sign %s: %w", s.keyID, err)
	}
	if len(out.Signature) != ed25519.SignatureSize || !ed25519.Verify(s.pub, hash[:], out.Signature) {
		return xdr.DecoratedSignature{}, fmt.Errorf("%w (key %s)", ErrBadKMSSignature, s.keyID)
	}
	return xdr.DecoratedSignature{Hint: s.hint, Signature: xdr.Signature(out.Signature)}, nil
}

// KMSSignTimeout bounds one KMSSigner.SignHash, the SDK's retries included.
const KMSSignTimeout = 3 * time.Second

// Format implements fmt.Formatter: the key and its public key.
func (s *KMSSigner) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "stellar.KMSSigner{key=%s %s}", s.keyID, s.addr)
}

// KMSKeysConfig configures KMSKeys.
type KMSKeysConfig struct {
	Client KMSAPI
	// VaultKeyID is the KMS key that signs the vault's operations (VAULT_KMS_KEY_ID): a signer of
	// VAULT_ACCOUNT (its public key need not be the account's).
	VaultKeyID string
	// FeeKeyID is the KMS key of the fee account, which pays channel transactions' fee bumps
	// (FEE_KMS_KEY_ID); empty when fee bumps are off.
	FeeKeyID string
	// Channels, when set, supplies the channel keys (Keys.Channels, Keys.ChannelMaster): the
	// Secrets Manager secret read with SecretKeysConfig.ChannelsOnly. Channel accounts hold no
	// funds, so their keys may stay secrets.
	Channels KeySource
}

// KMSKeys is the KeySource of SIGNER=kms: Keys.VaultSigner and Keys.FeeSigner are KMSSigners, the
// channel keys come from cfg.Channels. The public keys are read once (a KMS key's key material
// never changes); until a read succeeds, each call tries again and returns KMS's error.
type KMSKeys struct {
	cfg KMSKeysConfig

	mu         sync.Mutex
	vault, fee *KMSSigner
}

// NewKMSKeys returns a KMSKeys; KMS is not called until the first Keys call.
func NewKMSKeys(cfg KMSKeysConfig) (*KMSKeys, error) {
	if cfg.Client == nil {
		return nil, errors.New("stellar: KMSKeys needs a KMS client")
	}
	if cfg.VaultKeyID == "" {
		return nil, errors.New("stellar: KMSKeys needs the vault's key ID (VAULT_KMS_KEY_ID)")
	}
	return &KMSKeys{cfg: cfg}, nil
}

// Keys returns the KMS signers and the channel keys.
func (k *KMSKeys) Keys(ctx context.Context) (Keys, error) {
	k.mu.Lock()
	var err error
	if k.vault == nil {
		k.vault, err = NewKMSSigner(ctx, k.cfg.Client, k.cfg.VaultKeyID)
	}
	if err == nil && k.fee == nil && k.cfg.FeeKeyID != "" {
		k.fee, err = NewKMSSigner(ctx, k.cfg.Client, k.cfg.FeeKeyID)
	}
	var out Keys
	if k.vault != nil {
		out.VaultSigner = k.vault
	}
	if k.fee != nil {
		out.FeeSigner = k.fee
	}
	k.mu.Unlock()
	if err != nil {
		return Keys{}, err
	}
	if k.cfg.Channels != nil {
		ch, err := k.cfg.Channels.Keys(ctx)
		if err != nil {
			return Keys{}, err
		}
		out.Channels, out.ChannelMaster = ch.Channels, ch.ChannelMaster
	}
	return out, nil
}

// Format implements fmt.Formatter: the key IDs, never a secret.
func (k *KMSKeys) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "stellar.KMSKeys{vault=%s fee=%s}", k.cfg.VaultKeyID, k.cfg.FeeKeyID)
}

var (
	_ Signer = (*KMSSigner)(nil)
	_ KMSAPI = (*kms.Client)(nil)
)
