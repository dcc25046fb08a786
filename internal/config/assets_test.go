package config

import (
	"reflect"
	"strings"
	"testing"
)

// Asset codes are case-sensitive on Stellar: ASSETS=yUSDC:G... must pay yUSDC, not YUSDC.
func TestLoadAssetsKeepTheirSpelling(t *testing.T) {
	c, err := loadWith(map[string]string{"ASSETS": "yUSDC:" + strings.ToLower(testIssuer) + ",A:" + testIssuer + ",AbCdEfGhIjKl:" + testIssuer})
	want := []Asset{{Code: "yUSDC", Issuer: testIssuer}, {Code: "A", Issuer: testIssuer}, {Code: "AbCdEfGhIjKl", Issuer: testIssuer}}
	if err != nil || !reflect.DeepEqual(c.Assets, want) {
		t.Fatalf("assets %+v, %v", c.Assets, err)
	}
	if got := c.AssetCodes(); !reflect.DeepEqual(got, []string{"yUSDC", "A", "AbCdEfGhIjKl"}) {
		t.Fatalf("codes %v", got)
	}
	for name, v := range map[string]string{
		"same but case": "yUSDC:" + testIssuer + ",YUSDC:" + testIssuer,
		"13 characters": "ABCDEFGHIJKLM:" + testIssuer,
		"not alnum":     "US-D:" + testIssuer,
		"non-ASCII":     "USDÇ:" + testIssuer,
		"empty code":    ":" + testIssuer,
		"line break":    "US\nDC:" + testIssuer,
	} {
		if _, err := loadWith(map[string]string{"ASSETS": v}); err == nil || !strings.Contains(err.Error(), "ASSETS") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// A refused entry is named by position, never echoed (it may be a misplaced seed).
	seed := "SBXBRCBOGGPBP2LYJZTVUEFB3YDKFEROAR3NWNXQ3KQU7L5ONZTX3ZZT"
	if _, err := loadWith(map[string]string{"ASSETS": seed}); err == nil || strings.Contains(err.Error(), seed[:12]) {
		t.Errorf("bad entry: %v", err)
	}
}
