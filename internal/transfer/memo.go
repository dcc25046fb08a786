package transfer

import (
	"encoding/hex"
	"regexp"
	"strconv"
	"strings"
)

// Memos and muxed destinations (README.md, "The HTTP API": memo; doc.go, "Muxed wallets"). The
// domain holds a memo as plain validated data; internal/stellar turns it into the transaction's
// memo and refuses what a ledger cannot carry.

// MemoType is the kind of a transaction memo, as the request names it.
type MemoType string

const (
	// MemoText is MEMO_TEXT: 0 to MemoTextMaxBytes bytes of text.
	MemoText MemoType = "text"
	// MemoID is MEMO_ID: an unsigned 64-bit integer.
	MemoID MemoType = "id"
	// MemoHash is MEMO_HASH: 32 bytes.
	MemoHash MemoType = "hash"
	// MemoReturn is MEMO_RETURN: 32 bytes, the hash of the transaction a refund returns.
	MemoReturn MemoType = "return"
)

// MemoTextMaxBytes is the longest text memo in bytes (not characters): the network's
// string<28> (stellar-xdr Stellar-transaction.x, union Memo, MEMO_TEXT; go-stellar-sdk
// txnbuild.MemoTextMaxLength, whose MemoText.ToXDR refuses a longer one).
const MemoTextMaxBytes = 28

// CodeInvalidMemo: the memo is not one the network accepts (an unknown type, a text of more than
// 28 bytes, an id that is not a uint64 in decimal, a hash or return that is not 32 bytes in hex).
const CodeInvalidMemo = "INVALID_MEMO"

// CodeMemoNotSupported: the ledger cannot carry the request's memo or muxed destination (the vault
// contract's call: internal/stellar, ContractLedger). Nothing was built or sent.
const CodeMemoNotSupported = "MEMO_NOT_SUPPORTED"

// RawMemo is a memo as the client sent it: {"type":"text"|"id"|"hash"|"return","value":"..."}.
// The value is always a JSON string: an id above 2^53 is not exact in every client's JSON number.
type RawMemo struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// Memo is a validated memo in canonical form; the zero Memo is no memo. Value is, by Type: the
// text byte for byte (never trimmed: the network compares bytes), an id in decimal without
// leading zeros, a hash or return as 64 lower-case hex digits. Two spellings of one on-chain memo
// ("007" and "7"; upper- and lower-case hex) canonicalise to the same Memo, so to the same
// fingerprint.
type Memo struct {
	Type  MemoType `json:"type"`
	Value string   `json:"value"`
}

// IsZero reports whether m is no memo.
func (m Memo) IsZero() bool { return m.Type == "" }

// ID is an id memo's value; ok is false for any other memo.
func (m Memo) ID() (id uint64, ok bool) {
	if m.Type != MemoID {
		return 0, false
	}
	v, err := strconv.ParseUint(m.Value, 10, 64)
	return v, err == nil
}

// Hash32 is a hash or return memo's 32 bytes; ok is false for any other memo.
func (m Memo) Hash32() (b [32]byte, ok bool) {
	if m.Type != MemoHash && m.Type != MemoReturn {
		return b, false
	}
	raw, err := hex.DecodeString(m.Value)
	if err != nil || len(raw) != 32 {
		return b, false
	}
	copy(b[:], raw)
	return b, true
}

// decimalDigits is an id memo's text: ASCII digits only (strconv.ParseUint also takes "0x..",
// "0b.." and "_" with base 0, and this service takes none of them).
var decimalDigits = regexp.MustCompile(`^[0-9]+$`)

// hex64 is a hash or return memo's text: 64 hex digits in any case.
var hex64 = regexp.MustCompile(`^[0-9A-Fa-f]{64}$`)

// CanonicalMemo validates raw as the network would take it into a transaction (go-stellar-sdk
// txnbuild: MemoText, MemoID, MemoHash, MemoReturn and their ToXDR; stellar-xdr union Memo) and
// returns its canonical form; nil is no memo. Rules, by type (exact, lower case):
//
//	text    0 to 28 bytes of UTF-8, taken byte for byte (string<28>; a JSON body is UTF-8)
//	id      "0" to "18446744073709551615": decimal digits, leading zeros allowed and dropped (uint64)
//	hash    64 hex digits, any case (Hash: opaque[32])
//	return  64 hex digits, any case (Hash: opaque[32])
//
// Errors: *ValidationError INVALID_MEMO (unacceptable) on field "memo.type" or "memo.value". The
// value is never echoed: a memo may identify a person's account at an exchange.
func CanonicalMemo(raw *RawMemo) (Memo, error) {
	if raw == nil {
		return Memo{}, nil
	}
	switch t := MemoType(raw.Type); t {
	case MemoText:
		if len(raw.Value) > MemoTextMaxBytes {
			return Memo{}, unacceptable(CodeInvalidMemo, "memo.value", "a text memo is at most %d bytes; this one is %d bytes (UTF-8)", MemoTextMaxBytes, len(raw.Value))
		}
		return Memo{Type: t, Value: raw.Value}, nil
	case MemoID:
		if !decimalDigits.MatchString(raw.Value) {
			return Memo{}, unacceptable(CodeInvalidMemo, "memo.value", "an id memo is an unsigned 64-bit integer written in decimal digits, as a JSON string such as \"1234\"")
		}
		v, err := strconv.ParseUint(raw.Value, 10, 64)
		if err != nil {
			return Memo{}, unacceptable(CodeInvalidMemo, "memo.value", "an id memo is at most 18446744073709551615 (an unsigned 64-bit integer)")
		}
		return Memo{Type: t, Value: strconv.FormatUint(v, 10)}, nil
	case MemoHash, MemoReturn:
		if !hex64.MatchString(raw.Value) {
			return Memo{}, unacceptable(CodeInvalidMemo, "memo.value", "a %s memo is 32 bytes written as 64 hex digits", t)
		}
		return Memo{Type: t, Value: strings.ToLower(raw.Value)}, nil
	case "":
		return Memo{}, malformed(CodeRequestInvalid, "memo.type", "memo.type is required: \"text\", \"id\", \"hash\" or \"return\"")
	default:
		return Memo{}, unacceptable(CodeInvalidMemo, "memo.type", "memo.type must be \"text\", \"id\", \"hash\" or \"return\" (lower case)")
	}
}

// fingerprintPart is what m adds to a request's fingerprint: nothing for no memo (a request
// without one fingerprints as its four fields alone, as every stored item without one does), else
// "\nmemo:<type>:<value>". It is the last part of the fingerprinted text, and no earlier part
// holds a line break, so the value may hold any bytes without two requests colliding.
func (m Memo) fingerprintPart() string {
	if m.IsZero() {
		return ""
	}
	return "\nmemo:" + string(m.Type) + ":" + m.Value
}
