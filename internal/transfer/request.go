package transfer

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Operation is the kind of vault operation a transfer is.
type Operation string

const (
	// Deposit moves the asset from the wallet into the vault.
	Deposit Operation = "deposit"
	// Withdraw moves the asset from the vault to the wallet.
	Withdraw Operation = "withdraw"
)

// StroopsPerUnit is the number of stroops in one unit of an asset (7 decimal places).
const StroopsPerUnit = 10_000_000

// DefaultMaxKeyLength is TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH's default (README.md, "Configuration").
const DefaultMaxKeyLength = 255

// MinKeyLength is the shortest idempotency key accepted (README.md, "The HTTP API").
const MinKeyLength = 8

// MaxKeyLengthBound is the largest TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH allowed: the longest
// client key whose every DynamoDB key attribute stays within DynamoDB's limits (Amazon DynamoDB
// Developer Guide, "Constraints in Amazon DynamoDB", "Partition keys and sort keys": a partition
// key value is at most 2,048 bytes, a sort key value at most 1,024). A client key of n characters
// is n bytes (keyCharset is ASCII) and is held by these key attributes (internal/dynamo/doc.go,
// "Table layout"):
//
//	pk      table partition key  StoreKey: "transfer:" + 16 hex + ":" + key       26 + n <= 2,048
//	gsi1sk  gsi1 sort key        "2006-01-02T15:04:05.000Z" + "#" + StoreKey      51 + n <= 1,024
//	gsi2sk  gsi2 sort key        the same form as gsi1sk                          51 + n <= 1,024
//
// gsi1pk and gsi2pk never hold it (a partition name; a hash of the wallet). The sort keys bind:
// n <= 1,024 - 51 = 973. internal/dynamo's tests rebuild both sort keys at this length and one
// more, so a change of the key layout that breaks the bound fails there.
const MaxKeyLengthBound = 973

// RawRequest is a transfer request as the client sent it, before validation.
type RawRequest struct {
	OperationType string `json:"operationType"`
	WalletAddress string `json:"walletAddress"`
	Amount        string `json:"amount"`
	Asset         string `json:"asset"`
	// Memo is optional (nil: none); CanonicalMemo's rules.
	Memo *RawMemo `json:"memo,omitempty"`
}

// Request is a validated transfer request in canonical form: wallet upper case, asset spelled as
// configured, amount without leading or trailing zeros. Two spellings of one transfer
// canonicalise to the same Request.
type Request struct {
	OperationType Operation `json:"operationType"`
	// WalletAddress is a G... account, C... contract or M... muxed account strkey (SEP-23),
	// upper case: the destination as the client named it.
	WalletAddress string `json:"walletAddress"`
	// Account is the G... account (upper case) an M... WalletAddress pays (SEP-23: a muxed
	// account is its ed25519 account and a 64-bit id); "" for a G... or C... wallet. It scopes
	// the idempotency key and the history (Wallet.Scope; doc.go, "Muxed wallets").
	Account string `json:"account,omitempty"`
	// MuxedID is an M... WalletAddress's id (meaningful only when Account is set).
	MuxedID uint64 `json:"muxedId,omitempty"`
	// Amount is the canonical decimal string, e.g. "1000.5".
	Amount string `json:"amount"`
	// Asset is the configured asset code, spelled exactly as configured (Stellar asset codes are
	// case-sensitive: "yUSDC" and "YUSDC" are two assets).
	Asset string `json:"asset"`
	// Stroops is Amount in the asset's smallest unit (10^-7).
	Stroops int64 `json:"-"`
	// Memo is the transaction memo; the zero Memo is none.
	Memo Memo `json:"memo,omitzero"`
}

// Wallet is the wallet a request names, or a path's {walletAddress}: the address as named and,
// for a muxed one, its account and id.
type Wallet struct {
	// Address is the canonical strkey: a G..., C... or M..., upper case.
	Address string
	// Account is the G... account of a muxed Address, "" otherwise.
	Account string
	// MuxedID is a muxed Address's id.
	MuxedID uint64
}

// Muxed reports whether w is an M... address.
func (w Wallet) Muxed() bool { return w.Account != "" }

// Scope is the wallet an idempotency key and a history belong to: the G... account of a muxed
// address, else the address itself (doc.go, "Muxed wallets").
func (w Wallet) Scope() string {
	if w.Account != "" {
		return w.Account
	}
	return w.Address
}

// Wallet is the wallet r names.
func (r Request) Wallet() Wallet {
	return Wallet{Address: r.WalletAddress, Account: r.Account, MuxedID: r.MuxedID}
}

// AddressKind is the kind of strkey a wallet address is.
type AddressKind int

const (
	// AccountAddress is a G... ed25519 public key.
	AccountAddress AddressKind = iota + 1
	// ContractAddress is a C... contract ID.
	ContractAddress
	// MuxedAddress is an M... muxed account (refused as a wallet).
	MuxedAddress
)

// AddressParser verifies a strkey's version byte and checksum. The domain declares it so that it
// imports no Stellar package; internal/stellar provides it. Rules hands it only text of an
// address's shape (addressShape).
type AddressParser interface {
	ParseAddress(upper string) (AddressKind, error)
}

// MuxedParser is an AddressParser that also takes an M... address apart (SEP-23): the G...
// account it pays (upper case) and its 64-bit id. internal/stellar's Addresses provides it;
// Rules whose AddressParser is not one refuse M... wallets.
type MuxedParser interface {
	AddressParser
	ParseMuxed(upper string) (account string, id uint64, err error)
}

// addressShape is the text of a strkey (SEP-23) a wallet may be: a G... account or C... contract
// (56 characters) or an M... muxed account (69), in RFC 4648 base32's upper-case alphabet. It is
// checked before any decoder sees the text: Go's encoding/base32 (under go-stellar-sdk's strkey)
// skips '\r' and '\n', so "G...\r\n..." would decode to an account under a second spelling (a
// second store key, a second transfer), and strkey.DecodeAny panics on some short inputs.
var addressShape = regexp.MustCompile(`^(?:[GC][A-Z2-7]{55}|M[A-Z2-7]{68})$`)

// assetCodePattern is a Stellar asset code: 1 to 12 ASCII letters and digits (stellar-core,
// src/util/types.cpp isAssetValid).
var assetCodePattern = regexp.MustCompile(`^[A-Za-z0-9]{1,12}$`)

// Rules validates idempotency keys and canonicalises requests.
type Rules struct {
	// Assets are the accepted asset codes, spelled as configured. A request's asset matches one
	// of them ignoring case; no two of them may differ only by case (the configuration refuses it).
	Assets []string
	// MaxKeyLength bounds an idempotency key (TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH); 0 means 255.
	MaxKeyLength int
	Addresses    AddressParser
}

var keyCharset = regexp.MustCompile(`^[A-Za-z0-9._:~-]+$`)

// amountPattern is the amount rule: digits, optionally a dot and more digits. It refuses
// NaN, Infinity, exponents and signs.
var amountPattern = regexp.MustCompile(`^\d+(\.\d+)?$`)

// ParseKey validates a client's Idempotency-Key: MinKeyLength to MaxKeyLength characters of
// [A-Za-z0-9._:~-] (README.md, "The HTTP API"). A MaxKeyLength above MaxKeyLengthBound counts as
// MaxKeyLengthBound (the configuration refuses it; a longer key could not be stored). Errors:
// *ValidationError with IDEMPOTENCY_KEY_MISSING or IDEMPOTENCY_KEY_INVALID (malformed).
func (r Rules) ParseKey(key string) (string, error) {
	max := r.MaxKeyLength
	if max <= 0 {
		max = DefaultMaxKeyLength
	}
	max = min(max, MaxKeyLengthBound)
	switch {
	case key == "":
		return "", malformed(CodeKeyMissing, "Idempotency-Key", "the Idempotency-Key header is required")
	case len(key) < MinKeyLength || len(key) > max:
		return "", malformed(CodeKeyInvalid, "Idempotency-Key", "the Idempotency-Key must be %d to %d characters long", MinKeyLength, max)
	case !keyCharset.MatchString(key):
		return "", malformed(CodeKeyInvalid, "Idempotency-Key", "the Idempotency-Key may only contain A-Z, a-z, 0-9 and . _ : ~ -")
	}
	return key, nil
}

// Canonicalize validates raw and returns its canonical form. Errors are *ValidationError: a
// missing field is REQUEST_INVALID (malformed); a bad value is INVALID_ADDRESS, INVALID_AMOUNT,
// INVALID_ASSET or OPERATION_NOT_SUPPORTED (unacceptable).
func (r Rules) Canonicalize(raw RawRequest) (Request, error) {
	for _, f := range []struct{ name, value string }{
		{"operationType", raw.OperationType}, {"walletAddress", raw.WalletAddress},
		{"amount", raw.Amount}, {"asset", raw.Asset},
	} {
		if f.value == "" {
			return Request{}, malformed(CodeRequestInvalid, f.name, "%s is required", f.name)
		}
	}
	var req Request
	switch op := Operation(raw.OperationType); op {
	case Deposit, Withdraw:
		req.OperationType = op
	default:
		return Request{}, unacceptable(CodeOperationNotSupp, "operationType", "operationType must be %q or %q", Deposit, Withdraw)
	}
	wallet, err := r.ParseWallet(raw.WalletAddress)
	if err != nil {
		return Request{}, err
	}
	req.WalletAddress, req.Account, req.MuxedID = wallet.Address, wallet.Account, wallet.MuxedID
	req.Amount, req.Stroops, err = CanonicalAmount(raw.Amount)
	if err != nil {
		return Request{}, err
	}
	req.Asset, err = r.canonicalAsset(raw.Asset)
	if err != nil {
		return Request{}, err
	}
	req.Memo, err = CanonicalMemo(raw.Memo)
	if err != nil {
		return Request{}, err
	}
	return req, nil
}

// ParseWallet checks a wallet address as CanonicalWallet does, and takes also an M... muxed
// account (SEP-23; 69 characters of A-Z and 2-7, any case) when the AddressParser is a
// MuxedParser: it returns the address upper case with, for an M..., the G... account it pays and
// its id. Errors: *ValidationError INVALID_ADDRESS (unacceptable), as CanonicalWallet's.
func (r Rules) ParseWallet(raw string) (Wallet, error) {
	w := strings.ToUpper(strings.TrimSpace(raw))
	mp, ok := r.Addresses.(MuxedParser)
	if !ok || !strings.HasPrefix(w, "M") {
		addr, err := r.CanonicalWallet(raw)
		return Wallet{Address: addr}, err
	}
	if !addressShape.MatchString(w) {
		return Wallet{}, unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress is not a valid muxed account address (M...): 69 characters of A-Z and 2-7")
	}
	if kind, err := mp.ParseAddress(w); err != nil || kind != MuxedAddress {
		return Wallet{}, unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress is not a valid muxed account address (M...): its checksum or length is wrong")
	}
	account, id, err := mp.ParseMuxed(w)
	if err != nil || account == "" || account[0] != 'G' {
		return Wallet{}, unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress is not a valid muxed account address (M...)")
	}
	return Wallet{Address: w, Account: account, MuxedID: id}, nil
}

// CanonicalWallet checks a wallet address (a G... account or C... contract strkey with a valid
// checksum, any case, surrounding white space trimmed; muxed M... refused) and returns it upper
// case. Anything but the 56 characters of A-Z and 2-7 (any case) after trimming, line breaks
// inside included, is refused before it is decoded. Errors: *ValidationError INVALID_ADDRESS
// (unacceptable). Rules without an AddressParser is a programming error, reported as an untyped
// error, not as the client's fault.
func (r Rules) CanonicalWallet(raw string) (string, error) {
	w := strings.ToUpper(strings.TrimSpace(raw))
	if r.Addresses == nil {
		return "", errors.New("transfer: Rules has no AddressParser")
	}
	if !addressShape.MatchString(w) {
		return "", unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress is not a valid Stellar account (G...) or contract (C...) address: 56 characters of A-Z and 2-7")
	}
	kind, err := r.Addresses.ParseAddress(w)
	if err != nil {
		return "", unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress is not a valid Stellar account (G...) or contract (C...) address")
	}
	switch kind {
	case AccountAddress, ContractAddress:
		return w, nil
	case MuxedAddress:
		return "", unacceptable(CodeInvalidAddress, "walletAddress", "muxed (M...) addresses are not supported; use the underlying G... account")
	default:
		return "", unacceptable(CodeInvalidAddress, "walletAddress", "walletAddress must be a G... account or C... contract address")
	}
}

// canonicalAsset finds the configured asset whose code equals raw ignoring case (and
// surrounding white space) and returns its code as configured.
func (r Rules) canonicalAsset(raw string) (string, error) {
	a := strings.TrimSpace(raw)
	// ASCII only: strings.EqualFold alone would also match Unicode folds such as the Kelvin sign.
	for _, known := range r.Assets {
		if assetCodePattern.MatchString(a) && strings.EqualFold(a, known) {
			return known, nil
		}
	}
	return "", unacceptable(CodeInvalidAsset, "asset", "asset %q is not supported (supported: %s)", clip(raw, 12), strings.Join(r.Assets, ", "))
}

// CanonicalAmount checks a decimal amount (README.md, "The HTTP API": ^\d+(\.\d+)?$
// and > 0; at most 7 decimal places; at most math.MaxInt64 stroops) and returns it without
// leading or trailing zeros, with its value in stroops. Surrounding spaces are trimmed. Errors:
// *ValidationError INVALID_AMOUNT (unacceptable).
func CanonicalAmount(raw string) (string, int64, error) {
	s := strings.TrimSpace(raw)
	if !amountPattern.MatchString(s) {
		return "", 0, unacceptable(CodeInvalidAmount, "amount", "amount must be a positive decimal string such as \"1000.5\"")
	}
	whole, frac, _ := strings.Cut(s, ".")
	whole = strings.TrimLeft(whole, "0")
	frac = strings.TrimRight(frac, "0")
	if len(frac) > 7 {
		return "", 0, unacceptable(CodeInvalidAmount, "amount", "amount has more than 7 decimal places")
	}
	if whole == "" && frac == "" {
		return "", 0, unacceptable(CodeInvalidAmount, "amount", "amount must be greater than zero")
	}
	stroops, ok := toStroops(whole, frac)
	if !ok {
		return "", 0, unacceptable(CodeInvalidAmount, "amount", "amount is too large (at most 922337203685.4775807)")
	}
	canonical := whole
	if canonical == "" {
		canonical = "0"
	}
	if frac != "" {
		canonical += "." + frac
	}
	return canonical, stroops, nil
}

func toStroops(whole, frac string) (int64, bool) {
	var w int64
	if whole != "" {
		if len(whole) > 12 {
			return 0, false
		}
		v, err := strconv.ParseInt(whole, 10, 64)
		if err != nil {
			return 0, false
		}
		w = v
	}
	var f int64
	if frac != "" {
		v, err := strconv.ParseInt(frac+strings.Repeat("0", 7-len(frac)), 10, 64)
		if err != nil {
			return 0, false
		}
		f = v
	}
	if w > (math.MaxInt64-f)/StroopsPerUnit {
		return 0, false
	}
	return w*StroopsPerUnit + f, true
}

// StoreKey is the wallet-scoped item key: transfer:<first 16 hex of sha256(upper(wallet))>:<clientKey>
// (doc.go, "The item"). The wallet is hashed so the key stays bounded and no address
// shows in a key listing.
func StoreKey(wallet, clientKey string) string {
	sum := sha256.Sum256([]byte(strings.ToUpper(wallet)))
	return "transfer:" + hex.EncodeToString(sum[:])[:16] + ":" + clientKey
}

// storeKeyShape is StoreKey's form for any wallet and any key ParseKey can accept under
// MaxKeyLengthBound: "transfer:", 16 lower-case hex, ":", MinKeyLength to MaxKeyLengthBound
// characters of the key alphabet.
var storeKeyShape = regexp.MustCompile(`^transfer:[0-9a-f]{16}:[A-Za-z0-9._:~-]{` +
	strconv.Itoa(MinKeyLength) + `,` + strconv.Itoa(MaxKeyLengthBound) + `}$`)

// ValidStoreKey reports whether pk has the form StoreKey gives a client key that obeys the key
// rules at the largest configurable length (MaxKeyLengthBound). It does not say which wallet the
// key belongs to: compare with StoreKey(wallet, "") for that. A lowered
// TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH does not make stored keys invalid, so neither does it here.
func ValidStoreKey(pk string) bool {
	return storeKeyShape.MatchString(pk)
}

// Fingerprint is the hex sha256 of the canonical request. Two calls with one key and different
// fingerprints are a conflict. It is never returned by any API.
func (r Request) Fingerprint() string {
	// A fixed field order with a separator that no canonical field contains keeps this stable
	// without depending on a JSON encoder's choices.
	// The wallet as named is in it (an M... address holds its account and id), and so is the memo
	// (Memo.fingerprintPart): the same key with another muxed id or memo is a conflict.
	sum := sha256.Sum256([]byte(string(r.OperationType) + "\n" + r.WalletAddress + "\n" + r.Amount + "\n" + r.Asset + r.Memo.fingerprintPart()))
	return hex.EncodeToString(sum[:])
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
