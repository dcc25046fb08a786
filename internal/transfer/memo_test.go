package transfer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// muxedParser takes apart the M... addresses it was given, as internal/stellar's Addresses does.
type muxedParser struct {
	addresses
	muxed map[string]transfer.Wallet
}

func (p muxedParser) ParseAddress(s string) (transfer.AddressKind, error) {
	if _, ok := p.muxed[s]; ok {
		return transfer.MuxedAddress, nil
	}
	return p.addresses.ParseAddress(s)
}

func (p muxedParser) ParseMuxed(s string) (string, uint64, error) {
	w, ok := p.muxed[s]
	if !ok {
		return "", 0, errors.New("not muxed")
	}
	return w.Account, w.MuxedID, nil
}

const (
	muxed1 = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK"
	muxed2 = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAAAAKM"
)

func muxedRules() transfer.Rules {
	return transfer.Rules{Assets: []string{"USDC"}, Addresses: muxedParser{muxed: map[string]transfer.Wallet{
		muxed1: {Account: wallet, MuxedID: 1}, muxed2: {Account: wallet, MuxedID: 2}}}}
}

// A request without a memo fingerprints as its four fields alone (stored items without one keep
// matching); a memo, its type, its value and the muxed address each change the fingerprint; two
// spellings of one on-chain memo do not.
func TestFingerprintHoldsMemoAndMuxedAddress(t *testing.T) {
	rules := muxedRules()
	canon := func(w string, m *transfer.RawMemo) transfer.Request {
		t.Helper()
		r, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: w, Amount: "12.5", Asset: "usdc", Memo: m})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	plain := canon(wallet, nil)
	legacy := sha256.Sum256([]byte("withdraw\n" + wallet + "\n12.5\nUSDC"))
	if plain.Fingerprint() != hex.EncodeToString(legacy[:]) {
		t.Errorf("a request without a memo fingerprints %s, before memos %x", plain.Fingerprint(), legacy)
	}
	seen := map[string]string{plain.Fingerprint(): "no memo"}
	for name, r := range map[string]transfer.Request{
		"text 7":   canon(wallet, &transfer.RawMemo{Type: "text", Value: "7"}),
		"id 7":     canon(wallet, &transfer.RawMemo{Type: "id", Value: "7"}),
		"id 8":     canon(wallet, &transfer.RawMemo{Type: "id", Value: "8"}),
		"text ''":  canon(wallet, &transfer.RawMemo{Type: "text", Value: ""}),
		"hash":     canon(wallet, &transfer.RawMemo{Type: "hash", Value: strings.Repeat("ab", 32)}),
		"return":   canon(wallet, &transfer.RawMemo{Type: "return", Value: strings.Repeat("ab", 32)}),
		"muxed 1":  canon(muxed1, nil),
		"muxed 2":  canon(muxed2, nil),
		"muxed 1+": canon(muxed1, &transfer.RawMemo{Type: "id", Value: "7"}),
	} {
		if other, dup := seen[r.Fingerprint()]; dup {
			t.Errorf("%s fingerprints as %s", name, other)
		}
		seen[r.Fingerprint()] = name
	}
	if a, b := canon(wallet, &transfer.RawMemo{Type: "id", Value: "007"}), canon(wallet, &transfer.RawMemo{Type: "id", Value: "7"}); a.Fingerprint() != b.Fingerprint() || a.Memo.Value != "7" {
		t.Errorf("id 007 %+v and id 7 %+v differ", a.Memo, b.Memo)
	}
	h := strings.Repeat("AB", 32)
	if a := canon(wallet, &transfer.RawMemo{Type: "hash", Value: h}); a.Memo.Value != strings.ToLower(h) {
		t.Errorf("hash canonical %q", a.Memo.Value)
	}
}

// A muxed wallet's key and history belong to its G... account (doc.go, "Muxed wallets"): two M...
// addresses of one account and the account itself share one store key per client key.
func TestMuxedWalletsShareTheirAccountsKey(t *testing.T) {
	rules := muxedRules()
	for _, w := range []string{muxed1, strings.ToLower(muxed2), wallet} {
		got, err := rules.ParseWallet(w)
		if err != nil {
			t.Fatal(err)
		}
		if got.Scope() != wallet || transfer.StoreKey(got.Scope(), "order-0001") != transfer.StoreKey(wallet, "order-0001") {
			t.Errorf("%s: scope %s", w, got.Scope())
		}
	}
	m, _ := rules.ParseWallet(muxed2)
	if !m.Muxed() || m.Address != muxed2 || m.Account != wallet || m.MuxedID != 2 {
		t.Errorf("ParseWallet(%s) = %+v", muxed2, m)
	}
	// Without a MuxedParser an M... wallet is refused, as before.
	plain := transfer.Rules{Assets: []string{"USDC"}, Addresses: addresses{}}
	var v *transfer.ValidationError
	if _, err := plain.ParseWallet(muxed1); !errors.As(err, &v) || v.Code != transfer.CodeInvalidAddress {
		t.Errorf("ParseWallet without a MuxedParser = %v", err)
	}
}

// Bad memos are typed refusals naming the field, never echoing the value.
func TestBadMemosAreTypedRefusals(t *testing.T) {
	rules := muxedRules()
	for _, tc := range []struct {
		memo  transfer.RawMemo
		code  string
		kind  transfer.Kind
		field string
	}{
		{transfer.RawMemo{Type: "text", Value: "a secret customer tag over 28"}, transfer.CodeInvalidMemo, transfer.KindUnacceptable, "memo.value"},
		{transfer.RawMemo{Type: "id", Value: "abc"}, transfer.CodeInvalidMemo, transfer.KindUnacceptable, "memo.value"},
		{transfer.RawMemo{Type: "hash", Value: "abcd"}, transfer.CodeInvalidMemo, transfer.KindUnacceptable, "memo.value"},
		{transfer.RawMemo{Type: "note", Value: "x"}, transfer.CodeInvalidMemo, transfer.KindUnacceptable, "memo.type"},
		{transfer.RawMemo{Value: "x"}, transfer.CodeRequestInvalid, transfer.KindMalformed, "memo.type"},
	} {
		_, err := rules.Canonicalize(transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: "1", Asset: "USDC", Memo: &tc.memo})
		var v *transfer.ValidationError
		if !errors.As(err, &v) || v.Code != tc.code || v.Kind != tc.kind || v.Field != tc.field || (tc.memo.Value != "x" && strings.Contains(v.Detail, tc.memo.Value)) {
			t.Errorf("%+v: %#v", tc.memo, err)
		}
	}
}
