package stellar

import (
	"encoding/binary"
	"errors"
	"regexp"

	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ErrInvalidAddress is returned by Addresses.ParseAddress for anything that is not a valid
// account, contract or muxed strkey (SEP-23).
var ErrInvalidAddress = errors.New("stellar: not a valid account (G...), contract (C...) or muxed (M...) address")

// addressShape is the text of every strkey this service reads (SEP-23): a G... account or a C...
// contract (32-byte payload: 35 bytes with version and checksum, 56 base32 characters) or an M...
// muxed account (40-byte payload: 43 bytes, 69 characters), upper-case RFC 4648 base32 without
// padding. It is checked before any decoder sees the text: go-stellar-sdk's strkey decodes with
// encoding/base32, which skips '\r' and '\n' (so "G...\r\n..." decodes to the account it spells
// around the line break), and strkey.DecodeAny panics when fewer than three bytes remain
// ("AAA\nA"; go-stellar-sdk v0.7.3 strkey/main.go DecodeAny has no length check, unlike Decode).
var addressShape = regexp.MustCompile(`^(?:[GC][A-Z2-7]{55}|M[A-Z2-7]{68})$`)

// wellFormed reports whether s has the shape of a G..., C... or M... strkey (addressShape).
func wellFormed(s string) bool { return addressShape.MatchString(s) }

// Addresses implements transfer.AddressParser with strkey (SEP-23): shape, version byte, length
// and CRC16 checksum are verified.
type Addresses struct{}

var _ transfer.MuxedParser = Addresses{}

// ParseMuxed takes an upper-case M... address apart (SEP-23; go-stellar-sdk xdr.MuxedAccount
// SetAddress): the G... account it pays and its 64-bit id. Anything but a canonical M... strkey
// (shape, version byte, 40-byte payload, checksum, zero padding bits: strkey.Decode) is
// ErrInvalidAddress; the input is not echoed.
func (Addresses) ParseMuxed(upper string) (string, uint64, error) {
	m, err := decodeMuxed(upper)
	if err != nil {
		return "", 0, err
	}
	return m.account.String(), m.id, nil
}

// muxedAddress is a decoded M... address: the account it pays and its id (SEP-23).
type muxedAddress struct {
	account rawAddress
	id      uint64
}

// decodeMuxed checks s's shape (addressShape), then decodes it as an M... strkey whose
// re-encoding is s itself (strkey.Decode already refuses non-canonical padding bits; the
// re-encoding makes the one spelling this service accepts explicit). Anything else is
// ErrInvalidAddress; s is not echoed.
func decodeMuxed(s string) (muxedAddress, error) {
	if !wellFormed(s) || len(s) != 69 {
		return muxedAddress{}, ErrInvalidAddress
	}
	raw, err := strkey.Decode(strkey.VersionByteMuxedAccount, s)
	if err != nil || len(raw) != 40 {
		return muxedAddress{}, ErrInvalidAddress
	}
	if again, err := strkey.Encode(strkey.VersionByteMuxedAccount, raw); err != nil || again != s {
		return muxedAddress{}, ErrInvalidAddress
	}
	m := muxedAddress{account: rawAddress{version: strkey.VersionByteAccountID}, id: binary.BigEndian.Uint64(raw[32:])}
	copy(m.account.key[:], raw[:32])
	return m, nil
}

// muxedAccount is m as the XDR MuxedAccount a payment's destination holds (KEY_TYPE_MUXED_ED25519).
func (m muxedAddress) muxedAccount() xdr.MuxedAccount {
	return xdr.MuxedAccount{Type: xdr.CryptoKeyTypeKeyTypeMuxedEd25519,
		Med25519: &xdr.MuxedAccountMed25519{Id: xdr.Uint64(m.id), Ed25519: xdr.Uint256(m.account.key)}}
}

// ParseAddress returns the kind of an upper-case strkey: G... AccountAddress, C... ContractAddress,
// M... MuxedAddress. Anything else (any character outside A-Z 2-7, a wrong length, a bad
// checksum) is ErrInvalidAddress. The input is not echoed in the error.
func (Addresses) ParseAddress(upper string) (transfer.AddressKind, error) {
	if !wellFormed(upper) {
		return 0, ErrInvalidAddress
	}
	version, _, err := strkey.DecodeAny(upper)
	if err != nil {
		return 0, ErrInvalidAddress
	}
	switch version {
	case strkey.VersionByteAccountID:
		return transfer.AccountAddress, nil
	case strkey.VersionByteContract:
		return transfer.ContractAddress, nil
	case strkey.VersionByteMuxedAccount:
		return transfer.MuxedAddress, nil
	default:
		return 0, ErrInvalidAddress
	}
}

// rawAddress is a decoded G... account or C... contract: its version byte and its 32-byte payload
// (the ed25519 public key, or the contract ID). Guards compare addresses, never their text, so
// no spelling of one account passes for another.
type rawAddress struct {
	version strkey.VersionByte
	key     [32]byte
}

// decodeAddress checks s's shape (addressShape), then decodes it as a G... account or C...
// contract strkey. Anything else is ErrInvalidAddress; s is not echoed.
func decodeAddress(s string) (rawAddress, error) {
	if !wellFormed(s) {
		return rawAddress{}, ErrInvalidAddress
	}
	for _, v := range []strkey.VersionByte{strkey.VersionByteAccountID, strkey.VersionByteContract} {
		if raw, err := strkey.Decode(v, s); err == nil && len(raw) == 32 {
			a := rawAddress{version: v}
			copy(a.key[:], raw)
			return a, nil
		}
	}
	return rawAddress{}, ErrInvalidAddress
}

// decodeAccount is decodeAddress for a G... account only.
func decodeAccount(s string) (rawAddress, error) {
	a, err := decodeAddress(s)
	if err != nil || !a.isAccount() {
		return rawAddress{}, ErrInvalidAddress
	}
	return a, nil
}

// decodeContract is decodeAddress for a C... contract only.
func decodeContract(s string) (rawAddress, error) {
	a, err := decodeAddress(s)
	if err != nil || a.isAccount() {
		return rawAddress{}, ErrInvalidAddress
	}
	return a, nil
}

func (a rawAddress) isAccount() bool { return a.version == strkey.VersionByteAccountID }

// String is the canonical strkey of a.
func (a rawAddress) String() string {
	s, err := strkey.Encode(a.version, a.key[:])
	if err != nil {
		// Unreachable: both version bytes are valid and the payload is 32 bytes.
		panic("stellar: encoding a decoded address: " + err.Error())
	}
	return s
}

// scAddress is a as a Soroban Address (ScAddress).
func (a rawAddress) scAddress() xdr.ScAddress {
	if a.isAccount() {
		key := xdr.Uint256(a.key)
		id := xdr.AccountId{Type: xdr.PublicKeyTypePublicKeyTypeEd25519, Ed25519: &key}
		return xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeAccount, AccountId: &id}
	}
	id := xdr.ContractId(a.key)
	return xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &id}
}
