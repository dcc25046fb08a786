package devstack

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	kmstypes "github.com/aws/aws-sdk-go-v2/service/kms/types"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// BenchmarkTransferSigning measures what signing adds to a transfer with each signer: the
// signatures one transfer needs (the vault's key; with channels also the fee account's, on the
// fee bump; the channel's own key is a seed either way), by the secret signer (seeds in memory)
// and by the KMS signer (the AWS SDK's KMS client over HTTP to the local emulator on 127.0.0.1:
// request signing, one round trip, the emulator's Ed25519 signature, and the verification).
// Against AWS KMS add the network round trip to the regional endpoint per signature.
func BenchmarkTransferSigning(b *testing.B) {
	ctx := context.Background()
	emu := newLocalKMS()
	srv := httptest.NewServer(emu)
	defer srv.Close()
	client := newKMSClient(srv.URL)
	kmsSigner := func() signing.Signer {
		out, err := client.CreateKey(ctx, &kms.CreateKeyInput{KeySpec: kmstypes.KeySpecEccNistEdwards25519, KeyUsage: kmstypes.KeyUsageTypeSignVerify})
		if err != nil {
			b.Fatal(err)
		}
		s, err := signing.NewKMSSigner(ctx, client, aws.ToString(out.KeyMetadata.Arn))
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	seed := func() signing.Signer {
		kp, err := keypair.Random()
		if err != nil {
			b.Fatal(err)
		}
		return signing.SeedSigner{KP: kp}
	}
	hash := [32]byte{0x5a}
	for _, tc := range []struct {
		name    string
		signers []signing.Signer
	}{
		{"secrets/vault-source", []signing.Signer{seed()}},
		{"kms/vault-source", []signing.Signer{kmsSigner()}},
		{"secrets/channel", []signing.Signer{seed(), seed(), seed()}},
		{"kms/channel", []signing.Signer{seed(), kmsSigner(), kmsSigner()}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				for _, s := range tc.signers {
					if _, err := s.SignHash(ctx, hash); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
