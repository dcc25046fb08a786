package stellarsim

import (
	"bytes"
	"slices"

	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// SetOptions as stellar-core applies it (src/transactions/SetOptionsOpFrame.cpp), for the parts
// modelled: the master weight, the low, medium and high thresholds, and ed25519 signers (added
// with a weight, re-weighted, or removed with weight 0). Inflation destination, flags, home
// domain and the other signer key types are not modelled: an operation that sets them is refused
// at submission with opNOT_SUPPORTED.

func setOptionsResult(c xdr.SetOptionsResultCode) xdr.OperationResult {
	r, _ := xdr.NewSetOptionsResult(c, nil)
	return opInner(xdr.OperationTypeSetOptions, r)
}

// checkSetOptions is SetOptionsOpFrame::doCheckValid for the modelled fields: weights and
// thresholds above 255 are SET_OPTIONS_THRESHOLD_OUT_OF_RANGE; a signer that is the source
// account's own key, or weighs more than 255, is SET_OPTIONS_BAD_SIGNER.
func checkSetOptions(src string, so xdr.SetOptionsOp) (xdr.OperationResult, bool) {
	if so.InflationDest != nil || so.ClearFlags != nil || so.SetFlags != nil || so.HomeDomain != nil ||
		so.Signer != nil && so.Signer.Key.Type != xdr.SignerKeyTypeSignerKeyTypeEd25519 {
		return xdr.OperationResult{Code: xdr.OperationResultCodeOpNotSupported}, false
	}
	for _, w := range []*xdr.Uint32{so.MasterWeight, so.LowThreshold, so.MedThreshold, so.HighThreshold} {
		if w != nil && *w > 255 {
			return setOptionsResult(xdr.SetOptionsResultCodeSetOptionsThresholdOutOfRange), false
		}
	}
	if so.Signer != nil {
		key, err := so.Signer.Key.GetAddress()
		if err != nil || key == src || so.Signer.Weight > 255 {
			return setOptionsResult(xdr.SetOptionsResultCodeSetOptionsBadSigner), false
		}
	}
	return successResult(xdr.OperationTypeSetOptions), true
}

// setOptions applies so to src (SetOptionsOpFrame::doApply): thresholds, then the signer. A new
// signer is a subentry: past maxSigners it is SET_OPTIONS_TOO_MANY_SIGNERS, and without the
// base reserve for it SET_OPTIONS_LOW_RESERVE; removing one frees its reserve. Removing a signer
// the account does not have changes nothing.
func (ac *applyCtx) setOptions(src *account, so xdr.SetOptionsOp, reserve int64) (xdr.OperationResult, bool) {
	old := authOf(src)
	auth := &accountAuth{thresholds: old.thresholds, signers: slices.Clone(old.signers)}
	for i, w := range []*xdr.Uint32{so.MasterWeight, so.LowThreshold, so.MedThreshold, so.HighThreshold} {
		if w != nil {
			auth.thresholds[i] = uint8(*w)
		}
	}
	if so.Signer != nil {
		key, _ := so.Signer.Key.GetAddress()
		weight := uint32(so.Signer.Weight)
		i := slices.IndexFunc(auth.signers, func(s accountSigner) bool { return s.key == key })
		switch {
		case weight == 0 && i >= 0:
			auth.signers = slices.Delete(auth.signers, i, i+1)
			src.numSubEntries--
		case weight == 0:
		case i >= 0:
			auth.signers[i].weight = weight
		default:
			if len(auth.signers) >= maxSigners {
				return setOptionsResult(xdr.SetOptionsResultCodeSetOptionsTooManySigners), false
			}
			src.numSubEntries++
			if src.balance < minBalance(src, reserve) {
				src.numSubEntries--
				return setOptionsResult(xdr.SetOptionsResultCodeSetOptionsLowReserve), false
			}
			auth.signers = append(auth.signers, accountSigner{key: key, weight: weight})
			// Core keeps an account's signers sorted by SignerKey, its XDR order: the key's bytes,
			// not its G... text (SetOptionsOpFrame::addOrChangeSigner inserts at findSignerByKey,
			// src/transactions/TransactionUtils.h).
			slices.SortFunc(auth.signers, func(a, b accountSigner) int {
				return bytes.Compare(rawKey(a.key), rawKey(b.key))
			})
		}
	}
	src.auth = auth
	return successResult(xdr.OperationTypeSetOptions), true
}

// rawKey is a G... key's 32 bytes (nil if it is not one; signers are checked before they are kept).
func rawKey(address string) []byte {
	b, _ := strkey.Decode(strkey.VersionByteAccountID, address)
	return b
}
