package transfer_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// lenientDecoder behaves as go-stellar-sdk's strkey does on malformed text: it skips line breaks
// (encoding/base32) and panics on what is left too short (strkey.DecodeAny, v0.7.3). Rules must
// never hand it anything but an address's shape.
type lenientDecoder struct{ t *testing.T }

var strictShape = regexp.MustCompile(`^(?:[GC][A-Z2-7]{55}|M[A-Z2-7]{68})$`)

func (d lenientDecoder) ParseAddress(s string) (transfer.AddressKind, error) {
	if !strictShape.MatchString(s) {
		d.t.Errorf("the address parser saw %q", s)
	}
	s = strings.NewReplacer("\r", "", "\n", "").Replace(s)
	if len(s) < 8 {
		var raw []byte
		_ = raw[:len(s)-8] // the panic strkey.DecodeAny has on "AAA\nA"
	}
	return addresses{}.ParseAddress(s)
}

// A wallet with line breaks inside must not decode to the same account under another spelling
// (another store key: a second transfer under one Idempotency-Key), and "AAA\nA" must not panic.
func TestCanonicalWalletChecksTheShapeBeforeDecoding(t *testing.T) {
	rules := transfer.Rules{Assets: []string{"USDC"}, Addresses: lenientDecoder{t}}
	broken := wallet[:20] + "\r\n\r\n\r\n\r\n" + wallet[20:]
	for _, w := range []string{
		broken, wallet[:20] + "\n" + wallet[20:], "AAA\nA", "AAA\r\nA", wallet + "\n" + wallet[:5],
		wallet[:20] + " " + wallet[21:], wallet[:20] + "\t" + wallet[21:], wallet + "A", wallet[:55],
		wallet[:20] + "=" + wallet[21:], wallet[:20] + "1" + wallet[21:], "G" + strings.Repeat("A", 68),
		strings.Replace(wallet, "G", "Ｇ", 1), // a full-width G: ToUpper leaves it, the shape refuses it
	} {
		_, err := rules.CanonicalWallet(w)
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != transfer.CodeInvalidAddress || v.Kind != transfer.KindUnacceptable {
			t.Errorf("CanonicalWallet(%q) = %v, want INVALID_ADDRESS (unacceptable)", w, err)
		}
		_, err = rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: w, Amount: "1", Asset: "USDC"})
		if !errors.As(err, &v) || v.Code != transfer.CodeInvalidAddress {
			t.Errorf("Canonicalize with wallet %q = %v, want INVALID_ADDRESS", w, err)
		}
	}
	// Any case and surrounding white space still name the one account.
	for _, w := range []string{wallet, strings.ToLower(wallet), " " + wallet + "\r\n", "\t" + strings.ToLower(wallet)} {
		if got, err := rules.CanonicalWallet(w); err != nil || got != wallet {
			t.Errorf("CanonicalWallet(%q) = %q, %v; want %s", w, got, err, wallet)
		}
	}
}

// Asset codes are case-sensitive on Stellar. A request names an asset in any case and
// gets the asset exactly as configured; its fingerprint follows the configured spelling.
func TestCanonicalAssetIsTheConfiguredSpelling(t *testing.T) {
	rules := transfer.Rules{Assets: []string{"yUSDC", "eurC", "A", "AbCdEfGhIjKl"}, Addresses: addresses{}}
	for raw, want := range map[string]string{
		"yUSDC": "yUSDC", "YUSDC": "yUSDC", "yusdc": "yUSDC", " YuSdC ": "yUSDC",
		"EURC": "eurC", "eurc": "eurC", "a": "A", "ABCDEFGHIJKL": "AbCdEfGhIjKl",
	} {
		req, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "1", Asset: raw})
		if err != nil || req.Asset != want {
			t.Errorf("asset %q -> %q, %v; want %q", raw, req.Asset, err, want)
		}
	}
	for _, raw := range []string{"USDC", "yUSD", "\u212Aa", "ABCDEFGHIJKLM", "yUSDC\x00"} {
		_, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "1", Asset: raw})
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != transfer.CodeInvalidAsset {
			t.Errorf("asset %q: %v, want INVALID_ASSET", raw, err)
		}
	}
	// "\u212A" (the Kelvin sign) folds to "k" in Unicode: only ASCII case matches.
	kelvin := transfer.Rules{Assets: []string{"KES"}, Addresses: addresses{}}
	if _, err := kelvin.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "1", Asset: "\u212AES"}); err == nil {
		t.Error("the Kelvin sign matched K")
	}
}
