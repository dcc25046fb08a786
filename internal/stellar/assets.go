package stellar

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/stellar/go-stellar-sdk/txnbuild"
)

// assetCodeRE is a credit asset code as stellar-core accepts it (src/util/types.cpp,
// isAssetValid: 1 to 4 ASCII letters and digits for AlphaNum4, 5 to 12 for AlphaNum12; the XDR
// pads shorter codes with zero bytes). Codes are case-sensitive on the ledger: "yUSDC" and
// "YUSDC" are two assets.
var assetCodeRE = regexp.MustCompile(`^[A-Za-z0-9]{1,12}$`)

// vaultAsset is one configured asset: the code exactly as configured, and its issuer decoded.
type vaultAsset struct {
	credit txnbuild.CreditAsset // Code as configured; Issuer canonical (G...)
	issuer rawAddress
}

// assetSet holds the configured assets keyed by upper(code): a request names an asset in any
// case, and finds the one configured asset with that code; the envelope then carries the code as
// configured. Two configured codes that differ only by case are refused, so the lookup is never
// ambiguous.
type assetSet map[string]vaultAsset

// newAssetSet checks the configured assets: each code 1 to 12 of [A-Za-z0-9] (assetCodeRE),
// each issuer a G... account, no two codes equal ignoring case, at least one asset.
func newAssetSet(assets []txnbuild.CreditAsset) (assetSet, error) {
	s := assetSet{}
	for i, a := range assets {
		if !assetCodeRE.MatchString(a.Code) {
			// Not echoed: a misplaced secret seed would end up in the log.
			return nil, fmt.Errorf("stellar: asset %d: the code is not 1 to 12 letters or digits", i+1)
		}
		issuer, err := decodeAccount(a.Issuer)
		if err != nil {
			return nil, fmt.Errorf("stellar: asset %s: the issuer is not a G... account", a.Code)
		}
		key := strings.ToUpper(a.Code)
		if prev, dup := s[key]; dup {
			return nil, fmt.Errorf("stellar: assets %s and %s differ only by case; configure one of them", prev.credit.Code, a.Code)
		}
		s[key] = vaultAsset{credit: txnbuild.CreditAsset{Code: a.Code, Issuer: issuer.String()}, issuer: issuer}
	}
	if len(s) == 0 {
		return nil, fmt.Errorf("stellar: at least one asset is required")
	}
	return s, nil
}

// find returns the configured asset whose code equals code ignoring case.
func (s assetSet) find(code string) (vaultAsset, bool) {
	a, ok := s[strings.ToUpper(code)]
	return a, ok
}
