package stellar

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources/sourcestest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func horizonLedgerAt(t *testing.T, url, passphrase string) *HorizonLedger {
	t.Helper()
	l, err := NewHorizonLedger(HorizonConfig{URL: url, Passphrase: passphrase, VaultAccount: sourcestest.Keys(t).Vault.Address(),
		Assets: []txnbuild.CreditAsset{{Code: "USDC", Issuer: keypair.MustRandom().Address()}}, Keys: signing.StaticKeys{}})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Each Horizon release profile of the local network (a protocol 26 network) read at start: the
// releases that ingest protocol 26 are accepted; 25.1.0, which cannot ingest it, and 22.0.3 are
// refused with an UnsupportedVersionError that names the protocols and the release needed.
func TestHorizonProfilesCheckedAtStart(t *testing.T) {
	cases := map[stellarsim.HorizonVersion]bool{
		stellarsim.HorizonCurrent: true, stellarsim.HorizonV27: true, stellarsim.HorizonV26: true,
		stellarsim.HorizonV25: false, stellarsim.HorizonV22: false,
	}
	if len(cases) != len(stellarsim.HorizonVersions) {
		t.Fatalf("profiles %v, cases for %d", stellarsim.HorizonVersions, len(cases))
	}
	for profile, ok := range cases {
		t.Run(string(profile), func(t *testing.T) {
			n, err := stellarsim.Start(stellarsim.Options{HorizonVersion: profile})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Close() })
			err = horizonLedgerAt(t, n.URL(), n.Passphrase()).CheckNetwork(context.Background())
			var uv *UnsupportedVersionError
			switch {
			case ok && err != nil:
				t.Fatalf("refused: %v", err)
			case !ok && !errors.As(err, &uv):
				t.Fatalf("%v, want an UnsupportedVersionError", err)
			case !ok && (uv.Protocol != 26 || !strings.Contains(err.Error(), "protocol 26") || !strings.Contains(err.Error(), "Horizon 26.0.0 and later")):
				t.Fatalf("error %q (protocol %d), want it to name the network's protocol 26 and Horizon 26.0.0", err, uv.Protocol)
			}
		})
	}
	// The profile switches while the network runs, as PUT /_sim/horizon_version does.
	n, err := stellarsim.Start(stellarsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	l := horizonLedgerAt(t, n.URL(), n.Passphrase())
	if err := n.SetHorizonVersion(stellarsim.HorizonV25); err != nil {
		t.Fatal(err)
	}
	var uv *UnsupportedVersionError
	if err := l.CheckNetwork(context.Background()); !errors.As(err, &uv) {
		t.Fatalf("after switching to v25: %v, want refused", err)
	}
	if err := n.SetHorizonVersion("v1"); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
}

// A Horizon of another network is ErrWrongNetwork, whatever its release.
func TestHorizonWrongPassphraseRefused(t *testing.T) {
	n, err := stellarsim.Start(stellarsim.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Close() })
	err = horizonLedgerAt(t, n.URL(), "Public Global Stellar Network ; September 2015").CheckNetwork(context.Background())
	if !errors.Is(err, ErrWrongNetwork) || !strings.Contains(err.Error(), n.Passphrase()) {
		t.Fatalf("%v, want ErrWrongNetwork naming the network Horizon serves", err)
	}
}

// A root that cannot be read (an error page, a body that is not Horizon's JSON) is a plain error:
// the start-up check then only warns (wiring.Init.CheckBackend), since nothing is known about the
// release. A root that is JSON but names no release, or no network, is refused.
func TestHorizonUnreadableRoot(t *testing.T) {
	const pass = "Test SDF Network ; September 2015"
	for name, c := range map[string]struct {
		status  int
		body    string
		refused func(error) bool
	}{
		"502 page":           {http.StatusBadGateway, "<html>bad gateway</html>", nil},
		"not json":           {http.StatusOK, "<html>hello</html>", nil},
		"no release":         {http.StatusOK, `{"network_passphrase":"` + pass + `","current_protocol_version":26}`, func(err error) bool { var uv *UnsupportedVersionError; return errors.As(err, &uv) }},
		"no passphrase":      {http.StatusOK, `{"horizon_version":"28.0.0-x","current_protocol_version":26,"supported_protocol_version":28}`, func(err error) bool { return errors.Is(err, ErrWrongNetwork) }},
		"no protocol fields": {http.StatusOK, `{"horizon_version":"26.0.0-x","network_passphrase":"` + pass + `"}`, func(err error) bool { return err == nil }},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			t.Cleanup(srv.Close)
			err := horizonLedgerAt(t, srv.URL, pass).CheckNetwork(context.Background())
			if c.refused != nil {
				if !c.refused(err) {
					t.Fatalf("%v", err)
				}
				return
			}
			var uv *UnsupportedVersionError
			if err == nil || errors.As(err, &uv) || errors.Is(err, ErrWrongNetwork) {
				t.Fatalf("%v, want a plain error (the root was not read)", err)
			}
		})
	}
}

// checkHorizonRoot's protocol rule alone: refused only when the network's protocol is above what
// the release ingests.
func TestCheckHorizonRootProtocol(t *testing.T) {
	for _, c := range []struct {
		version            string
		current, supported int32
		ok                 bool
	}{
		{"26.0.0-a", 26, 26, true},
		{"28.0.0-a", 26, 28, true},
		{"25.1.0-a", 26, 25, false},
		{"25.1.0-a", 25, 25, true},
		{"22.0.3-a", 22, 22, true},
		{"22.0.3-a", 23, 22, false},
		{"2.32.0", 21, 21, false},
		{"26.0.0-a", 26, 0, true},
	} {
		if err := checkHorizonRoot(c.version, c.current, c.supported); (err == nil) != c.ok {
			t.Errorf("%q at protocol %d supporting %d: %v, want ok=%v", c.version, c.current, c.supported, err, c.ok)
		}
	}
}
