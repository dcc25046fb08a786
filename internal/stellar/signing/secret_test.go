package signing

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

func TestParseKeysRoundTrip(t *testing.T) {
	k := testKeys(t)
	doc, err := k.MarshalSecret()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKeys(doc)
	if err != nil {
		t.Fatal(err)
	}
	if got.Vault.Address() != k.Vault.Address() || got.Fee.Address() != k.Fee.Address() ||
		len(got.Channels) != 2 || got.Channels[1].Address() != k.Channels[1].Address() ||
		!bytes.Equal(got.ChannelMaster.Bytes(), k.ChannelMaster.Bytes()) {
		t.Errorf("round trip: got %v, want %v", got, k)
	}
	// Only the vault is required.
	only, err := ParseKeys([]byte(`{"vaultSeed":"` + k.Vault.Seed() + `"}`))
	if err != nil || only.Fee != nil || only.Channels != nil || only.ChannelMaster.IsSet() {
		t.Errorf("vault only: %v, %v", only, err)
	}
}

func TestParseKeysErrorsNameFieldsNotValues(t *testing.T) {
	k := testKeys(t)
	seed := k.Vault.Seed()
	// A seed with one character changed: a checksum failure.
	bad := []byte(seed)
	bad[20] ^= 1
	cases := map[string]string{
		`{}`:                                  "vaultSeed is required",
		`{"vaultSeed":"` + string(bad) + `"}`: "vaultSeed is not a valid secret seed",
		`{"vaultSeed":"` + k.Vault.Address() + `"}`:                                                   "vaultSeed is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","feeSeed":"x"}`:                                                  "feeSeed is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","channelSeeds":["` + seed + `","` + string(bad) + `"]}`:          "channelSeeds[1] is not a valid secret seed",
		`{"vaultSeed":"` + seed + `","channelSeeds":["` + k.Fee.Seed() + `","` + k.Fee.Seed() + `"]}`: "channelSeeds[1] repeats",
		`{"vaultSeed":"` + seed + `","channelMasterSeed":"zz` + seed + `"}`:                           "channelMasterSeed must be",
		`{"vaultSeed":"` + seed + `","vaultseed2":"` + seed + `"}`:                                    `unknown field "vaultseed2"`,
		`{"vaultSeed":` + seed + `}`:                                                                  "not valid JSON",
		`{"vaultSeed":"` + seed + `"` + seed:                                                          "not valid JSON",
		`{"vaultSeed":["` + seed + `"]}`:                                                              `field "vaultSeed" must be a string`,
		`["` + seed + `"]`:                                                                            "must be a",
		`{"vaultSeed":"` + seed + `"} {}`:                                                             "trailing data",
		``:                                                                                            "not a JSON object",
	}
	for doc, want := range cases {
		_, err := ParseKeys([]byte(doc))
		if err == nil || !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseKeys(%.30q...) = %v, want an ErrBadSecret containing %q", doc, err, want)
			continue
		}
		assertNoSecret(t, "ParseKeys error", err.Error(), k)
		if strings.Contains(err.Error(), string(bad[:20])) {
			t.Errorf("ParseKeys error quotes the bad seed: %v", err)
		}
	}
}
