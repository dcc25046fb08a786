package stellarsim_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// hostTransport sends every request to the network's listener with another Host header, as a client
// of a network mounted behind another listener (the devstack) does.
type hostTransport struct{ host string }

func (h hostTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Host = h.host
	return http.DefaultTransport.RoundTrip(r)
}

// getJSON GETs path with Host host and decodes the answer into out.
func (e *env) getJSON(host, path string, out any) {
	e.t.Helper()
	c := &http.Client{Timeout: 10 * time.Second, Transport: hostTransport{host}}
	resp, err := c.Get(e.n.URL() + path)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		e.t.Fatal(err)
	}
}

// Links and getNetwork's friendbotUrl name the address the client used (its Host), not the
// listener's port.
func TestLinksFollowTheRequestHost(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	pay, _, _ := e.history()
	const host = "127.0.0.1:8010"
	base := "http://" + host
	var root hProtocol.Root
	e.getJSON(host, "/", &root)
	if root.Links.Self.Href != base+"/" || root.Links.Ledgers.Href != base+"/ledgers" || root.Links.Friendbot.Href != base+"/friendbot{?addr}" ||
		!root.Links.Friendbot.Templated {
		t.Fatalf("root links %+v", root.Links)
	}
	var tx hProtocol.Transaction
	e.getJSON(host, "/transactions/"+pay, &tx)
	if tx.Links.Self.Href != base+"/transactions/"+pay || tx.Links.Ledger.Href != base+"/ledgers/2" {
		t.Fatalf("transaction links %+v", tx.Links)
	}
	c := rpcclient.NewClient(e.n.RPCURL(), &http.Client{Timeout: 10 * time.Second, Transport: hostTransport{host}})
	defer c.Close()
	nw, err := c.GetNetwork(e.ctx)
	if err != nil || nw.FriendbotURL != base+"/friendbot/" {
		t.Fatalf("%v %+v", err, nw)
	}
	// Without another Host, the listener's own address.
	if nw, err := e.rpc.GetNetwork(e.ctx); err != nil || nw.FriendbotURL != e.n.URL()+"/friendbot/" {
		t.Fatalf("%v %+v", err, nw)
	}
}

// GET /ledgers is Horizon's page: records under _embedded.records (lowercase, as the Python SDK's
// fetch_base_fee reads them) and next and prev links that page on.
func TestHorizonLedgersPage(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	e.history()
	const host = "127.0.0.1:8010"
	var raw struct {
		Links struct {
			Self, Next, Prev struct{ Href string }
		} `json:"_links"`
		Embedded map[string][]map[string]any `json:"_embedded"`
	}
	e.getJSON(host, "/ledgers?order=desc&limit=2", &raw)
	recs, ok := raw.Embedded["records"]
	if !ok || len(recs) != 2 || recs[0]["sequence"] != float64(4) || recs[1]["sequence"] != float64(3) ||
		recs[0]["base_fee_in_stroops"] != float64(100) {
		t.Fatalf("_embedded %v", raw.Embedded)
	}
	var hdr xdr.LedgerHeader
	if err := xdr.SafeUnmarshalBase64(recs[0]["header_xdr"].(string), &hdr); err != nil || hdr.LedgerSeq != 4 {
		t.Fatalf("header_xdr: %v %+v", err, hdr)
	}
	next, err := url.Parse(raw.Links.Next.Href)
	if err != nil || next.Host != host || next.Path != "/ledgers" || next.Query().Get("order") != "desc" ||
		next.Query().Get("limit") != "2" || next.Query().Get("cursor") != recs[1]["paging_token"] {
		t.Fatalf("next %q (%v)", raw.Links.Next.Href, err)
	}
	prev, _ := url.Parse(raw.Links.Prev.Href)
	if prev.Query().Get("order") != "asc" || prev.Query().Get("cursor") != recs[0]["paging_token"] {
		t.Fatalf("prev %q", raw.Links.Prev.Href)
	}
	e.getJSON(host, next.RequestURI(), &raw)
	if recs := raw.Embedded["records"]; len(recs) != 2 || recs[0]["sequence"] != float64(2) || recs[1]["sequence"] != float64(1) {
		t.Fatalf("next page %v", raw.Embedded)
	}
	// go-stellar-sdk's horizonclient reads the same page.
	page, err := e.horizon().Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
	if err != nil || len(page.Embedded.Records) != 1 || page.Embedded.Records[0].Sequence != 4 {
		t.Fatalf("%v %+v", err, page)
	}
	if code, _ := e.hDo("GET", "/ledgers?order=sideways", nil, nil); code != 400 {
		t.Fatalf("order=sideways: %d", code)
	}
}

// A Soroban invocation's meta is TransactionMeta v4 with the return value in sorobanMeta, as
// stellar-core 23 writes it; a failed one has sorobanMeta without a return value.
func TestInvocationMetaCarriesTheReturnValue(t *testing.T) {
	v := newVaultEnv(t, stellarsim.VaultOptions{})
	wallet := v.funded(10 * xlm).Address()
	got := v.call("deposit", wallet, 500)
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(got.ResultMetaXDR, &meta); err != nil || meta.V != 4 || meta.V4.SorobanMeta == nil {
		t.Fatalf("%v %+v", err, meta)
	}
	ret := meta.V4.SorobanMeta.ReturnValue
	if ret == nil || ret.I128 == nil || ret.I128.Lo != 500 {
		t.Fatalf("return value %+v", ret)
	}
	// The same meta through Horizon.
	tx, err := v.horizon().TransactionDetail(got.TransactionHash)
	if err != nil || tx.ResultMetaXdr != got.ResultMetaXDR {
		t.Fatalf("%v: Horizon's meta differs", err)
	}

	// A failed invocation: declared with too few instructions, it exceeds its resources.
	op := v.invokeOp("deposit", wallet, 1)
	sim := v.simulate(v.operator, op)
	var data xdr.SorobanTransactionData
	if err := xdr.SafeUnmarshalBase64(sim.TransactionDataXDR, &data); err != nil {
		t.Fatal(err)
	}
	data.Resources.Instructions = 1
	sim.TransactionDataXDR, _ = xdr.MarshalBase64(data)
	tx2 := v.assemble(op, sim)
	failed := v.land(tx2, hashOf(t, tx2, v.n.Passphrase()))
	if failed.Status != "FAILED" || invokeCode(t, failed) != xdr.InvokeHostFunctionResultCodeInvokeHostFunctionResourceLimitExceeded {
		t.Fatalf("deposit with too few instructions: %+v", failed)
	}
	if err := xdr.SafeUnmarshalBase64(failed.ResultMetaXDR, &meta); err != nil || meta.V != 4 || meta.V4.SorobanMeta == nil ||
		meta.V4.SorobanMeta.ReturnValue != nil {
		t.Fatalf("failed meta %v %+v", err, meta.V4)
	}
}
