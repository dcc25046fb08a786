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
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Against every stellar-rpc profile of the local network (getLatestLedger without closeTime before
// v25.0, the range read first before v25.1) an envelope whose maxTime has passed is proven dead,
// and a quarantined channel is leased again once a ledger closed after its maxTime.
func TestRPCVersionsProvenDead(t *testing.T) {
	for _, profile := range stellarsim.RPCVersions {
		for _, channels := range []int{0, 1} {
			t.Run(fmt.Sprintf("%s/channels=%d", profile, channels), func(t *testing.T) {
				e := newSuiteEnv(t, "rpc", suiteOpts{channels: channels, rpcVersion: profile})
				env := e.prepare(t, e.wallet, unit)
				e.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
				e.send(t, env, transfer.SendPending)
				e.closeLedger()
				if lk := e.lookup(t, env); lk.Status != transfer.LookupNotFound || transfer.ProvenDead(env, lk) {
					t.Fatalf("before maxTime: %+v", lk)
				}
				e.clock.advance(2 * time.Minute)
				e.closeLedger()
				lk := e.lookup(t, env)
				if lk.Status != transfer.LookupNotFound || !transfer.ProvenDead(env, lk) {
					t.Fatalf("after maxTime: %+v (maxTime %d)", lk, env.MaxTime)
				}
				if lk.LatestLedgerCloseTime.Unix() != e.net.VisibleLedger().CloseTime.Unix() {
					t.Errorf("close time %v, want the shown ledger's %v", lk.LatestLedgerCloseTime, e.net.VisibleLedger().CloseTime)
				}
				if channels > 0 {
					// No Done: the channel stays quarantined until a ledger closed after maxTime, which
					// the close time read through getLedgers shows.
					e.clock.advance(heldMargin + time.Second)
					e.closeLedger()
					if next := e.prepare(t, e.wallet, unit); next.Channel != env.Channel {
						t.Errorf("channel %s, want %s again", next.Channel, env.Channel)
					}
				}
			})
		}
	}
}

// The latest ledger as the await loop probes it carries its close time under every profile.
func TestRPCVersionsLatestLedgerCloseTime(t *testing.T) {
	for _, profile := range stellarsim.RPCVersions {
		e := newSuiteEnv(t, "rpc", suiteOpts{rpcVersion: profile})
		shown := e.closeLedger()
		got, err := e.ledger.(*RPCLedger).LatestLedger(context.Background())
		if err != nil || got.Sequence != shown.Sequence || !got.CloseTime.Equal(shown.CloseTime) {
			t.Errorf("%s: %+v %v, want %+v", profile, got, err, shown)
		}
	}
}

// fakeVersionServer answers getNetwork with passphrase and getVersionInfo with version, and
// Horizon's root with horizonVersion.
func fakeVersionServer(t *testing.T, passphrase, version, horizonVersion string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			fmt.Fprintf(w, `{"horizon_version":%q,"core_version":"stellar-core 23.0.1 (x)","network_passphrase":%q,"current_protocol_version":23}`,
				horizonVersion, passphrase)
			return
		}
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.Contains(string(body), `"getNetwork"`):
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"passphrase":%q,"protocolVersion":23}}`, passphrase)
		case strings.Contains(string(body), `"getVersionInfo"`):
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":1,"result":{"version":%q,"captiveCoreVersion":"stellar-core 22.1.0 (x)","protocolVersion":22}}`, version)
		default:
			fmt.Fprint(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"method not found"}}`)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// CheckNetwork refuses, with an UnsupportedVersionError naming what was reported and what is
// supported, a stellar-rpc or Horizon the proofs cannot work with, and accepts the supported ones.
func TestCheckNetworkVersions(t *testing.T) {
	const pass = "Test SDF Network ; September 2015"
	cases := []struct {
		rpc, horizon string
		ok           bool
	}{
		{"27.1.1", "28.0.0-abc", true},
		{"25.1.0", "23.0.0-1f8fba8", true},
		{"v24.0.0", "22.0.0", true},
		{"23.0.4-dirty", "22.0.3", true},
		{"22.1.5", "2.32.0-abcdef", false},
		{"21.5.1", "2.31.0", false},
		{"", "", false},
		{"dev", "horizon", false},
	}
	vault := sourcestest.Keys(t).Vault.Address()
	assets := []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}
	for _, c := range cases {
		url := fakeVersionServer(t, pass, c.rpc, c.horizon)
		rpc, err := NewRPCLedger(RPCConfig{URL: url, Passphrase: pass, VaultAccount: vault, Assets: assets, Keys: signing.StaticKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		hz, err := NewHorizonLedger(HorizonConfig{URL: url, Passphrase: pass, VaultAccount: vault, Assets: assets, Keys: signing.StaticKeys{}})
		if err != nil {
			t.Fatal(err)
		}
		for name, check := range map[string]func(context.Context) error{"rpc": rpc.CheckNetwork, "horizon": hz.CheckNetwork} {
			err := check(context.Background())
			var uv *UnsupportedVersionError
			switch {
			case c.ok && err != nil:
				t.Errorf("%s %q/%q refused: %v", name, c.rpc, c.horizon, err)
			case !c.ok && !errors.As(err, &uv):
				t.Errorf("%s %q/%q: %v, want an UnsupportedVersionError", name, c.rpc, c.horizon, err)
			case !c.ok && !strings.Contains(err.Error(), "supports"):
				t.Errorf("%s: error %q does not say what is supported", name, err)
			}
		}
	}
}
