package transfer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A configured maximum above MaxKeyLengthBound is capped there: a key the store could not index
// is refused at the door, whatever the environment says.
func TestParseKeyNeverAcceptsAKeyAboveTheIndexBound(t *testing.T) {
	r := transfer.Rules{MaxKeyLength: 5000}
	if _, err := r.ParseKey(strings.Repeat("k", transfer.MaxKeyLengthBound)); err != nil {
		t.Fatalf("a key of MaxKeyLengthBound characters: %v", err)
	}
	_, err := r.ParseKey(strings.Repeat("k", transfer.MaxKeyLengthBound+1))
	var ve *transfer.ValidationError
	if !errors.As(err, &ve) || ve.Code != transfer.CodeKeyInvalid {
		t.Fatalf("a key of MaxKeyLengthBound+1 characters: %v, want %s", err, transfer.CodeKeyInvalid)
	}
}

func TestValidStoreKeyIsStoreKeyOfAKeyTheRulesAccept(t *testing.T) {
	const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	for _, key := range []string{"12345678", "A-z0.9_:~-abcdefghij", strings.Repeat("k", transfer.MaxKeyLengthBound)} {
		if pk := transfer.StoreKey(wallet, key); !transfer.ValidStoreKey(pk) {
			t.Errorf("ValidStoreKey(%q) = false for an accepted key", pk)
		}
	}
	prefix := transfer.StoreKey(wallet, "")
	for name, pk := range map[string]string{
		"empty":                       "",
		"bare prefix":                 prefix,
		"key below the minimum":       prefix + "1234567",
		"key above the bound":         prefix + strings.Repeat("k", transfer.MaxKeyLengthBound+1),
		"a space in the key":          prefix + "order 0001",
		"é in the key":                prefix + "order-é001",
		"a new line after the key":    prefix + "order-0001\n",
		"upper-case hex":              "transfer:" + strings.ToUpper(prefix[9:25]) + ":order-0001",
		"short hash":                  "transfer:0123456789abcde:order-0001",
		"another prefix":              "channel:" + prefix[9:] + "order-0001",
		"no separator after the hash": "transfer:0123456789abcdef" + "order-0001",
	} {
		if transfer.ValidStoreKey(pk) {
			t.Errorf("%s: ValidStoreKey(%q) = true", name, pk)
		}
	}
}
