package devstack

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/keypair"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// kmsSetup is the local stack's KMS path (SIGNER=kms): the emulator, the SDK client that talks
// to it over HTTP, and the vault's and the fee account's keys created in it.
type kmsSetup struct {
	emulator *localKMS
	url      string
	client   *kms.Client
	// vaultKey and feeKey are the keys' ARNs; vault and fee their signers (public keys).
	vaultKey, feeKey string
	vault, fee       *signing.KMSSigner
}

// startKMS serves the emulator on addr and creates the vault's and the fee account's keys through
// the AWS SDK's KMS client, as `aws kms create-key --key-spec ECC_NIST_EDWARDS25519 --key-usage
// SIGN_VERIFY` does (README.md, "Signing keys in KMS").
func (s *Stack) startKMS(ctx context.Context, addr string) (*kmsSetup, error) {
	ln, err := s.listen("KMS emulator", "KMS_ADDR", addr)
	if err != nil {
		return nil, err
	}
	k := &kmsSetup{emulator: newLocalKMS(), url: "http://" + ln.Addr().String()}
	s.serve(ln, k.emulator)
	k.client = newKMSClient(k.url)
	for _, key := range []struct {
		arn    *string
		signer **signing.KMSSigner
		what   string
	}{{&k.vaultKey, &k.vault, "the vault's signer"}, {&k.feeKey, &k.fee, "the fee account"}} {
		out, err := k.client.CreateKey(ctx, &kms.CreateKeyInput{
			KeySpec: kmstypes.KeySpecEccNistEdwards25519, KeyUsage: kmstypes.KeyUsageTypeSignVerify,
			Description: aws.String("local stack: " + key.what),
		})
		if err != nil {
			return nil, fmt.Errorf("devstack: KMS CreateKey: %w", err)
		}
		*key.arn = aws.ToString(out.KeyMetadata.Arn)
		if *key.signer, err = signing.NewKMSSigner(ctx, k.client, *key.arn); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// newKMSClient is the AWS SDK's KMS client for the endpoint url, with static local credentials
// (the emulator does not check SigV4 signatures).
func newKMSClient(url string) *kms.Client {
	return kms.New(kms.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	})
}

// vaultSignerOptions is the SetOptions that makes signer the vault's only effective key, as
// README.md ("Signing keys in KMS") tells an operator to do for an existing vault: signer at weight
// 1, the low, medium and high thresholds at 1 and the master weight at 0. The vault keeps its
// address; from then on only the KMS key signs for it (payments are medium, changing signers
// high: the KMS key alone reaches both, so it can later rotate itself).
func vaultSignerOptions(signer string) *txnbuild.SetOptions {
	one, zero := txnbuild.Threshold(1), txnbuild.Threshold(0)
	return &txnbuild.SetOptions{
		Signer:       &txnbuild.Signer{Address: signer, Weight: 1},
		LowThreshold: &one, MediumThreshold: &one, HighThreshold: &one, MasterWeight: &zero,
	}
}

// addVaultSigner applies so (vaultSignerOptions) to the vault in one transaction from the vault,
// signed by its master key, and returns the ledger it was applied in. now is the network's clock
// (the transaction's timebounds end 5 minutes after it).
func addVaultSigner(ctx context.Context, n *stellarsim.Network, vault *keypair.Full, so *txnbuild.SetOptions, now time.Time) (uint32, error) {
	acct, ok := n.Account(vault.Address())
	if !ok {
		return 0, fmt.Errorf("devstack: the vault %s does not exist", vault.Address())
	}
	tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
		SourceAccount:        &txnbuild.SimpleAccount{AccountID: vault.Address(), Sequence: acct.Sequence},
		IncrementSequenceNum: true, BaseFee: txnbuild.MinBaseFee,
		Operations:    []txnbuild.Operation{so},
		Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, now.Add(5*time.Minute).Unix())},
	})
	if err != nil {
		return 0, err
	}
	if tx, err = tx.Sign(n.Passphrase(), vault); err != nil {
		return 0, err
	}
	b64, err := tx.Base64()
	if err != nil {
		return 0, err
	}
	hash, err := tx.HashHex(n.Passphrase())
	if err != nil {
		return 0, err
	}
	rpc := rpcclient.NewClient(n.RPCURL(), nil)
	defer func() { _ = rpc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	r, err := rpc.SendTransaction(ctx, protocol.SendTransactionRequest{Transaction: b64})
	if err != nil {
		return 0, fmt.Errorf("devstack: sending the vault's SetOptions: %w", err)
	}
	if r.Status != "PENDING" {
		return 0, fmt.Errorf("devstack: the vault's SetOptions was answered %s %s", r.Status, r.ErrorResultXDR)
	}
	n.CloseLedger()
	a, ok := n.Transaction(hash)
	if !ok || a.Status != "SUCCESS" {
		return 0, fmt.Errorf("devstack: the vault's SetOptions did not succeed: %+v", a)
	}
	return a.Ledger, nil
}

// waitRPCShows waits until the local network's Stellar RPC shows ledger (RPC ingests a closed
// ledger 1 to 3 s after it closes, on the network's clock), so that the service's first read sees
// what that ledger changed. It polls every 50 ms of clock (the wall clock for `make run`, or the
// stack's virtual clock, which each poll's Sleep moves on) for up to 30 s of real time.
func waitRPCShows(ctx context.Context, n *stellarsim.Network, ledger uint32, clock transfer.Clock) error {
	rpc := rpcclient.NewClient(n.RPCURL(), nil)
	defer func() { _ = rpc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		latest, err := rpc.GetLatestLedger(ctx)
		if err == nil && latest.Sequence >= ledger {
			return nil
		}
		if err := clock.Sleep(ctx, 50*time.Millisecond); err != nil {
			return fmt.Errorf("devstack: waiting for RPC to show ledger %d: %w", ledger, err)
		}
	}
}
