package stellar

import (
	"errors"

	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ErrInvalidAddress is returned by Addresses.ParseAddress for anything that is not a valid
// account, contract or muxed strkey (SEP-23).
var ErrInvalidAddress = errors.New("stellar: not a valid account (G...), contract (C...) or muxed (M...) address")

// Addresses implements transfer.AddressParser with strkey (SEP-23): version byte, length and
// CRC16 checksum are verified.
type Addresses struct{}

var _ transfer.AddressParser = Addresses{}

// ParseAddress returns the kind of an upper-case strkey: G... AccountAddress, C... ContractAddress,
// M... MuxedAddress. Anything else, or a bad checksum, is ErrInvalidAddress. The input is not
// echoed in the error.
func (Addresses) ParseAddress(upper string) (transfer.AddressKind, error) {
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
