package stellarsim

import (
	"crypto/sha256"
	"fmt"

	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Addresses, values and ledger keys of the vault contract.

// VaultBalanceKey is the LedgerKey of wallet's (G... or C...) balance entry
// in the vault contractID (C...).
func VaultBalanceKey(contractID, wallet string) (xdr.LedgerKey, error) {
	c, err := contractScAddress(contractID)
	if err != nil {
		return xdr.LedgerKey{}, err
	}
	w, err := ScAddress(wallet)
	if err != nil {
		return xdr.LedgerKey{}, err
	}
	return balanceLedgerKey(c, w), nil
}

// ScAddress converts a G... or C... address.
func ScAddress(address string) (xdr.ScAddress, error) {
	if strkey.IsValidContractAddress(address) {
		return contractScAddress(address)
	}
	return accountScAddress(address)
}

func accountScAddress(address string) (xdr.ScAddress, error) {
	id, err := xdr.AddressToAccountId(address)
	if err != nil {
		return xdr.ScAddress{}, fmt.Errorf("stellarsim: invalid account address %q", address)
	}
	return xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeAccount, AccountId: &id}, nil
}

func contractScAddress(address string) (xdr.ScAddress, error) {
	raw, err := strkey.Decode(strkey.VersionByteContract, address)
	if err != nil || len(raw) != 32 {
		return xdr.ScAddress{}, fmt.Errorf("stellarsim: invalid contract address %q", address)
	}
	var id xdr.ContractId
	copy(id[:], raw)
	return xdr.ScAddress{Type: xdr.ScAddressTypeScAddressTypeContract, ContractId: &id}, nil
}

func symbol(s string) xdr.ScVal {
	sym := xdr.ScSymbol(s)
	return xdr.ScVal{Type: xdr.ScValTypeScvSymbol, Sym: &sym}
}

func addressVal(a xdr.ScAddress) xdr.ScVal {
	return xdr.ScVal{Type: xdr.ScValTypeScvAddress, Address: &a}
}

func i128Val(v int64) xdr.ScVal {
	hi := xdr.Int64(0)
	if v < 0 {
		hi = -1
	}
	return xdr.ScVal{Type: xdr.ScValTypeScvI128, I128: &xdr.Int128Parts{Hi: hi, Lo: xdr.Uint64(uint64(v))}}
}

// i128ToInt64 reads an i128 that fits in an int64.
func i128ToInt64(v xdr.ScVal) (int64, bool) {
	if v.Type != xdr.ScValTypeScvI128 || v.I128 == nil {
		return 0, false
	}
	lo := int64(v.I128.Lo)
	switch {
	case v.I128.Hi == 0 && lo >= 0, v.I128.Hi == -1 && lo < 0:
		return lo, true
	}
	return 0, false
}

func balanceLedgerKey(contract, wallet xdr.ScAddress) xdr.LedgerKey {
	vec := xdr.ScVec{symbol("Balance"), addressVal(wallet)}
	pv := &vec
	var k xdr.LedgerKey
	_ = k.SetContractData(contract, xdr.ScVal{Type: xdr.ScValTypeScvVec, Vec: &pv}, xdr.ContractDataDurabilityPersistent)
	return k
}

func instanceLedgerKey(contract xdr.ScAddress) xdr.LedgerKey {
	var k xdr.LedgerKey
	_ = k.SetContractData(contract, xdr.ScVal{Type: xdr.ScValTypeScvLedgerKeyContractInstance}, xdr.ContractDataDurabilityPersistent)
	return k
}

func codeLedgerKey(hash xdr.Hash) xdr.LedgerKey {
	var k xdr.LedgerKey
	_ = k.SetContractCode(hash)
	return k
}

func keyString(k xdr.LedgerKey) string {
	s, _ := xdr.MarshalBase64(k)
	return s
}

func ttlKeyHash(k xdr.LedgerKey) xdr.Hash {
	b, _ := k.MarshalBinary()
	return sha256.Sum256(b)
}

// entrySize is the XDR size of the ledger entry, the unit of read and write bytes.
func entrySize(e *contractEntry) uint32 {
	b, _ := xdr.LedgerEntry{LastModifiedLedgerSeq: xdr.Uint32(e.lastModified), Data: e.data}.MarshalBinary()
	return uint32(len(b))
}
