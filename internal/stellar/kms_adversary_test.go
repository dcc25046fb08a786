package stellar

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Adversary's tests of SIGNER=kms inside Prepare: a KMS that fails or stops answering part-way
// through an envelope (README.md, "Signing keys in KMS": 503 SIGNING_KEYS_UNAVAILABLE, nothing
// sent).

// seedKMS is a KMSAPI over a Stellar seed (so that its account exists on the local network), or
// what a test makes it do: fail, or behave as a KMS that does not answer until the caller's
// deadline (expire).
type seedKMS struct {
	kp *keypair.Full

	mu     sync.Mutex
	err    error
	expire *expiringCtx
	signs  int
}

func (f *seedKMS) GetPublicKey(_ context.Context, in *kms.GetPublicKeyInput, _ ...func(*kms.Options)) (*kms.GetPublicKeyOutput, error) {
	raw, err := keypairRaw(f.kp)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(raw)
	if err != nil {
		return nil, err
	}
	return &kms.GetPublicKeyOutput{KeyId: in.KeyId, PublicKey: der, KeySpec: kmstypes.KeySpecEccNistEdwards25519,
		KeyUsage: kmstypes.KeyUsageTypeSignVerify, SigningAlgorithms: []kmstypes.SigningAlgorithmSpec{kmstypes.SigningAlgorithmSpecEd25519Sha512}}, nil
}

func (f *seedKMS) Sign(ctx context.Context, in *kms.SignInput, _ ...func(*kms.Options)) (*kms.SignOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.expire != nil {
		// KMS does not answer; the caller's deadline passes (the AWS SDK reports the context's
		// error, wrapped in its operation error).
		f.expire.expire()
		return nil, fmt.Errorf("operation error KMS: Sign, https response error: %w", ctx.Err())
	}
	if f.err != nil {
		return nil, f.err
	}
	f.signs++
	sig, err := f.kp.Sign(in.Message)
	if err != nil {
		return nil, err
	}
	return &kms.SignOutput{KeyId: in.KeyId, Signature: sig, SigningAlgorithm: in.SigningAlgorithm}, nil
}

// keypairRaw is kp's Ed25519 public key.
func keypairRaw(kp *keypair.Full) (ed25519.PublicKey, error) {
	b, err := strkey.Decode(strkey.VersionByteAccountID, kp.Address())
	if err != nil {
		return nil, err
	}
	return ed25519.PublicKey(b), nil
}

// expiringCtx is a context whose deadline passes when expire is called (no waiting on the wall
// clock): Err is then context.DeadlineExceeded, as for a Lambda invocation's deadline.
type expiringCtx struct {
	context.Context
	once sync.Once
	done chan struct{}
}

func newExpiringCtx() *expiringCtx {
	return &expiringCtx{Context: context.Background(), done: make(chan struct{})}
}

func (c *expiringCtx) expire()                     { c.once.Do(func() { close(c.done) }) }
func (c *expiringCtx) Done() <-chan struct{}       { return c.done }
func (c *expiringCtx) Deadline() (time.Time, bool) { return time.Now().Add(time.Hour), true }
func (c *expiringCtx) Err() error {
	select {
	case <-c.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// kmsLedger is an RPC ledger on e's network whose vault and fee keys sign through KMS (the vault
// seed's and the fee seed's own keys behind vaultKMS and feeKMS), with e's channels.
func kmsLedger(t *testing.T, e *suiteEnv, vaultKMS, feeKMS *seedKMS) *RPCLedger {
	t.Helper()
	ctx := context.Background()
	vs, err := signing.NewKMSSigner(ctx, vaultKMS, "vault-key")
	if err != nil {
		t.Fatal(err)
	}
	fs, err := signing.NewKMSSigner(ctx, feeKMS, "fee-key")
	if err != nil {
		t.Fatal(err)
	}
	keys := signing.Keys{VaultSigner: vs, FeeSigner: fs, ChannelMaster: e.keys.ChannelMaster}
	var pool *sources.ChannelPool
	if e.channels > 0 {
		if pool, err = sources.NewChannelPool(sources.ChannelPoolConfig{Leases: e.leases, Count: e.channels, Clock: e.clock}); err != nil {
			t.Fatal(err)
		}
	}
	l, err := NewRPCLedger(RPCConfig{URL: e.net.RPCURL(), Passphrase: e.net.Passphrase(), VaultAccount: e.vault,
		Assets: []txnbuild.CreditAsset{{Code: e.usdc.Code, Issuer: e.usdc.Issuer}}, MaxFeeStroops: 10_000,
		Keys: signing.StaticKeys{K: keys}, Channels: pool, Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// The fee account's KMS key fails after the vault's KMS key signed the inner transaction: Prepare
// answers SIGNING_KEYS_UNAVAILABLE, nothing reaches the network, the channel is free again, and
// the same request prepares and lands once KMS signs again.
func TestKMSFeeBumpSignFailsAfterInnerSigned(t *testing.T) {
	e := newSuiteEnv(t, "rpc", suiteOpts{channels: 2})
	vaultKMS, feeKMS := &seedKMS{kp: e.keys.Vault}, &seedKMS{kp: e.keys.Fee}
	l := kmsLedger(t, e, vaultKMS, feeKMS)
	feeKMS.err = errors.New("ThrottlingException: Rate exceeded")
	sent := len(e.net.Envelopes())
	_, err := l.Prepare(context.Background(), withdraw(e.wallet, unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != CodeSigningKeysUnavailable {
		t.Fatalf("fee key failing after the inner signature: %v, want SIGNING_KEYS_UNAVAILABLE", err)
	}
	if vaultKMS.signs != 1 {
		t.Fatalf("the vault's key signed %d times, want 1 (the inner transaction, before the fee bump)", vaultKMS.signs)
	}
	if n := len(e.net.Envelopes()); n != sent || e.leases.Leased() != 0 {
		t.Fatalf("%d envelopes sent, %d channels leased; want none", n-sent, e.leases.Leased())
	}
	feeKMS.err = nil
	before, _ := e.net.Balance(e.wallet, e.usdc)
	env, err := l.Prepare(context.Background(), withdraw(e.wallet, unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := l.Send(context.Background(), env); err != nil || res.Status != transfer.SendPending {
		t.Fatalf("send: %+v %v", res, err)
	}
	e.clock.advance(5 * time.Second)
	e.closeLedger()
	if after, _ := e.net.Balance(e.wallet, e.usdc); after-before != unit {
		t.Fatalf("wallet moved %d, want %d", after-before, unit)
	}
}

// A KMS that does not answer (a network partition: the connection hangs, as a KMS endpoint
// unreachable from the function does) until the invocation's deadline is a KMS outage like any
// other: SIGNING_KEYS_UNAVAILABLE, nothing sent (README.md, "Signing keys in KMS": "When KMS does
// not sign (unreachable, ...) the transfer is answered 503 SIGNING_KEYS_UNAVAILABLE"). A bare
// context error from Prepare is answered 503 RPC_ERROR ("the transaction could not be prepared")
// and counted by the circuit breaker as a failure of the Stellar network (transfer.Breaker), so a
// few KMS hangs open the circuit against every transfer, in-flight ones' re-sends and look-ups
// included.
func TestKMSSignHangIsSigningKeysUnavailable(t *testing.T) {
	for _, channels := range []int{0, 2} {
		t.Run(fmt.Sprintf("channels=%d", channels), func(t *testing.T) {
			e := newSuiteEnv(t, "rpc", suiteOpts{channels: channels})
			vaultKMS, feeKMS := &seedKMS{kp: e.keys.Vault}, &seedKMS{kp: e.keys.Fee}
			l := kmsLedger(t, e, vaultKMS, feeKMS)
			ctx := newExpiringCtx()
			vaultKMS.expire = ctx
			sent := len(e.net.Envelopes())
			_, err := l.Prepare(ctx, withdraw(e.wallet, unit), transfer.Terms{MaxTime: e.clock.Now().Add(time.Minute)})
			var ue *transfer.UnavailableError
			if !errors.As(err, &ue) || ue.Code != CodeSigningKeysUnavailable {
				t.Fatalf("KMS hanging until the deadline: %v, want SIGNING_KEYS_UNAVAILABLE", err)
			}
			if n := len(e.net.Envelopes()); n != sent || e.leases.Leased() != 0 {
				t.Fatalf("%d envelopes sent, %d channels leased; want none", n-sent, e.leases.Leased())
			}
		})
	}
}
