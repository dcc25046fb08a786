package stellarsim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

// protocolVersion is the ledger protocol the network runs and reports (getVersionInfo,
// getNetwork, getLatestLedger, getLedgers, Horizon's root and /ledgers, the ledger headers'
// ledgerVersion): protocol 26, which pubnet runs since 2026-05-06. What this network follows of
// protocols 24 to 26, and what it leaves out, is in doc.go.
const protocolVersion = 26

// JSON-RPC 2.0 error codes.
const (
	rpcParseError     = -32700
	rpcInvalidRequest = -32600
	rpcMethodNotFound = -32601
	rpcInvalidParams  = -32602
	rpcInternalError  = -32603
)

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("jsonrpc %d: %s", e.Code, e.Message) }

func invalidParams(format string, args ...any) *RPCError {
	return &RPCError{Code: rpcInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// RPCHandler serves one JSON-RPC method. Return an *RPCError to choose the
// error code; any other error is an internal error.
type RPCHandler func(r *http.Request, params json.RawMessage) (any, error)

// HandleRPC adds or replaces a JSON-RPC method (e.g. simulateTransaction
// once contracts exist).
func (n *Network) HandleRPC(method string, h RPCHandler) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.rpcMethods[method] = h
}

func (n *Network) defaultRPCMethods() map[string]RPCHandler {
	return map[string]RPCHandler{
		protocol.GetHealthMethodName:        n.rpcGetHealth,
		protocol.GetNetworkMethodName:       n.rpcGetNetwork,
		protocol.GetLatestLedgerMethodName:  n.rpcGetLatestLedger,
		protocol.GetLedgerEntriesMethodName: n.rpcGetLedgerEntries,
		protocol.GetFeeStatsMethodName:      n.rpcGetFeeStats,
		protocol.GetTransactionMethodName:   n.rpcGetTransaction,
		protocol.GetTransactionsMethodName:  n.rpcGetTransactions,
		protocol.GetLedgersMethodName:       n.rpcGetLedgers,
		protocol.GetEventsMethodName:        n.rpcGetEvents,
		protocol.GetVersionInfoMethodName:   n.rpcGetVersionInfo,
		// sendTransaction is served by serveRPC itself: its faults act on the connection.
	}
}

type rpcRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// transport is what submission faults do to the HTTP exchange.
type transport struct {
	refuse       bool
	dropResponse bool
	delay        time.Duration
	httpStatus   int
}

func (t *transport) merge(o transport) {
	t.refuse = t.refuse || o.refuse
	t.dropResponse = t.dropResponse || o.dropResponse
	t.delay += o.delay
	if t.httpStatus == 0 {
		t.httpStatus = o.httpStatus
	}
}

func (n *Network) serveRPC(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4<<20))
	if err != nil {
		writeJSON(w, http.StatusRequestEntityTooLarge, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
			Error: &RPCError{Code: rpcInvalidRequest, Message: "request too large or unreadable"}})
		return
	}
	body = bytes.TrimSpace(body)
	var tr transport
	if len(body) > 0 && body[0] == '[' {
		var reqs []json.RawMessage
		if err := json.Unmarshal(body, &reqs); err != nil || len(reqs) == 0 {
			writeJSON(w, http.StatusOK, rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null"),
				Error: &RPCError{Code: rpcParseError, Message: "invalid batch"}})
			return
		}
		var out []rpcResponse
		for _, raw := range reqs {
			resp, t, notify := n.rpcCall(r, raw)
			tr.merge(t)
			if !notify {
				out = append(out, resp)
			}
		}
		n.finishRPC(w, r, tr, out)
		return
	}
	resp, t, notify := n.rpcCall(r, body)
	if notify {
		n.finishRPC(w, r, t, nil)
		return
	}
	n.finishRPC(w, r, t, resp)
}

// finishRPC applies connection faults, then writes the response.
func (n *Network) finishRPC(w http.ResponseWriter, r *http.Request, tr transport, resp any) {
	if tr.refuse {
		dropConnection(w)
		return
	}
	n.waitDelay(r, tr.delay)
	if tr.dropResponse {
		dropConnection(w)
		return
	}
	if tr.httpStatus != 0 {
		http.Error(w, http.StatusText(tr.httpStatus), tr.httpStatus)
		return
	}
	if resp == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, resp)
}

// rpcCall runs one request. notify is true for a notification (no id).
func (n *Network) rpcCall(r *http.Request, raw json.RawMessage) (resp rpcResponse, tr transport, notify bool) {
	resp = rpcResponse{JSONRPC: "2.0", ID: json.RawMessage("null")}
	var req rpcRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		resp.Error = &RPCError{Code: rpcParseError, Message: "parse error: " + err.Error()}
		return resp, tr, false
	}
	if len(req.ID) > 0 {
		resp.ID = req.ID
	}
	if req.JSONRPC != "2.0" || req.Method == "" {
		resp.Error = &RPCError{Code: rpcInvalidRequest, Message: "invalid request: want jsonrpc 2.0 and a method"}
		return resp, tr, false
	}
	notify = len(req.ID) == 0
	var result any
	var err error
	if req.Method == protocol.SendTransactionMethodName {
		result, tr, err = n.rpcSendTransaction(r, req.Params)
	} else {
		n.mu.Lock()
		h, ok := n.rpcMethods[req.Method]
		n.mu.Unlock()
		if !ok {
			resp.Error = &RPCError{Code: rpcMethodNotFound, Message: "method not found: " + req.Method}
			return resp, tr, notify
		}
		result, err = h(r, req.Params)
	}
	if err != nil {
		var re *RPCError
		if !errors.As(err, &re) {
			re = &RPCError{Code: rpcInternalError, Message: err.Error()}
		}
		resp.Error = re
		return resp, tr, notify
	}
	resp.Result = result
	return resp, tr, notify
}

// decodeParams reads by-name params into v; absent or null params leave v zero.
func decodeParams(params json.RawMessage, v any) error {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		return nil
	}
	if p[0] != '{' {
		return invalidParams("params must be an object")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return invalidParams("invalid params: %v", err)
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	writeJSONTyped(w, status, v)
}

// writeJSONTyped writes v with whatever Content-Type is already set.
func writeJSONTyped(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
