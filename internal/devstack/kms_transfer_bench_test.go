package devstack

import (
	"context"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// transferRig is the service assembled as the Lambda assembles it (wiring.Build, wiring.SigningKeys)
// over minidyn and the local network, the vault as the only source, signing with seeds from the
// secret or (useKMS) with a KMS key, reached by the SDK's KMS client over HTTP on 127.0.0.1, that
// was added as the vault's signer (master weight 0).
func newTransferRig(tb testing.TB, useKMS bool) (*wiring.Service, string) {
	tb.Helper()
	ctx := context.Background()
	// One virtual clock for the service and the network: Sleep moves it on and a ledger closes for
	// every 5 s passed, so a transfer's await costs no real time.
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	n, err := stellarsim.Start(stellarsim.Options{Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = n.Close() })
	n.CloseOnAdvance(clock, 5*time.Second)
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		tb.Fatal(err)
	}
	issuer, _ := n.CreateKeypair(1e11)
	usdc := n.IssueAsset("USDC", issuer)
	wallet := keypair.MustRandom()
	for _, err := range []error{n.CreateAccount(keys.Vault.Address(), 1e11), n.AddTrustline(keys.Vault.Address(), usdc, 0),
		n.Mint(keys.Vault.Address(), usdc, 1e15), n.CreateAccount(wallet.Address(), 1e11), n.AddTrustline(wallet.Address(), usdc, 0)} {
		if err != nil {
			tb.Fatal(err)
		}
	}
	env := map[string]string{"CHANNEL_COUNT": "0", "SIGNING_SECRET_ARN": "local/signing-keys", "NETWORK_PASSPHRASE": n.Passphrase(),
		"STELLAR_RPC_URL": n.RPCURL(), "VAULT_ACCOUNT": keys.Vault.Address(), "ASSETS": "USDC:" + usdc.Issuer}
	secrets := signing.NewLocalSecrets()
	doc, _ := keys.MarshalSecret()
	secrets.Put("local/signing-keys", doc)
	var client signing.KMSAPI
	if useKMS {
		srv := httptest.NewServer(newLocalKMS())
		tb.Cleanup(srv.Close)
		c := newKMSClient(srv.URL)
		out, err := c.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistEdwards25519, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
		if err != nil {
			tb.Fatal(err)
		}
		signer, err := signing.NewKMSSigner(ctx, c, aws.ToString(out.KeyMetadata.Arn))
		if err != nil {
			tb.Fatal(err)
		}
		if _, err := addVaultSigner(ctx, n, keys.Vault, vaultSignerOptions(signer.Address()), clock.Now()); err != nil {
			tb.Fatal(err)
		}
		client = c
		env["SIGNER"], env["VAULT_KMS_KEY_ID"] = "kms", aws.ToString(out.KeyMetadata.Arn)
		delete(env, "SIGNING_SECRET_ARN")
	}
	db, _ := dynamotest.Minidyn(tb)
	env["TABLE_NAME"] = dynamotest.NewStore(tb, db).Table()
	cfg, err := config.Load(func(k string) string { return env[k] })
	if err != nil {
		tb.Fatal(err)
	}
	src, err := wiring.SigningKeys(cfg, secrets, client)
	if err != nil {
		tb.Fatal(err)
	}
	svc, err := wiring.Build(wiring.Deps{Config: cfg, Getenv: func(string) string { return "" }, Dynamo: db, Keys: src, Clock: clock})
	if err != nil {
		tb.Fatal(err)
	}
	return svc, wallet.Address()
}

// BenchmarkFreshTransferBySigner: a whole fresh transfer (claim, prepare with its signature,
// attach, send, await one ledger close in virtual time, settle) with each signer; the difference
// is what KMS signing adds to a transfer against the local emulator.
func BenchmarkFreshTransferBySigner(b *testing.B) {
	for _, tc := range []struct {
		name   string
		useKMS bool
	}{{"secrets", false}, {"kms", true}} {
		b.Run(tc.name, func(b *testing.B) {
			svc, wallet := newTransferRig(b, tc.useKMS)
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				in := transfer.Input{ClientKey: fmt.Sprintf("bench-signer-%08d", i), Request: transfer.Request{
					OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000}}
				out, err := svc.Orchestrator.Transfer(ctx, in)
				if err != nil || out.TransactionHash == "" {
					b.Fatal(out, err)
				}
			}
		})
	}
}

// The benchmark's rig pays: a transfer signed by the vault's KMS key lands (the local network
// weighs the KMS key's signature; the vault's own key has weight 0).
func TestTransferRigKMSLands(t *testing.T) {
	svc, wallet := newTransferRig(t, true)
	out, err := svc.Orchestrator.Transfer(context.Background(), transfer.Input{ClientKey: "rig-kms-0001", Request: transfer.Request{
		OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000}})
	if err != nil || out.TransactionHash == "" {
		t.Fatalf("transfer = %+v, %v", out, err)
	}
}
