package stellarsim

import "github.com/stellar/go-stellar-sdk/xdr"

// Asset is a credit asset (Code + Issuer) or the native asset (both empty).
type Asset struct {
	Code   string `json:"code,omitempty"`
	Issuer string `json:"issuer,omitempty"`
}

// Native is the lumen.
var Native = Asset{}

// IsNative reports whether a is XLM.
func (a Asset) IsNative() bool { return a.Code == "" && a.Issuer == "" }

func (a Asset) String() string {
	if a.IsNative() {
		return "native"
	}
	return a.Code + ":" + a.Issuer
}

// XDR returns the asset as xdr.Asset.
func (a Asset) XDR() (xdr.Asset, error) {
	var x xdr.Asset
	if a.IsNative() {
		err := x.SetNative()
		return x, err
	}
	issuer, err := xdr.AddressToAccountId(a.Issuer)
	if err != nil {
		return x, err
	}
	err = x.SetCredit(a.Code, issuer)
	return x, err
}

func assetFromXDR(x xdr.Asset) Asset {
	var typ xdr.AssetType
	var code, issuer string
	if err := x.Extract(&typ, &code, &issuer); err != nil || typ == xdr.AssetTypeAssetTypeNative {
		return Native
	}
	return Asset{Code: code, Issuer: issuer}
}
