package stellar

import (
	"fmt"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// invalidWallet is INVALID_ADDRESS (unacceptable) on walletAddress.
func invalidWallet(detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Kind: transfer.KindUnacceptable, Field: "walletAddress", Detail: detail}
}

// unknownAsset is INVALID_ASSET (unacceptable): no configured asset has this code, in any case.
func unknownAsset(code string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeInvalidAsset, Kind: transfer.KindUnacceptable, Field: "asset",
		Detail: fmt.Sprintf("asset %q is not configured on this ledger", clipCode(code))}
}

// clipCode keeps an unknown asset code short in a detail (a code has at most 12 characters).
func clipCode(s string) string {
	if len(s) <= 12 {
		return s
	}
	return s[:12] + "…"
}

// guardWallet refuses a wallet that is not a wallet: the vault itself (a payment to itself only
// burns a fee), the asset's issuer (a payment to it burns the asset), the fee account or a
// channel account (the service's own accounts), or one of contracts (the vault contracts).
// Addresses are compared decoded, so no spelling of one of them passes. Errors:
// *transfer.ValidationError INVALID_ADDRESS (unacceptable).
func (c *common) guardWallet(wallet rawAddress, asset vaultAsset, keys signing.Keys, contracts ...rawAddress) error {
	switch wallet {
	case c.vault:
		return invalidWallet("walletAddress is the vault itself")
	case asset.issuer:
		return invalidWallet(fmt.Sprintf("walletAddress is the issuer of %s; a payment to it would burn the asset", asset.credit.Code))
	}
	for _, k := range contracts {
		if wallet == k {
			return invalidWallet("walletAddress is a vault contract of this service")
		}
	}
	if !wallet.isAccount() {
		return nil
	}
	if feeKey := keys.FeeKey(); feeKey != nil {
		if fee, err := decodeAccount(feeKey.Address()); err == nil && wallet == fee {
			return invalidWallet("walletAddress is this service's fee account")
		}
	}
	if c.pool != nil {
		// An error here (no channel keys) fails the lease right after, with its own error.
		chans, _ := c.pool.Channels(keys)
		for _, ch := range chans {
			if a, err := decodeAccount(ch.Address()); err == nil && wallet == a {
				return invalidWallet("walletAddress is one of this service's channel accounts")
			}
		}
	}
	return nil
}
