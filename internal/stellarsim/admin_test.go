package stellarsim_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

func (e *env) admin(method, path, body string, out any) int {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.n.URL()+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			e.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

func TestAdminAPI(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	tx, hash := e.payTx()

	var armed struct{ Faults []stellarsim.Fault }
	if code := e.admin("POST", "/_sim/faults", `{"kind":"answer","status":"ERROR","code":"txTOO_LATE","count":1}`, &armed); code != 201 || len(armed.Faults) != 1 {
		t.Fatalf("%d %+v", code, armed)
	}
	if code := e.admin("POST", "/_sim/faults", `[{"kind":"delay","delay":"10ms"},{"kind":"delay","delay":5}]`, &armed); code != 201 || len(armed.Faults) != 3 {
		t.Fatalf("%d %+v", code, armed)
	}
	if code := e.admin("POST", "/_sim/faults", `{"kind":"bogus"}`, nil); code != 400 {
		t.Fatalf("bogus fault: %d", code)
	}
	r := e.send(b64(t, tx))
	if c, _ := errorCode(t, r); stellarsim.TxCodeName(c) != "txTOO_LATE" {
		t.Fatalf("%+v", r)
	}
	if code := e.admin("DELETE", "/_sim/faults", "", &armed); code != 200 || len(armed.Faults) != 0 || len(e.n.Faults()) != 0 {
		t.Fatalf("%d %+v", code, armed)
	}
	if r := e.send(b64(t, tx)); r.Status != "PENDING" {
		t.Fatalf("%+v", r)
	}
	var closed struct{ Sequence uint32 }
	e.admin("POST", "/_sim/close", "", &closed)
	if closed.Sequence != 2 {
		t.Fatalf("%+v", closed)
	}
	var txs struct{ Transactions []stellarsim.AppliedTx }
	e.admin("GET", "/_sim/transactions", "", &txs)
	if len(txs.Transactions) != 1 || txs.Transactions[0].Hash != hash || txs.Transactions[0].Ops[0].Type != "payment" {
		t.Fatalf("%+v", txs)
	}
	var envs struct{ Envelopes []stellarsim.ReceivedEnvelope }
	e.admin("GET", "/_sim/envelopes", "", &envs)
	if len(envs.Envelopes) != 2 || envs.Envelopes[0].Status != "ERROR" || envs.Envelopes[0].Code != "txTOO_LATE" ||
		envs.Envelopes[1].Status != "PENDING" || !strings.HasPrefix(envs.Envelopes[1].Outcome, "included") {
		t.Fatalf("%+v", envs)
	}
	// Stall and retention through the admin API.
	e.admin("POST", "/_sim/faults", `{"kind":"stall","count":1}`, nil)
	e.admin("POST", "/_sim/close", "", &closed)
	if closed.Sequence != 2 {
		t.Fatalf("stalled close: %+v", closed)
	}
	e.admin("POST", "/_sim/faults", `{"kind":"retention","ledgers":1}`, nil)
	e.n.CloseLedger()
	got, err := e.rpc.GetTransaction(e.ctx, protocol.GetTransactionRequest{Hash: hash})
	if err != nil || got.Status != "NOT_FOUND" {
		t.Fatalf("%v %+v", err, got)
	}
}

// GET /_sim/ lists the admin routes, each of which answers, and every fault kind with an example
// body that arms it and a default count that is the one AddFault applies.
func TestAdminIndex(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	var index struct {
		Routes []stellarsim.AdminRoute
		Faults []stellarsim.FaultKind
	}
	if code := e.admin("GET", "/_sim/", "", &index); code != 200 || len(index.Routes) == 0 {
		t.Fatalf("GET /_sim/: %d %+v", code, index)
	}
	for _, r := range index.Routes {
		if r.Method != "GET" || strings.Contains(r.Path, "{") {
			continue
		}
		if code := e.admin("GET", r.Path, "", nil); code != 200 {
			t.Errorf("GET %s (listed) = %d", r.Path, code)
		}
	}
	kinds := map[string]bool{}
	for _, k := range index.Faults {
		kinds[k.Kind] = true
		var armed struct{ Faults []stellarsim.Fault }
		if code := e.admin("POST", "/_sim/faults", k.Example, &armed); code != 201 {
			t.Errorf("%s: its example %s answered %d", k.Kind, k.Example, code)
			continue
		}
		// Faults lists what is armed with its remaining uses; retention is a setting, not listed.
		var count int
		for _, f := range armed.Faults {
			if f.Kind == k.Kind {
				count = f.Count
			}
		}
		var f stellarsim.Fault
		if err := json.Unmarshal([]byte(k.Example), &f); err != nil {
			t.Fatal(err)
		}
		untilHealed := strings.Contains(k.Count, "until healed")
		switch {
		case k.Kind == stellarsim.FaultRetention:
		case f.Count == 0 && untilHealed && count != -1:
			t.Errorf("%s says %q but armed with count %d", k.Kind, k.Count, count)
		case f.Count == 0 && !untilHealed && (count != 1 || !strings.Contains(k.Count, "default 1")):
			t.Errorf("%s says %q but armed with count %d", k.Kind, k.Count, count)
		}
		e.admin("DELETE", "/_sim/faults", "", nil)
	}
	for _, kind := range []string{stellarsim.FaultRefuse, stellarsim.FaultDropResponse, stellarsim.FaultDelay,
		stellarsim.FaultAnswer, stellarsim.FaultDropEnvelope, stellarsim.FaultDelayInclusion, stellarsim.FaultStall,
		stellarsim.FaultRetention, stellarsim.FaultReadOrder, stellarsim.FaultDBLag, stellarsim.FaultInstances} {
		if !kinds[kind] {
			t.Errorf("GET /_sim/ does not describe the fault kind %s", kind)
		}
	}
}

// A fault the table of doc.go ("Faults") does not allow is refused with a 400 that says why,
// and nothing is armed: a count on a kind that lasts until healed (it was dropped silently), and an
// answer naming two answers at once.
func TestAdminRefusesFaultsThatReadTwoWays(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	for body, want := range map[string]string{
		`{"kind":"retention","ledgers":2,"count":3}`:                    "retention takes no count",
		`{"kind":"db_lag","ledgers":2,"count":1}`:                       "db_lag takes no count",
		`{"kind":"instances","delay":"1s","count":2}`:                   "instances takes no count",
		`{"kind":"answer","status":"PENDING","http_status":504}`:        "one of status, code or http_status",
		`{"kind":"answer","code":"txBAD_SEQ","http_status":504}`:        "one of status, code or http_status",
		`{"kind":"answer","status":"PENDING","code":"txBAD_SEQ"}`:       "status ERROR",
		`{"kind":"answer","http_status":200}`:                           "400 to 599",
		`[{"kind":"stall"},{"kind":"retention","ledgers":2,"count":3}]`: "retention takes no count",
	} {
		var out struct{ Error string }
		if code := e.admin("POST", "/_sim/faults", body, &out); code != 400 || !strings.Contains(out.Error, want) {
			t.Errorf("%s = %d %q, want 400 saying %q", body, code, out.Error, want)
		}
	}
	if f := e.n.Faults(); len(f) != 0 {
		t.Errorf("armed after refusals: %+v", f)
	}
	// What the table allows is still armed.
	for _, body := range []string{
		`{"kind":"retention","ledgers":2}`, `{"kind":"answer","http_status":504}`,
		`{"kind":"answer","status":"ERROR","code":"txBAD_SEQ"}`, `{"kind":"answer","code":"txBAD_SEQ"}`,
	} {
		if code := e.admin("POST", "/_sim/faults", body, nil); code != 201 {
			t.Errorf("%s = %d, want 201", body, code)
		}
	}
}

// GET /_sim/muxed/{account}/{id} writes the M... address go-stellar-sdk's xdr reads back as that
// account and id; anything but a G... account and a canonical decimal uint64 is 400.
func TestAdminMuxedAddress(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	const account = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	for _, id := range []string{"0", "42", "18446744073709551615"} {
		var got struct{ Account, ID, Muxed string }
		if code := e.admin("GET", "/_sim/muxed/"+account+"/"+id, "", &got); code != 200 {
			t.Fatalf("%s: %d", id, code)
		}
		m, err := xdr.AddressToMuxedAccount(got.Muxed)
		n, _ := m.GetId()
		if err != nil || m.ToAccountId().Address() != account || strconv.FormatUint(n, 10) != id || got.Account != account || got.ID != id {
			t.Errorf("%s: %+v reads back as %s %d (%v)", id, got, m.ToAccountId().Address(), n, err)
		}
	}
	for _, path := range []string{account + "/18446744073709551616", account + "/07", account + "/-1", "GABC/1", strings.Replace(account, "G", "C", 1) + "/1"} {
		if code := e.admin("GET", "/_sim/muxed/"+path, "", nil); code != 400 {
			t.Errorf("%s: %d, want 400", path, code)
		}
	}
}
