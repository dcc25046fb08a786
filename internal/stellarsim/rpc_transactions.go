package stellarsim

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
)

// Stellar RPC methods for transactions: sendTransaction and getTransaction.

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
		if !n.rpcVersion.rangeReadFirst() {
			// The transaction was read before its ledger's ingestion committed,
			// the ledger range after (FaultReadOrder).
			resp.Status = protocol.TransactionStatusNotFound
			return resp, nil
		}
		// Before v25.1.0 the range was read first (versions.go): the range
		// from before the ledger's ingestion committed, the transaction after.
		before := n.ledgerInfo(a.Ledger - 1)
		resp.LatestLedger, resp.LatestLedgerCloseTime = before.Sequence, before.CloseTime.Unix()
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
