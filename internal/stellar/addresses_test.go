package stellar

import (
	"errors"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func TestParseAddress(t *testing.T) {
	kp := keypair.MustRandom()
	contract := strkey.MustEncode(strkey.VersionByteContract, make([]byte, 32))
	var m strkey.MuxedAccount
	if err := m.SetAccountID(kp.Address()); err != nil {
		t.Fatal(err)
	}
	m.SetID(7)
	muxed, err := m.Address()
	if err != nil {
		t.Fatal(err)
	}
	good := map[string]transfer.AddressKind{
		kp.Address(): transfer.AccountAddress,
		contract:     transfer.ContractAddress,
		muxed:        transfer.MuxedAddress,
	}
	for addr, want := range good {
		got, err := Addresses{}.ParseAddress(addr)
		if err != nil || got != want {
			t.Errorf("ParseAddress(%s) = %v, %v; want %v", addr, got, err, want)
		}
	}
	flip := []byte(kp.Address())
	if flip[10] == 'A' {
		flip[10] = 'B'
	} else {
		flip[10] = 'A'
	}
	bad := []string{"", "G", kp.Seed(), string(flip), kp.Address() + "A", "XYZ",
		strkey.MustEncode(strkey.VersionByteHashTx, make([]byte, 32))}
	for _, addr := range bad {
		if _, err := (Addresses{}).ParseAddress(addr); !errors.Is(err, ErrInvalidAddress) {
			t.Errorf("ParseAddress(%q) err = %v, want ErrInvalidAddress", addr, err)
		}
	}
}
