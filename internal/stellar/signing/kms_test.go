package signing_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// fakeKMS is an in-memory signing.KMSAPI: one Ed25519 key, or what a test makes it answer.
type fakeKMS struct {
	priv     ed25519.PrivateKey
	spec     kmstypes.KeySpec
	forge    ed25519.PrivateKey // when set, Sign answers with this key instead
	err      error
	lastSign *kms.SignInput
}

func newFakeKMS(t *testing.T) *fakeKMS {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return &fakeKMS{priv: priv, spec: kmstypes.KeySpecEccNistEdwards25519}
}

func (f *fakeKMS) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	der, err := x509.MarshalPKIXPublicKey(f.priv.Public())
	if err != nil {
		return nil, err
	}
	return &kms.GetPublicKeyOutput{KeyId: in.KeyId, PublicKey: der, KeySpec: f.spec, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
		SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEd25519Sha512}}, nil
}

func (f *fakeKMS) Sign(_ context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	f.lastSign = in
	if f.err != nil {
		return nil, f.err
	}
	key := f.priv
	if f.forge != nil {
		key = f.forge
	}
	return &kms.SignOutput{KeyId: in.KeyId, Signature: ed25519.Sign(key, in.Message), SigningAlgorithm: in.SigningAlgorithm}, nil
}

const testKeyARN = "arn:aws:kms:us-east-1:000000000000:key/11111111-2222-3333-4444-555555555555"

// A KMS key signs as a Stellar key: its G... address is the SPKI's raw 32 bytes, a signature is
// pure Ed25519 (ED25519_SHA_512, RAW) over the 32-byte hash, hinted with the public key's last 4
// bytes, and verifies as the keypair of that address.
func TestKMSSignerSignsTheHash(t *testing.T) {
	f := newFakeKMS(t)
	s, err := signing.NewKMSSigner(context.Background(), f, testKeyARN)
	if err != nil {
		t.Fatal(err)
	}
	pub := f.priv.Public().(ed25519.PublicKey)
	kp, err := keypair.FromRawSeed([32]byte(f.priv.Seed()))
	if err != nil {
		t.Fatal(err)
	}
	if s.Address() != kp.Address() {
		t.Fatalf("address %s, want %s", s.Address(), kp.Address())
	}
	hash := [32]byte{1, 2, 3, 4, 5}
	sig, err := s.SignHash(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	if f.lastSign.MessageType != kmstypes.MessageTypeRaw || f.lastSign.SigningAlgorithm != kmstypes.SigningAlgorithmSpecEd25519Sha512 ||
		string(f.lastSign.Message) != string(hash[:]) || aws.ToString(f.lastSign.KeyId) != testKeyARN {
		t.Fatalf("Sign input %+v", f.lastSign)
	}
	if [4]byte(sig.Hint) != [4]byte(pub[28:]) || kp.Verify(hash[:], sig.Signature) != nil {
		t.Fatalf("signature %x hint %x does not verify as %s", sig.Signature, sig.Hint, kp.Address())
	}
	want, _ := kp.SignDecorated(hash[:])
	if string(want.Signature) != string(sig.Signature) {
		t.Fatal("the KMS signature differs from the seed's (Ed25519 is deterministic)")
	}
}

func TestKMSSignerRefuses(t *testing.T) {
	ctx := context.Background()
	f := newFakeKMS(t)
	f.spec = kmstypes.KeySpecEccNistP256
	if _, err := signing.NewKMSSigner(ctx, f, testKeyARN); !errors.Is(err, signing.ErrKMSKey) {
		t.Fatalf("a P-256 key: %v, want ErrKMSKey", err)
	}

	f = newFakeKMS(t)
	s, err := signing.NewKMSSigner(ctx, f, testKeyARN)
	if err != nil {
		t.Fatal(err)
	}
	_, f.forge, _ = ed25519.GenerateKey(rand.Reader)
	if _, err := s.SignHash(ctx, [32]byte{9}); !errors.Is(err, signing.ErrBadKMSSignature) {
		t.Fatalf("a signature by another key: %v, want ErrBadKMSSignature", err)
	}
	f.forge, f.err = nil, errors.New("AccessDeniedException: not authorized")
	if _, err := s.SignHash(ctx, [32]byte{9}); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Fatalf("KMS refusing: %v", err)
	}
	if _, err := signing.NewKMSSigner(ctx, f, testKeyARN); err == nil {
		t.Fatal("GetPublicKey failing: no error")
	}
}

// KMSKeys: the vault's and the fee account's signers from KMS, the channel keys from the secret;
// Keys shows the KMS keys' public keys; a KMS that does not answer is an error (the caller's
// SIGNING_KEYS_UNAVAILABLE) and a later call tries again.
func TestKMSKeys(t *testing.T) {
	ctx := context.Background()
	f := newFakeKMS(t)
	f.err = errors.New("dial tcp 127.0.0.1:1: connection refused")
	channel, _ := keypair.Random()
	secrets := signing.NewLocalSecrets()
	secrets.Put("channels", []byte(`{"channelSeeds":["`+channel.Seed()+`"]}`))
	ch, err := signing.NewSecretKeys(signing.SecretKeysConfig{Client: secrets, SecretID: "channels", ChannelsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	src, err := signing.NewKMSKeys(signing.KMSKeysConfig{Client: f, VaultKeyID: testKeyARN, FeeKeyID: testKeyARN, Channels: ch})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Keys(ctx); err == nil {
		t.Fatal("KMS down: no error")
	}
	f.err = nil
	k, err := src.Keys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if k.Vault != nil || k.VaultKey() == nil || k.FeeKey() == nil || len(k.Channels) != 1 || k.Channels[0].Address() != channel.Address() {
		t.Fatalf("keys %v", k)
	}
	if got := k.String(); !strings.Contains(got, "vault="+k.VaultKey().Address()) || strings.Contains(got, channel.Seed()) {
		t.Fatalf("String %q", got)
	}

	// With SIGNER=kms the secret holds channel keys only.
	vault, _ := keypair.Random()
	if _, err := signing.ParseChannelKeys([]byte(`{"vaultSeed":"` + vault.Seed() + `"}`)); !errors.Is(err, signing.ErrBadSecret) || strings.Contains(err.Error(), vault.Seed()) {
		t.Fatalf("a vault seed in the channel secret: %v", err)
	}
}

// deadlineKMS records the deadline each Sign is given and answers as a hung KMS does once that
// deadline passes (without waiting for it: the deadline is what the test checks).
type deadlineKMS struct {
	*fakeKMS
	deadline time.Time
	had      bool
}

func (f *deadlineKMS) Sign(ctx context.Context, _ *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	f.deadline, f.had = ctx.Deadline()
	return nil, fmt.Errorf("operation error KMS: Sign, https response error: %w", context.DeadlineExceeded)
}

// A Sign that hangs ends at KMSSignTimeout, whatever the caller's budget: the signer gives KMS
// its own deadline (a hang's answer, SIGNING_KEYS_UNAVAILABLE, is internal/stellar's
// TestKMSSignHangIsSigningKeysUnavailable).
func TestKMSSignHasItsOwnDeadline(t *testing.T) {
	f := &deadlineKMS{fakeKMS: newFakeKMS(t)}
	s, err := signing.NewKMSSigner(context.Background(), f, "arn:aws:kms:us-east-1:000000000000:key/k")
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	_, err = s.SignHash(context.Background(), [32]byte{1})
	if !f.had || f.deadline.After(before.Add(signing.KMSSignTimeout+time.Second)) {
		t.Fatalf("Sign got deadline %v (set %v), want within %v", f.deadline, f.had, signing.KMSSignTimeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("SignHash = %v, want the deadline's error", err)
	}
}
