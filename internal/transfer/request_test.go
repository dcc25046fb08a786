package transfer_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func TestParseKey(t *testing.T) {
	r := transfer.Rules{MaxKeyLength: 20}
	for _, tc := range []struct {
		key, code string
	}{
		{"", transfer.CodeKeyMissing},
		{"1234567", transfer.CodeKeyInvalid},
		{"12345678", ""},
		{"A-z0.9_:~-abcdefghij", ""},
		{"A-z0.9_:~-abcdefghijk", transfer.CodeKeyInvalid},
		{"has space1", transfer.CodeKeyInvalid},
		{"new\nline12", transfer.CodeKeyInvalid},
		{"ünïcode-key", transfer.CodeKeyInvalid},
		{"slash/key/1", transfer.CodeKeyInvalid},
	} {
		got, err := r.ParseKey(tc.key)
		if tc.code == "" {
			if err != nil || got != tc.key {
				t.Errorf("ParseKey(%q) = %q, %v", tc.key, got, err)
			}
			continue
		}
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != tc.code || v.Kind != transfer.KindMalformed {
			t.Errorf("ParseKey(%q) err = %v, want %s (malformed)", tc.key, err, tc.code)
		}
	}
	if _, err := (transfer.Rules{}).ParseKey(strings.Repeat("k", 255)); err != nil {
		t.Errorf("255 characters is the default maximum: %v", err)
	}
	if _, err := (transfer.Rules{}).ParseKey(strings.Repeat("k", 256)); err == nil {
		t.Error("256 characters must be refused by default")
	}
}

func TestCanonicalAmount(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		stroops  int64
	}{
		{"1000.50", "1000.5", 10_005_000_000},
		{"01000.5", "1000.5", 10_005_000_000},
		{"1000", "1000", 10_000_000_000},
		{"1000.0", "1000", 10_000_000_000},
		{"0.0000001", "0.0000001", 1},
		{" 7 ", "7", 70_000_000},
		{"922337203685.4775807", "922337203685.4775807", 9223372036854775807},
		{"000000000000922337203685.47758070", "922337203685.4775807", 9223372036854775807},
	} {
		got, stroops, err := transfer.CanonicalAmount(tc.in)
		if err != nil || got != tc.want || stroops != tc.stroops {
			t.Errorf("CanonicalAmount(%q) = %q, %d, %v; want %q, %d", tc.in, got, stroops, err, tc.want, tc.stroops)
		}
	}
	for _, bad := range []string{"", "0", "0.0", "-1", "+1", "1e3", "NaN", "Infinity", "1.", ".5", "1.00000001",
		"922337203685.4775808", "99999999999999999999", "1,5", "0x10", "１"} {
		_, _, err := transfer.CanonicalAmount(bad)
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != transfer.CodeInvalidAmount || v.Kind != transfer.KindUnacceptable {
			t.Errorf("CanonicalAmount(%q) err = %v, want INVALID_AMOUNT (unacceptable)", bad, err)
		}
	}
}

func TestCanonicalize(t *testing.T) {
	rules := transfer.Rules{Assets: []string{"USDC", "EURC"}, Addresses: addresses{}}
	base := transfer.RawRequest{OperationType: "withdraw", WalletAddress: strings.ToLower(wallet), Amount: "1000.50", Asset: "usdc"}
	req, err := rules.Canonicalize(base)
	if err != nil {
		t.Fatal(err)
	}
	if req.WalletAddress != wallet || req.Asset != "USDC" || req.Amount != "1000.5" || req.Stroops != 10_005_000_000 {
		t.Fatalf("canonical = %+v", req)
	}
	other := base
	other.WalletAddress, other.Amount, other.Asset = wallet, "01000.5", "USDC"
	req2, err := rules.Canonicalize(other)
	if err != nil || req2.Fingerprint() != req.Fingerprint() {
		t.Fatal("two spellings of one transfer must share a fingerprint")
	}
	changed := other
	changed.Amount = "1000.51"
	req3, _ := rules.Canonicalize(changed)
	if req3.Fingerprint() == req.Fingerprint() {
		t.Fatal("a different amount must change the fingerprint")
	}
	for _, tc := range []struct {
		mutate func(*transfer.RawRequest)
		code   string
		kind   transfer.Kind
	}{
		{func(r *transfer.RawRequest) { r.OperationType = "" }, transfer.CodeRequestInvalid, transfer.KindMalformed},
		{func(r *transfer.RawRequest) { r.WalletAddress = "" }, transfer.CodeRequestInvalid, transfer.KindMalformed},
		{func(r *transfer.RawRequest) { r.Amount = "" }, transfer.CodeRequestInvalid, transfer.KindMalformed},
		{func(r *transfer.RawRequest) { r.Asset = "" }, transfer.CodeRequestInvalid, transfer.KindMalformed},
		{func(r *transfer.RawRequest) { r.OperationType = "transfer" }, transfer.CodeOperationNotSupp, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.OperationType = "WITHDRAW" }, transfer.CodeOperationNotSupp, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.WalletAddress = "GABC" }, transfer.CodeInvalidAddress, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.WalletAddress = "M" + wallet[1:] }, transfer.CodeInvalidAddress, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.WalletAddress = "S" + wallet[1:] }, transfer.CodeInvalidAddress, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.Amount = "-5" }, transfer.CodeInvalidAmount, transfer.KindUnacceptable},
		{func(r *transfer.RawRequest) { r.Asset = "BTC" }, transfer.CodeInvalidAsset, transfer.KindUnacceptable},
	} {
		raw := base
		tc.mutate(&raw)
		_, err := rules.Canonicalize(raw)
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != tc.code || v.Kind != tc.kind {
			t.Errorf("Canonicalize(%+v) err = %v, want %s (%s)", raw, err, tc.code, tc.kind)
		}
	}
}

func TestStoreKeyIsWalletScoped(t *testing.T) {
	a := transfer.StoreKey(wallet, "checkout-1")
	if a != transfer.StoreKey(strings.ToLower(wallet), "checkout-1") {
		t.Fatal("wallet case must not change the key")
	}
	if !strings.HasPrefix(a, "transfer:") || len(a) != len("transfer:")+16+1+len("checkout-1") || !strings.HasSuffix(a, ":checkout-1") {
		t.Fatalf("key = %q", a)
	}
	if strings.Contains(a, wallet) {
		t.Fatal("the wallet address must not appear in the key")
	}
	other := "GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3"
	if transfer.StoreKey(other, "checkout-1") == a {
		t.Fatal("two wallets with one client key must not collide")
	}
	// sha256("GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H")[:8] in hex.
	if want := "transfer:" + sha16(wallet) + ":checkout-1"; a != want {
		t.Fatalf("key = %q, want %q", a, want)
	}
}
