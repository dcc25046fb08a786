package stellar

import (
	"bytes"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// networkMemo is how the network reads a memo the client wrote as (type, value), derived with
// go-stellar-sdk alone: text through txnbuild.MemoText's ToXDR (string<28>), an id as the decimal
// uint64 it spells, a hash or return as the 32 bytes its hex spells. ok is false for what the
// network has no reading of.
func networkMemo(typ, value string) (xdr.Memo, bool) {
	var m txnbuild.Memo
	switch typ {
	case "text":
		m = txnbuild.MemoText(value)
	case "id":
		if value == "" || strings.TrimLeft(value, "0123456789") != "" {
			return xdr.Memo{}, false
		}
		id, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return xdr.Memo{}, false
		}
		m = txnbuild.MemoID(id)
	case "hash", "return":
		raw, err := hex.DecodeString(value)
		if err != nil || len(raw) != 32 {
			return xdr.Memo{}, false
		}
		var h [32]byte
		copy(h[:], raw)
		if typ == "hash" {
			m = txnbuild.MemoHash(h)
		} else {
			m = txnbuild.MemoReturn(h)
		}
	default:
		return xdr.Memo{}, false
	}
	x, err := m.ToXDR()
	return x, err == nil
}

// A memo is accepted exactly when the network has a reading of it, and the service's transaction
// carries that reading: transfer.CanonicalMemo (the door) then txMemo (the envelope) against
// networkMemo, on every type at and around its bounds.
func TestMemoValidatedAsTheNetworkReadsIt(t *testing.T) {
	hex32 := strings.Repeat("0f", 32)
	cases := []transfer.RawMemo{
		{Type: "text", Value: ""}, {Type: "text", Value: "x"}, {Type: "text", Value: strings.Repeat("x", 28)}, {Type: "text", Value: strings.Repeat("x", 29)},
		{Type: "text", Value: strings.Repeat("é", 14)}, {Type: "text", Value: strings.Repeat("é", 14) + "x"}, {Type: "text", Value: "€€€€€€€€€"}, {Type: "text", Value: "€€€€€€€€€€"},
		{Type: "text", Value: " padded "}, {Type: "text", Value: "line\nbreak"}, {Type: "text", Value: "nul\x00byte"},
		{Type: "id", Value: "0"}, {Type: "id", Value: "7"}, {Type: "id", Value: "007"}, {Type: "id", Value: "18446744073709551615"}, {Type: "id", Value: "18446744073709551616"},
		{Type: "id", Value: "-1"}, {Type: "id", Value: "+1"}, {Type: "id", Value: "1e3"}, {Type: "id", Value: "0x10"}, {Type: "id", Value: "1_000"}, {Type: "id", Value: " 1"}, {Type: "id", Value: ""}, {Type: "id", Value: "00000000000000000000007"},
		{Type: "hash", Value: hex32}, {Type: "hash", Value: strings.ToUpper(hex32)}, {Type: "hash", Value: hex32[:62]}, {Type: "hash", Value: hex32 + "00"}, {Type: "hash", Value: hex32[:63] + "g"}, {Type: "hash", Value: ""},
		{Type: "return", Value: hex32}, {Type: "return", Value: "AbCd" + hex32[4:]}, {Type: "return", Value: hex32[:63]},
		{Type: "TEXT", Value: "x"}, {Type: "Id", Value: "1"}, {Type: "memo_text", Value: "x"}, {Type: "none", Value: ""},
	}
	for _, raw := range cases {
		want, ok := networkMemo(raw.Type, raw.Value)
		got, err := transfer.CanonicalMemo(&raw)
		if ok != (err == nil) {
			t.Errorf("%q %q: CanonicalMemo error %v, the network reads it: %v", raw.Type, raw.Value, err, ok)
			continue
		}
		if !ok {
			continue
		}
		m, err := txMemo(got)
		if err != nil {
			t.Errorf("%q %q: canonical %+v refused by txMemo: %v", raw.Type, raw.Value, got, err)
			continue
		}
		x, err := m.ToXDR()
		a, _ := x.MarshalBinary()
		b, _ := want.MarshalBinary()
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%q %q: the envelope's memo %v, the network's reading %v", raw.Type, raw.Value, x, want)
		}
	}
}

// checkBuilt passes the envelope of exactly the payment asked and refuses one that differs in
// its muxed id, its account, muxed or not, its memo (value or type), its amount or its asset.
func TestCheckBuiltRefusesAnotherPayment(t *testing.T) {
	source := keypair.MustRandom()
	account, other := keypair.MustRandom().Address(), keypair.MustRandom().Address()
	usdc := txnbuild.CreditAsset{Code: "USDC", Issuer: keypair.MustRandom().Address()}
	asset := vaultAsset{credit: usdc}
	m, err := xdr.MuxedAccountFromAccountId(account, 42)
	if err != nil {
		t.Fatal(err)
	}
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: m.Address(), Account: account, MuxedID: 42, Asset: "USDC", Stroops: unit,
		Memo: transfer.Memo{Type: transfer.MemoID, Value: "7"}}
	to, err := paymentDestination(req)
	if err != nil {
		t.Fatal(err)
	}
	memo, err := txMemo(req.Memo)
	if err != nil {
		t.Fatal(err)
	}
	pay := payment{to: to, memo: memo}
	build := func(dest string, amount string, a txnbuild.CreditAsset, memo txnbuild.Memo) string {
		t.Helper()
		tx, err := txnbuild.NewTransaction(txnbuild.TransactionParams{
			SourceAccount: &txnbuild.SimpleAccount{AccountID: source.Address(), Sequence: 1}, IncrementSequenceNum: true,
			Operations: []txnbuild.Operation{&txnbuild.Payment{Destination: dest, Amount: amount, Asset: a}},
			BaseFee:    100, Memo: memo, Preconditions: txnbuild.Preconditions{TimeBounds: txnbuild.NewTimebounds(0, 1_900_000_000)},
		})
		if err != nil {
			t.Fatal(err)
		}
		b64, err := tx.Base64()
		if err != nil {
			t.Fatal(err)
		}
		return b64
	}
	muxed := func(a string, id uint64) string {
		mm, err := xdr.MuxedAccountFromAccountId(a, id)
		if err != nil {
			t.Fatal(err)
		}
		return mm.Address()
	}
	if err := checkBuilt(build(m.Address(), "1", usdc, txnbuild.MemoID(7)), pay, unit, asset); err != nil {
		t.Fatalf("the payment asked: %v", err)
	}
	for name, b64 := range map[string]string{
		"muxed id 43":     build(muxed(account, 43), "1", usdc, txnbuild.MemoID(7)),
		"the account":     build(account, "1", usdc, txnbuild.MemoID(7)),
		"another account": build(muxed(other, 42), "1", usdc, txnbuild.MemoID(7)),
		"memo id 8":       build(m.Address(), "1", usdc, txnbuild.MemoID(8)),
		"memo text 7":     build(m.Address(), "1", usdc, txnbuild.MemoText("7")),
		"no memo":         build(m.Address(), "1", usdc, nil),
		"another amount":  build(m.Address(), "1.0000001", usdc, txnbuild.MemoID(7)),
		"another asset":   build(m.Address(), "1", txnbuild.CreditAsset{Code: "USDC", Issuer: other}, txnbuild.MemoID(7)),
		"not an envelope": "AAAA",
	} {
		if err := checkBuilt(b64, pay, unit, asset); !errors.Is(err, errBuiltMismatch) {
			t.Errorf("%s: %v, want errBuiltMismatch", name, err)
		}
	}
}
