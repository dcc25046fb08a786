package signing

import (
	"errors"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
)

// The signing secret has one meaning or none (internal/strictjson): encoding/json would load the
// last of two vaultSeed values and take "VAULTSEED" for vaultSeed, so the key that signs would
// depend on which reader read the document. Each refusal names the field and never a value.

func TestSecretWithVaultSeedTwiceIsRefusedWithoutEitherValue(t *testing.T) {
	k := testKeys(t)
	for name, doc := range map[string]string{
		"vaultSeed twice":    `{"vaultSeed":"` + k.Vault.Seed() + `","vaultSeed":"` + k.Fee.Seed() + `"}`,
		"feeSeed twice":      `{"vaultSeed":"` + k.Vault.Seed() + `","feeSeed":"` + k.Fee.Seed() + `","feeSeed":"` + k.Vault.Seed() + `"}`,
		"channelSeeds twice": `{"vaultSeed":"` + k.Vault.Seed() + `","channelSeeds":[],"channelSeeds":["` + k.Fee.Seed() + `"]}`,
	} {
		for parser, parse := range map[string]func([]byte) (Keys, error){"ParseKeys": ParseKeys, "ParseChannelKeys": ParseChannelKeys} {
			_, err := parse([]byte(doc))
			if !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), "appears more than once") {
				t.Errorf("%s, %s: %v, want ErrBadSecret naming the repeated field", name, parser, err)
				continue
			}
			field := strings.Fields(name)[0]
			if !strings.Contains(err.Error(), `"`+field+`"`) {
				t.Errorf("%s, %s: %v does not name %s", name, parser, err, field)
			}
			assertNoSecret(t, name, err.Error(), k)
		}
	}
}

func TestSecretWithAFieldInAnotherCaseIsRefused(t *testing.T) {
	k := testKeys(t)
	for doc, want := range map[string]string{
		`{"VAULTSEED":"` + k.Vault.Seed() + `"}`:                                  `unknown field "VAULTSEED"; field names are case-sensitive: did you mean "vaultSeed"?`,
		`{"vaultSeed":"` + k.Vault.Seed() + `","FeeSeed":"` + k.Fee.Seed() + `"}`: `did you mean "feeSeed"?`,
		`{"vaultSeed":"` + k.Vault.Seed() + `","channelseeds":[]}`:                `did you mean "channelSeeds"?`,
	} {
		_, err := ParseKeys([]byte(doc))
		if !errors.Is(err, ErrBadSecret) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.20q...: %v, want an ErrBadSecret containing %q", doc, err, want)
			continue
		}
		assertNoSecret(t, "wrong case", err.Error(), k)
	}
}

// The same document with each field once still loads: the refusals above are about the form.
func TestSecretWithEachFieldOnceLoads(t *testing.T) {
	k := testKeys(t)
	got, err := ParseKeys([]byte(` {"vaultSeed":"` + k.Vault.Seed() + `", "feeSeed":"` + k.Fee.Seed() + `"} `))
	if err != nil || got.Vault.Address() != k.Vault.Address() || got.Fee.Address() != k.Fee.Address() {
		t.Fatalf("ParseKeys: %v", err)
	}
}

// The signing secret's errors name fields, never values (secret.go; README.md, "Configuration":
// seeds never appear in errors). A seed pasted as a field name (`{"S...": ...}`, or
// `{"vaultSeed S...": ""}`) is an unknown field, and its name must not be quoted whole into the
// error, which init logs and reports.
func TestSecretUnknownFieldNeverQuotesASeed(t *testing.T) {
	kp := keypair.MustRandom()
	for _, doc := range []string{
		`{"` + kp.Seed() + `":""}`,
		`{"vaultSeed ` + kp.Seed() + `":""}`,
		`{"channelSeeds":[],"` + kp.Seed() + `":1}`,
	} {
		for name, parse := range map[string]func([]byte) (Keys, error){"ParseKeys": ParseKeys, "ParseChannelKeys": ParseChannelKeys} {
			_, err := parse([]byte(doc))
			if !errors.Is(err, ErrBadSecret) || strings.Contains(err.Error(), kp.Seed()) {
				t.Errorf("%s: %v: want ErrBadSecret without the seed", name, err)
			}
		}
	}
	// A short misspelt name is still named.
	if _, err := ParseKeys([]byte(`{"vaultSeed":"` + kp.Seed() + `","vaultseed2":1}`)); err == nil || !strings.Contains(err.Error(), `"vaultseed2"`) {
		t.Errorf("misspelt field: %v", err)
	}
}
