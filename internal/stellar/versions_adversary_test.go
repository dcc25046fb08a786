package stellar

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
)

// methodNotFoundServer answers getNetwork with passphrase and every other method, getVersionInfo
// included, with JSON-RPC's -32601 "method not found", as soroban-rpc did before 21.1.0 (its
// CHANGELOG: getVersionInfo is new in v21.1.0, stellar/soroban-rpc #132).
func methodNotFoundServer(t *testing.T, passphrase string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		body, _ := io.ReadAll(r.Body)
		if strings.Contains(string(body), `"getNetwork"`) {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"passphrase":%q,"protocolVersion":20}}`, passphrase)
			return
		}
		fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Rule: a stellar-rpc whose release cannot be read is refused at start (UnsupportedVersionError;
// versions.go). A server that answers getNetwork but says it has no getVersionInfo method is a
// soroban-rpc before 21.1.0 — it has no getLedgers either, so on it the close time the death proof
// needs is never known and every envelope in doubt stays in doubt. That is an answer, not an
// outage: it must be the UnsupportedVersionError that makes Init.CheckBackend end the init, not an
// ErrUnexpectedAnswer that CheckBackend only warns about.
func TestCheckNetworkRefusesRPCWithoutGetVersionInfo(t *testing.T) {
	const pass = "Test SDF Network ; September 2015"
	rpc, err := NewRPCLedger(RPCConfig{URL: methodNotFoundServer(t, pass), Passphrase: pass,
		VaultAccount: sourcestest.Keys(t).Vault.Address(),
		Assets:       []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}, Keys: signing.StaticKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	err = rpc.CheckNetwork(context.Background())
	var uv *UnsupportedVersionError
	if !errors.As(err, &uv) {
		t.Fatalf("CheckNetwork: %v, want an UnsupportedVersionError (getVersionInfo does not exist on this server)", err)
	}
	if uv.Minimum != MinRPCRelease || !strings.Contains(err.Error(), "supports stellar-rpc 23.0.0") {
		t.Errorf("error %q does not say what is supported", err)
	}
}

// Rule: only a release read whole is judged (ParseRelease); anything else is refused as a
// release that cannot be read. Odd spellings: a "v" prefix and a pre-release or build suffix are
// read, a version without its patch number, extra components, a leading or trailing space or a
// line break are not.
func TestParseReleaseOddSpellings(t *testing.T) {
	cases := []struct {
		in   string
		want Release
		ok   bool
	}{
		{"25.0.0-rc1", Release{25, 0, 0}, true},
		{"v25.1.0", Release{25, 1, 0}, true},
		{"25.1.0+build.7", Release{25, 1, 0}, true},
		{"horizon-v2.32.0", Release{2, 32, 0}, true},
		{"25.1", Release{}, false},
		{"25", Release{}, false},
		{"25.1.0.1", Release{}, false},
		{" 25.1.0", Release{}, false},
		{"25.1.0\n", Release{}, false},
		{"25.1.0\nv99.0.0", Release{}, false},
		{"1234567.0.0", Release{}, false},
		{"V25.1.0", Release{}, false},
	}
	for _, c := range cases {
		got, ok := ParseRelease(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseRelease(%q) = %v, %v; want %v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	if err := checkRelease("stellar-rpc", "22.9.9-rc1", MinRPCRelease); err == nil {
		t.Error("22.9.9-rc1 accepted")
	}
}
