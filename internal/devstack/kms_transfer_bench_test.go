package devstack

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// newTransferRig starts the API function of the local stack (Start: assembled as the Lambda
// assembles it, wiring.Build and wiring.SigningKeys, over minidyn and the local network) with the
// vault as the only source, signing with seeds from the secret or (useKMS) with a KMS key, reached
// by the SDK's KMS client over HTTP on 127.0.0.1, that was added as the vault's signer (master
// weight 0). One virtual clock runs the service and the network: Sleep moves it on and a ledger
// closes for every 5 s passed, so a transfer's await costs no real time. It returns the service
// and a wallet that trusts USDC.
func newTransferRig(tb testing.TB, useKMS bool) (*wiring.Service, string) {
	tb.Helper()
	env := map[string]string{"CHANNEL_COUNT": "0"}
	if useKMS {
		env["SIGNER"] = config.SignerKMS
	}
	st, err := Start(context.Background(), Options{Clock: vclock.New(time.Unix(1_900_000_000, 0)), APIOnly: true, DemoWallets: 1,
		Getenv: func(k string) string { return env[k] }})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st.Service, st.Info.Wallets[0].Account
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
