package stellarsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// adminRoutes serves the /_sim/ API, for tools outside Go:
//
//	GET    /_sim/              this list and the fault kinds with their parameters (AdminIndex)
//	POST   /_sim/faults        {"kind": "...", "count": N, ...} or a JSON array of them
//	GET    /_sim/faults        armed faults (count = remaining uses, -1 until cleared)
//	DELETE /_sim/faults        clear every fault, restore the retention window
//	GET    /_sim/transactions  every applied transaction
//	GET    /_sim/envelopes     every envelope received and what it was answered
//	POST   /_sim/close         close one ledger now
//	GET    /_sim/ledger        the latest ledger
//	GET    /_sim/congestion    lanes, queue limits, background traffic, clearing fees (congestion.go)
//	POST   /_sim/congestion    start background traffic (a Congestion profile)
//	DELETE /_sim/congestion    stop it
//	GET    /_sim/rpc_version   the stellar-rpc profile RPC answers as (versions.go)
//	PUT    /_sim/rpc_version   {"rpc_version": "current" | "v25.0" | "v24" | "v23"}
//	GET    /_sim/horizon_version the Horizon profile the root answers as (versions.go)
//	PUT    /_sim/horizon_version {"horizon_version": "current" | "v27" | "v26" | "v25" | "v22"}
//	GET    /_sim/frozen_keys   the frozen ledger keys (protocol 26, CAP-77; frozen.go)
//	PUT    /_sim/frozen_keys   {"freeze": [base64 LedgerKey...], "unfreeze": [...]}
//	GET    /_sim/muxed/{account}/{id} the M... address of a G... account and a 64-bit id (SEP-23)
func (n *Network) adminRoutes(mux *http.ServeMux) {
	mux.Handle("GET /_sim/{$}", n.AdminIndex())
	mux.HandleFunc("POST /_sim/faults", n.adminAddFaults)
	mux.HandleFunc("GET /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"faults": n.Faults()})
	})
	mux.HandleFunc("DELETE /_sim/faults", func(w http.ResponseWriter, _ *http.Request) {
		n.ClearFaults()
		writeJSON(w, http.StatusOK, map[string]any{"faults": []Fault{}})
	})
	mux.HandleFunc("GET /_sim/transactions", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"transactions": n.Applied()})
	})
	mux.HandleFunc("GET /_sim/envelopes", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"envelopes": n.Envelopes()})
	})
	mux.HandleFunc("POST /_sim/close", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, ledgerJSON(n.CloseLedger()))
	})
	mux.HandleFunc("GET /_sim/ledger", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, ledgerJSON(n.LatestLedger()))
	})
	n.congestionRoutes(mux)
	mux.HandleFunc("GET /_sim/rpc_version", n.adminRPCVersion)
	mux.HandleFunc("PUT /_sim/rpc_version", n.adminRPCVersion)
	mux.HandleFunc("GET /_sim/horizon_version", n.adminHorizonVersion)
	mux.HandleFunc("PUT /_sim/horizon_version", n.adminHorizonVersion)
	mux.HandleFunc("GET /_sim/frozen_keys", n.adminFrozenKeys)
	mux.HandleFunc("PUT /_sim/frozen_keys", n.adminFrozenKeys)
	mux.HandleFunc("GET /_sim/muxed/{account}/{id}", adminMuxed)
}

// adminMuxed answers GET /_sim/muxed/{account}/{id}: {"account","id","muxed"}, the M... address
// (SEP-23) of a G... account and a decimal uint64 id, as go-stellar-sdk's xdr.MuxedAccount writes
// it, so that a shell can pay a muxed wallet of the stack (README.md, "Try it"); 400 otherwise.
// It reads no ledger: any valid account has muxed addresses.
func adminMuxed(w http.ResponseWriter, r *http.Request) {
	account, idText := r.PathValue("account"), r.PathValue("id")
	id, err := strconv.ParseUint(idText, 10, 64)
	if err != nil || strconv.FormatUint(id, 10) != idText {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "id must be a uint64 in decimal, without leading zeros"})
		return
	}
	m, err := xdr.MuxedAccountFromAccountId(account, id)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": "account must be a G... address"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"account": account, "id": idText, "muxed": m.Address()})
}

// AdminRoute is one route of the /_sim/ admin API, as GET /_sim/ lists it.
type AdminRoute struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	What   string `json:"what"`
}

// adminRouteList is what adminRoutes serves (the vault host's routes are added when it is there).
var adminRouteList = []AdminRoute{
	{"GET", "/_sim/", "this index: the admin routes and the fault kinds"},
	{"POST", "/_sim/faults", `arm faults: one {"kind":...} object or a JSON array of them (see "faults" below)`},
	{"GET", "/_sim/faults", "the armed faults (count: remaining uses, -1 until healed)"},
	{"DELETE", "/_sim/faults", "heal: disarm every fault and restore the retention window"},
	{"GET", "/_sim/transactions", "every transaction the network applied"},
	{"GET", "/_sim/envelopes", "every envelope received and what it was answered"},
	{"POST", "/_sim/close", "close one ledger now"},
	{"GET", "/_sim/ledger", "the latest ledger"},
	{"GET", "/_sim/congestion", "lane and queue limits, the background traffic profile, the last ledgers' clearing fees"},
	{"POST", "/_sim/congestion", `start background traffic: {"seed":1,"per_ledger":120,"fee_min":100,"fee_max":1000,"spikes":[{"after":"2m","for":"2m","multiplier":10}]}`},
	{"DELETE", "/_sim/congestion", "stop the background traffic"},
	{"GET", "/_sim/rpc_version", "the stellar-rpc profile RPC answers as, its release and the profiles"},
	{"PUT", "/_sim/rpc_version", `switch the stellar-rpc profile: {"rpc_version": "current" (v25.1.0+), "v25.0", "v24" or "v23"}`},
	{"GET", "/_sim/horizon_version", "the Horizon release profile the root answers as, its release and the profiles"},
	{"PUT", "/_sim/horizon_version", `switch the Horizon profile: {"horizon_version": "current" (28.0.0), "v27", "v26", "v25" or "v22"}`},
	{"GET", "/_sim/frozen_keys", "the frozen ledger keys (protocol 26, CAP-77), base64 XDR"},
	{"PUT", "/_sim/frozen_keys", `freeze or unfreeze ledger keys: {"freeze": [base64 LedgerKey...], "unfreeze": [...]}`},
	{"GET", "/_sim/muxed/{account}/{id}", `the M... address (SEP-23) of a G... account and a decimal 64-bit id: {"account","id","muxed"}`},
}

var vaultRouteList = []AdminRoute{
	{"GET", "/_sim/vaults/{contract}/balances/{wallet}", "a wallet's balance in a vault contract"},
	{"POST", "/_sim/vaults/{contract}/balances/{wallet}/archive", "archive that balance (the next call restores it)"},
}

// FaultKind describes one fault kind for POST /_sim/faults, as GET /_sim/ lists it.
type FaultKind struct {
	Kind string `json:"kind"`
	What string `json:"what"`
	// Params are the fields it reads besides kind and count.
	Params string `json:"params"`
	// Count is what "count" counts and how long the fault lasts without one.
	Count string `json:"count"`
	// Example is a request body that arms it.
	Example string `json:"example"`
}

// FaultKinds lists every fault kind with its parameters and default count (faults.go).
var FaultKinds = []FaultKind{
	{FaultRefuse, "close the connection without an answer; nothing is accepted", `api ("rpc", "horizon"; empty: both)`,
		"submissions; default 1", `{"kind":"refuse"}`},
	{FaultDropResponse, "accept the envelope (it will land), then close the connection without an answer", "api",
		"submissions; default 1", `{"kind":"drop_response"}`},
	{FaultDelay, "accept as usual, answer after the delay", `delay (required: "2s" or milliseconds), api`,
		"submissions; default 1", `{"kind":"delay","delay":"2s"}`},
	{FaultAnswer, "answer without accepting", `status (TRY_AGAIN_LATER, ERROR, PENDING, DUPLICATE), code ("txBAD_SEQ"; alone implies ERROR), http_status (an HTTP error without a body); exactly one of them (code may go with status ERROR); api`,
		"submissions; default 1", `{"kind":"answer","status":"TRY_AGAIN_LATER"}`},
	{FaultDropEnvelope, "answer PENDING, then evict the envelope from the queue: it never lands", "api",
		"submissions; default 1", `{"kind":"drop_envelope"}`},
	{FaultDelayInclusion, "include an accepted envelope that many ledgers later", "ledgers (required, > 0), api",
		"submissions; default 1", `{"kind":"delay_inclusion","ledgers":3}`},
	{FaultStall, "ledger closes close nothing", "none",
		"close attempts; default: until healed", `{"kind":"stall","count":2}`},
	{FaultRetention, "shrink the getTransaction history window to that many ledgers", "ledgers (required, > 0)",
		"none: until healed", `{"kind":"retention","ledgers":2}`},
	{FaultReadOrder, "getTransaction answers NOT_FOUND for a transaction in the latest ledger (stellar-rpc's read order during ingestion); under the rpc_version profiles before v25.1 it finds it with a latestLedger below its ledger",
		`ledgers (n: any of the latest n+1 ledgers), api ("rpc" or empty)`, "lookups; default 1", `{"kind":"read_order"}`},
	{FaultDBLag, "RPC's database trails its core by that many ledgers", `ledgers (required, > 0), api ("rpc" or empty)`,
		"none: until healed", `{"kind":"db_lag","ledgers":2}`},
	{FaultInstances, "several instances behind one URL, answering round-robin, the slowest that much behind", "instances (2 or more; default 3), delay (required: the slowest instance's extra lag), api",
		"none: until healed", `{"kind":"instances","delay":"10s"}`},
}

// AdminIndex answers GET /_sim/: {"routes": [...], "faults": [...]}, the admin routes (with
// extra, routes a host adds beside the network's) and FaultKinds.
func (n *Network) AdminIndex(extra ...AdminRoute) http.Handler {
	routes := slices.Clone(adminRouteList)
	if _, ok := n.contracts.(adminRouter); ok {
		routes = append(routes, vaultRouteList...)
	}
	routes = append(routes, extra...)
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"routes": routes, "faults": FaultKinds})
	})
}

func ledgerJSON(l LedgerInfo) map[string]any {
	return map[string]any{"sequence": l.Sequence, "close_time": l.CloseTime.Format(time.RFC3339)}
}

func (n *Network) adminAddFaults(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
	if err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("reading body: %w", err))
		return
	}
	body = bytes.TrimSpace(body)
	var faults []Fault
	if len(body) > 0 && body[0] == '[' {
		err = json.Unmarshal(body, &faults)
	} else {
		var f Fault
		err = json.Unmarshal(body, &f)
		faults = []Fault{f}
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, fmt.Errorf("decoding fault: %w", err))
		return
	}
	for _, f := range faults {
		if err := f.validate(); err != nil {
			adminError(w, http.StatusBadRequest, err)
			return
		}
	}
	for _, f := range faults {
		_ = n.AddFault(f)
	}
	writeJSON(w, http.StatusCreated, map[string]any{"faults": n.Faults()})
}

func adminError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
