package sources

import (
	"encoding/hex"
	"errors"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
)

// SEP-5 test 1 (https://github.com/stellar/stellar-protocol/blob/master/ecosystem/sep-0005.md):
// the BIP-39 seed of "illness spike retreat truth genius clock brain pass fit cave bargain toe".
const sep5Test1Seed = "e4a5a632e70943ae7f07659df1332160937fad82587216a4c64315a0fb39497ee4a01f76ddab4cba68147977f3a147b6ad584c41808e8238a07f6cc4b582f186"

func TestDeriveChannelKeysSEP5Vectors(t *testing.T) {
	seed, _ := hex.DecodeString(sep5Test1Seed)
	keys, err := DeriveChannelKeys(signing.NewMasterSeed(seed), 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ address, seed string }{
		{"GDRXE2BQUC3AZNPVFSCEZ76NJ3WWL25FYFK6RGZGIEKWE4SOOHSUJUJ6", "SBGWSG6BTNCKCOB3DIFBGCVMUPQFYPA2G4O34RMTB343OYPXU5DJDVMN"},
		{"GBAW5XGWORWVFE2XTJYDTLDHXTY2Q2MO73HYCGB3XMFMQ562Q2W2GJQX", "SCEPFFWGAG5P2VX5DHIYK3XEMZYLTYWIPWYEKXFHSK25RVMIUNJ7CTIS"},
		{"GAY5PRAHJ2HIYBYCLZXTHID6SPVELOOYH2LBPH3LD4RUMXUW3DOYTLXW", "SDAILLEZCSA67DUEP3XUPZJ7NYG7KGVRM46XA7K5QWWUIGADUZCZWTJP"},
	}
	for i, w := range want {
		if keys[i].Address() != w.address || keys[i].Seed() != w.seed {
			t.Errorf("m/44'/148'/%d': %s", i, keys[i].Address())
		}
	}
}

func TestChannelKeys(t *testing.T) {
	listed := sourcestest.Keys(t)
	listed.ChannelMaster = signing.MasterSeed{}
	for _, c := range []struct {
		count, want int
	}{{0, len(listed.Channels)}, {1, 1}} {
		got, err := ChannelKeys(listed, c.count)
		if err != nil || len(got) != c.want {
			t.Errorf("listed, count %d: %d keys, %v", c.count, len(got), err)
		}
	}
	if _, err := ChannelKeys(listed, len(listed.Channels)+1); !errors.Is(err, ErrNoChannels) {
		t.Errorf("more than listed: %v", err)
	}
	derived := signing.Keys{Vault: listed.Vault, ChannelMaster: signing.NewMasterSeed(make([]byte, 32))}
	if got, err := ChannelKeys(derived, 4); err != nil || len(got) != 4 || got[0].Address() == got[1].Address() {
		t.Errorf("derived: %v, %v", got, err)
	}
	if _, err := ChannelKeys(derived, 0); !errors.Is(err, ErrNoChannels) {
		t.Errorf("derived without a count: %v", err)
	}
	if _, err := ChannelKeys(signing.Keys{Vault: listed.Vault}, 3); !errors.Is(err, ErrNoChannels) {
		t.Errorf("no channel keys: %v", err)
	}
}
