package stellarsim

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// protocolVersion is the ledger protocol the network claims.
const protocolVersion = 23

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

func (n *Network) rpcGetHealth(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	view := n.viewOf(r, "rpc")
	latest := n.ledgerInfo(view.latest)
	oldest := n.oldestAt(view.latest)
	return protocol.GetHealthResponse{
		Status:                "healthy",
		LatestLedger:          latest.Sequence,
		LatestLedgerCloseTime: latest.CloseTime.Unix(),
		OldestLedger:          oldest,
		OldestLedgerCloseTime: n.closeTimeOf(oldest),
		LedgerRetentionWindow: n.retention,
	}, nil
}

// rpcGetNetwork follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_network.go,
// NewGetNetworkHandler); its friendbotUrl is the configured one there, here the friendbot of the
// address the client reached (requestBase).
func (n *Network) rpcGetNetwork(r *http.Request, _ json.RawMessage) (any, error) {
	return protocol.GetNetworkResponse{
		FriendbotURL:    n.requestBase(r) + "/friendbot/",
		Passphrase:      n.passphrase,
		ProtocolVersion: protocolVersion,
	}, nil
}

// rpcGetLatestLedger follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_latest_ledger.go,
// NewGetLatestLedgerHandler): headerXdr is the bare LedgerHeader (not the history entry that
// getLedgers sends) and metadataXdr the ledger's LedgerCloseMeta. The ledger is the one the
// answering instance shows (viewOf: visibility lag and read faults).
func (n *Network) rpcGetLatestLedger(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	latest := n.ledgerInfo(n.viewOf(r, "rpc").latest)
	hdr := n.ledgerHeaderLocked(latest.Sequence)
	metaXDR, err := n.closeMetaXDRLocked(latest.Sequence)
	n.mu.Unlock()
	if err != nil {
		return nil, err
	}
	hdrXDR, err := xdr.MarshalBase64(hdr.Header)
	if err != nil {
		return nil, fmt.Errorf("encoding ledger header: %w", err)
	}
	return protocol.GetLatestLedgerResponse{
		Hash:            hex.EncodeToString(hdr.Hash[:]),
		ProtocolVersion: protocolVersion,
		Sequence:        latest.Sequence,
		LedgerCloseTime: latest.CloseTime.Unix(),
		LedgerHeader:    hdrXDR,
		LedgerMetadata:  metaXDR,
	}, nil
}

func (n *Network) rpcGetLedgerEntries(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetLedgerEntriesRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if len(req.Keys) == 0 || len(req.Keys) > 200 {
		return nil, invalidParams("keys: want 1 to 200 keys, got %d", len(req.Keys))
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	keys := make([]xdr.LedgerKey, len(req.Keys))
	for i, k := range req.Keys {
		if err := xdr.SafeUnmarshalBase64(k, &keys[i]); err != nil {
			return nil, invalidParams("cannot unmarshal key value %s at index %d", k, i)
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	at := n.viewOf(r, "rpc").entries // entries as of the ledger the instance reads at
	resp := protocol.GetLedgerEntriesResponse{Entries: []protocol.LedgerEntryResult{}, LatestLedger: at}
	for i, k := range keys {
		var data xdr.LedgerEntryData
		var modified uint32
		var liveUntil *uint32 // contract entries only
		var err error
		switch k.Type {
		case xdr.LedgerEntryTypeAccount:
			a := n.accountAt(k.Account.AccountId.Address(), at)
			if a == nil {
				continue
			}
			data, err = a.entryXDR()
			modified = a.lastModified
		case xdr.LedgerEntryTypeTrustline:
			var typ xdr.AssetType
			var code, issuer string
			if k.TrustLine.Asset.Extract(&typ, &code, &issuer) != nil || typ == xdr.AssetTypeAssetTypeNative ||
				typ == xdr.AssetTypeAssetTypePoolShare {
				continue
			}
			id := k.TrustLine.AccountId.Address()
			asset := Asset{Code: code, Issuer: issuer}
			t := n.trustlineAt(tlKey{id, asset}, at)
			if t == nil {
				continue
			}
			data, err = t.entryXDR(id, asset)
			modified = t.lastModified
		case xdr.LedgerEntryTypeContractData, xdr.LedgerEntryTypeContractCode, xdr.LedgerEntryTypeTtl:
			src, ok := n.contracts.(ledgerEntrySource)
			if !ok {
				continue
			}
			var found bool
			if data, modified, liveUntil, found = src.ledgerEntry(k, at); !found {
				continue
			}
		default:
			continue // other entry types do not exist here
		}
		if err != nil {
			return nil, fmt.Errorf("encoding entry: %w", err)
		}
		b, err := xdr.MarshalBase64(data)
		if err != nil {
			return nil, fmt.Errorf("encoding entry: %w", err)
		}
		resp.Entries = append(resp.Entries, protocol.LedgerEntryResult{KeyXDR: req.Keys[i], DataXDR: b, LastModifiedLedger: modified,
			LiveUntilLedgerSeq: liveUntil})
	}
	return resp, nil
}

func (n *Network) rpcGetFeeStats(r *http.Request, _ json.RawMessage) (any, error) {
	n.mu.Lock()
	latest := n.viewOf(r, "rpc").latest
	n.mu.Unlock()
	f := uint64(n.opts.BaseFee)
	d := protocol.FeeDistribution{Max: f, Min: f, Mode: f, P10: f, P20: f, P30: f, P40: f, P50: f,
		P60: f, P70: f, P80: f, P90: f, P95: f, P99: f, LedgerCount: 1}
	return protocol.GetFeeStatsResponse{SorobanInclusionFee: d, InclusionFee: d, LatestLedger: latest}, nil
}

func (n *Network) rpcSendTransaction(r *http.Request, params json.RawMessage) (any, transport, error) {
	var tr transport
	var req protocol.SendTransactionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, tr, err
	}
	if req.Transaction == "" {
		return nil, tr, invalidParams("transaction: required")
	}
	if req.Format == protocol.FormatJSON {
		return nil, tr, invalidParams("xdrFormat json is not supported here; use base64")
	}
	s, err := n.submit("rpc", req.Transaction)
	if err != nil {
		return nil, tr, invalidParams("invalid_xdr")
	}
	tr = transport{refuse: s.faults.refuse, dropResponse: s.faults.dropResponse, delay: s.faults.delay}
	if a := s.faults.answer; a != nil && a.Status == "" && a.HTTPStatus != 0 {
		tr.httpStatus = a.HTTPStatus
	}
	// Core judged the envelope; latestLedger is the RPC database's
	// (stellar-rpc send_transaction.go reads ledgerReader.GetLedgerRange).
	n.mu.Lock()
	latest := n.ledgerInfo(n.viewOf(r, "rpc").latest)
	n.mu.Unlock()
	return protocol.SendTransactionResponse{
		Status:                s.status,
		Hash:                  s.tx.fullHash,
		ErrorResultXDR:        s.errorResultXDR(),
		LatestLedger:          latest.Sequence,
		LatestLedgerCloseTime: latest.CloseTime.Unix(),
	}, tr, nil
}

func (n *Network) rpcGetTransaction(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetTransactionRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	req.Hash = strings.ToLower(req.Hash)
	if len(req.Hash) != 64 {
		return nil, invalidParams("unexpected hash length (%d)", len(req.Hash))
	}
	if _, err := hex.DecodeString(req.Hash); err != nil {
		return nil, invalidParams("incorrect hash: %v", err)
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	view := n.viewOf(r, "rpc")
	latest := n.ledgerInfo(view.latest)
	oldest := n.oldestAt(view.latest)
	resp := protocol.GetTransactionResponse{
		LatestLedger:          latest.Sequence,
		LatestLedgerCloseTime: latest.CloseTime.Unix(),
		OldestLedger:          oldest,
		OldestLedgerCloseTime: n.closeTimeOf(oldest),
	}
	a, ok := n.byHash[req.Hash]
	if !ok || a.Ledger < oldest || a.Ledger > view.latest {
		resp.Status = protocol.TransactionStatusNotFound
		return resp, nil
	}
	if a.Ledger > view.served && n.takeReadOrder(a.Ledger, view.latest) {
		// The transaction was read before its ledger's ingestion committed,
		// the ledger range after (FaultReadOrder).
		resp.Status = protocol.TransactionStatusNotFound
		return resp, nil
	}
	resp.Status = a.Status
	// stellar-rpc reports the envelope's own hash: the outer one for a fee bump.
	resp.TransactionHash = a.Hash
	if a.FeeBumpHash != "" {
		resp.TransactionHash = a.FeeBumpHash
		resp.FeeBump = true
	}
	resp.ApplicationOrder = a.ApplicationOrder
	resp.EnvelopeXDR = a.EnvelopeXDR
	resp.ResultXDR = a.ResultXDR
	resp.ResultMetaXDR = a.ResultMetaXDR
	resp.Ledger = a.Ledger
	resp.LedgerCloseTime = a.CloseTime.Unix()
	return resp, nil
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
