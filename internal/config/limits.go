package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/strictjson"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// limitsJSON is one asset's entry of LIMITS: amounts as decimal strings of the asset's units
// (as a request's amount: up to 7 decimal places), each optional.
type limitsJSON struct {
	PerTransfer string `json:"perTransfer"`
	WalletDaily string `json:"walletDaily"`
	AssetDaily  string `json:"assetDaily"`
}

// parseLimits reads LIMITS (README.md, "Configuration"): a JSON object from asset code, exactly as
// configured in ASSETS, to {"perTransfer", "walletDaily", "assetDaily"}, each a decimal amount
// string ("5000", "0.5"), at least one per asset. Empty: no limits. Amounts are strings, not JSON
// numbers, so that no reader rounds them (a float64 holds 15 to 17 digits; an amount has up to
// 19). The object is read strictly: a repeated asset, an unknown or repeated field, a number for
// an amount, data after the object are refused, each with the asset it is about. Values are never
// echoed (a seed pasted by mistake would reach the log).
func parseLimits(v string, codes []string) (transfer.Limits, error) {
	if strings.TrimSpace(v) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(v))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New(`LIMITS must be a JSON object such as {"USDC":{"perTransfer":"5000","walletDaily":"20000","assetDaily":"1000000"}}`)
	}
	out := transfer.Limits{}
	for i := 1; dec.More(); i++ {
		tok, err := dec.Token()
		code, ok := tok.(string)
		if err != nil || !ok {
			return nil, fmt.Errorf("LIMITS: entry %d is not valid JSON", i)
		}
		if !assetCodeRE.MatchString(code) {
			return nil, fmt.Errorf("LIMITS: entry %d is not an asset code of 1 to 12 letters or digits", i)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("LIMITS: %s: not valid JSON", code)
		}
		if !slices.Contains(codes, code) {
			hint := ""
			for _, c := range codes {
				if strings.EqualFold(c, code) {
					hint = fmt.Sprintf(" (asset codes are case-sensitive: ASSETS spells it %s)", c)
				}
			}
			return nil, fmt.Errorf("LIMITS: %s is not an asset of ASSETS%s", code, hint)
		}
		if _, dup := out[code]; dup {
			return nil, fmt.Errorf("LIMITS: %s appears more than once", code)
		}
		var lj limitsJSON
		if err := strictjson.Decode(raw, &lj); err != nil {
			var se *strictjson.Error
			if errors.As(err, &se) {
				return nil, fmt.Errorf("LIMITS: %s: %s", code, se.Message("its limits"))
			}
			return nil, fmt.Errorf("LIMITS: %s: %w", code, err)
		}
		var al transfer.AssetLimits
		for _, f := range []struct {
			name string
			raw  string
			to   *int64
		}{{"perTransfer", lj.PerTransfer, &al.PerTransfer}, {"walletDaily", lj.WalletDaily, &al.WalletDaily}, {"assetDaily", lj.AssetDaily, &al.AssetDaily}} {
			if f.raw == "" {
				continue
			}
			_, n, err := transfer.CanonicalAmount(f.raw)
			if err != nil {
				return nil, fmt.Errorf("LIMITS: %s.%s must be a positive decimal amount string with at most 7 decimal places, such as \"5000\" or \"0.5\"", code, f.name)
			}
			*f.to = n
		}
		if al == (transfer.AssetLimits{}) {
			return nil, fmt.Errorf("LIMITS: %s sets no limit; give perTransfer, walletDaily or assetDaily, or leave the asset out", code)
		}
		out[code] = al
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, errors.New("LIMITS ends in the middle of its JSON object")
	}
	if rest, _ := readRest(dec); len(bytes.TrimSpace(rest)) > 0 {
		return nil, errors.New("LIMITS: unexpected data after the JSON object")
	}
	return out, nil
}

// readRest is what follows the decoder's last value.
func readRest(dec *json.Decoder) ([]byte, error) {
	var b bytes.Buffer
	if _, err := b.ReadFrom(dec.Buffered()); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
