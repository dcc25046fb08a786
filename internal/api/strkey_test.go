package api

import (
	"bytes"
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"errors"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A minimal SEP-23 strkey codec for tests: go-stellar-sdk's strkey and keypair packages need
// github.com/pkg/errors, which go.sum does not list yet.

const (
	versionAccount  byte = 6 << 3  // G...
	versionContract byte = 2 << 3  // C...
	versionMuxed    byte = 12 << 3 // M...
	versionSeed     byte = 18 << 3 // S... (a secret seed)
)

// crc16 is CRC-16/XMODEM, strkey's checksum.
func crc16(data []byte) uint16 {
	var crc uint16
	for _, b := range data {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func encodeStrkey(version byte, payload []byte) string {
	raw := append([]byte{version}, payload...)
	raw = binary.LittleEndian.AppendUint16(raw, crc16(raw))
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(raw)
}

// randomAddress is a valid strkey of version with a random payload.
func randomAddress(version byte) string {
	n := 32
	if version == versionMuxed {
		n = 40
	}
	p := make([]byte, n)
	_, _ = rand.Read(p)
	return encodeStrkey(version, p)
}

// testAddresses is a transfer.AddressParser that checks version byte, length and checksum.
type testAddresses struct{}

func (testAddresses) ParseAddress(s string) (transfer.AddressKind, error) {
	raw, err := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	if err != nil || len(raw) < 3 {
		return 0, errors.New("not base32")
	}
	body, sum := raw[:len(raw)-2], raw[len(raw)-2:]
	if !bytes.Equal(sum, binary.LittleEndian.AppendUint16(nil, crc16(body))) {
		return 0, errors.New("bad checksum")
	}
	switch {
	case body[0] == versionAccount && len(body) == 33:
		return transfer.AccountAddress, nil
	case body[0] == versionContract && len(body) == 33:
		return transfer.ContractAddress, nil
	case body[0] == versionMuxed && len(body) == 41:
		return transfer.MuxedAddress, nil
	}
	return 0, errors.New("unknown version byte")
}

// ParseMuxed takes an M... address apart (SEP-23): the G... account of its 32-byte key and its
// big-endian 64-bit id.
func (a testAddresses) ParseMuxed(s string) (string, uint64, error) {
	if k, err := a.ParseAddress(s); err != nil || k != transfer.MuxedAddress {
		return "", 0, errors.New("not a muxed address")
	}
	raw, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	return encodeStrkey(versionAccount, raw[1:33]), binary.BigEndian.Uint64(raw[33:41]), nil
}

// muxedOf is the M... address of account (a G... strkey) and id.
func muxedOf(account string, id uint64) string {
	raw, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(account)
	return encodeStrkey(versionMuxed, binary.BigEndian.AppendUint64(append([]byte(nil), raw[1:33]...), id))
}
