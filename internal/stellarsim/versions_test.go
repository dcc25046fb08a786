package stellarsim_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// rawRPC posts one JSON-RPC request and returns its result object, undecoded.
func (e *env) rawRPC(method string) map[string]json.RawMessage {
	e.t.Helper()
	resp, err := http.Post(e.n.RPCURL(), "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"`+method+`"}`))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var out struct {
		Result map[string]json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.Result == nil {
		e.t.Fatalf("%s: %v %s", method, err, body)
	}
	return out.Result
}

// Each profile reports its release in getVersionInfo; getLatestLedger has closeTime (and
// headerXdr, metadataXdr) from v25.0 on; the versions the network reports agree with each other.
func TestRPCVersionProfiles(t *testing.T) {
	cases := []struct {
		profile   stellarsim.RPCVersion
		release   string
		closeTime bool
	}{
		{"", "27.1.1", true},
		{stellarsim.RPCCurrent, "27.1.1", true},
		{stellarsim.RPCv25_0, "25.0.1", true},
		{stellarsim.RPCv24, "24.0.0", false},
		{stellarsim.RPCv23, "23.0.4", false},
	}
	for _, c := range cases {
		t.Run(string(c.profile), func(t *testing.T) {
			e := newEnv(t, stellarsim.Options{RPCVersion: c.profile})
			v, err := e.rpc.GetVersionInfo(e.ctx)
			if err != nil || v.Version != c.release || v.ProtocolVersion != 26 || !strings.HasPrefix(v.CaptiveCoreVersion, "stellar-core 26.") {
				t.Fatalf("getVersionInfo %v %+v", err, v)
			}
			raw := e.rawRPC("getLatestLedger")
			_, hasClose := raw["closeTime"]
			_, hasHeader := raw["headerXdr"]
			if hasClose != c.closeTime || hasHeader != c.closeTime || raw["sequence"] == nil || raw["id"] == nil {
				t.Fatalf("getLatestLedger %v", raw)
			}
			root, err := e.horizon().Root()
			if err != nil || root.StellarCoreVersion != v.CaptiveCoreVersion || root.CurrentProtocolVersion != int32(v.ProtocolVersion) ||
				!strings.HasPrefix(root.HorizonVersion, "28.") {
				t.Fatalf("Horizon root %v %+v", err, root)
			}
		})
	}
	if _, err := stellarsim.Start(stellarsim.Options{RPCVersion: "v22"}); err == nil {
		t.Fatal("an unknown profile was accepted")
	}
}

// PUT /_sim/rpc_version switches the profile of a running network; a bad one is a 400 and
// changes nothing.
func TestAdminRPCVersion(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	var got struct {
		Profile  string   `json:"rpc_version"`
		Release  string   `json:"release"`
		Profiles []string `json:"profiles"`
	}
	if code := e.admin("GET", "/_sim/rpc_version", "", &got); code != 200 || got.Profile != "current" || len(got.Profiles) != 4 {
		t.Fatalf("GET: %d %+v", code, got)
	}
	if code := e.admin("PUT", "/_sim/rpc_version", `{"rpc_version":"v24"}`, &got); code != 200 || got.Profile != "v24" || got.Release != "24.0.0" {
		t.Fatalf("PUT v24: %d %+v", code, got)
	}
	if v, _ := e.rpc.GetVersionInfo(e.ctx); v.Version != "24.0.0" {
		t.Fatalf("getVersionInfo after PUT: %+v", v)
	}
	if _, ok := e.rawRPC("getLatestLedger")["closeTime"]; ok {
		t.Fatal("closeTime under v24")
	}
	for _, bad := range []string{`{"rpc_version":"v2"}`, `{}`, `nope`} {
		if code := e.admin("PUT", "/_sim/rpc_version", bad, nil); code != 400 {
			t.Fatalf("PUT %s: %d", bad, code)
		}
	}
	if e.n.RPCVersion() != stellarsim.RPCv24 {
		t.Fatalf("profile %s after bad PUTs", e.n.RPCVersion())
	}
}

// The read_order race shows as the release reads: from v25.1.0 a NOT_FOUND whose latestLedger
// holds the transaction; before, the transaction found with a latestLedger below its ledger.
func TestReadOrderByProfile(t *testing.T) {
	for _, profile := range []stellarsim.RPCVersion{stellarsim.RPCCurrent, stellarsim.RPCv24} {
		t.Run(string(profile), func(t *testing.T) {
			e := newEnv(t, stellarsim.Options{RPCVersion: profile})
			a, b := e.funded(10*xlm), e.funded(10*xlm)
			tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
			e.send(b64(t, tx))
			e.n.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultReadOrder})
			landed := e.n.CloseLedger().Sequence
			r := e.getTx(hashOf(t, tx, e.n.Passphrase()))
			switch profile {
			case stellarsim.RPCCurrent:
				if r.Status != "NOT_FOUND" || r.LatestLedger != landed {
					t.Fatalf("%+v", r)
				}
			default:
				if r.Status != "SUCCESS" || r.Ledger != landed || r.LatestLedger != landed-1 {
					t.Fatalf("%+v", r)
				}
			}
		})
	}
}
