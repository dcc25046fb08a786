package stellarsim

import (
	"testing"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// Every SetOptions result has Horizon's name (services/horizon/internal/codes), never op_unknown.
func TestSetOptionsResultNames(t *testing.T) {
	for c, want := range map[xdr.SetOptionsResultCode]string{
		xdr.SetOptionsResultCodeSetOptionsSuccess:               "op_success",
		xdr.SetOptionsResultCodeSetOptionsLowReserve:            "op_low_reserve",
		xdr.SetOptionsResultCodeSetOptionsTooManySigners:        "op_too_many_signers",
		xdr.SetOptionsResultCodeSetOptionsThresholdOutOfRange:   "op_threshold_out_of_range",
		xdr.SetOptionsResultCodeSetOptionsBadSigner:             "op_bad_signer",
		xdr.SetOptionsResultCodeSetOptionsAuthRevocableRequired: "op_auth_revocable_required",
	} {
		if got := opCodeName(setOptionsResult(c)); got != want {
			t.Errorf("%s = %q, want %q", c, got, want)
		}
	}
	// And every code the XDR defines (0, then -1 downwards).
	for v := int32(0); v > -32; v-- {
		c := xdr.SetOptionsResultCode(v)
		if !c.ValidEnum(v) {
			continue
		}
		if got := opCodeName(setOptionsResult(c)); got == "op_unknown" || got == "" {
			t.Errorf("%s has no name", c)
		}
	}
}
