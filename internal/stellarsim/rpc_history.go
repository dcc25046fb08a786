package stellarsim

import (
	"encoding/hex"
	"encoding/json"
	"math"
	"net/http"
	"strconv"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/toid"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Page sizes of getLedgers and getTransactions: stellar-rpc's defaults
// (cmd/stellar-rpc/internal/config/options.go: max-ledgers-limit and max-transactions-limit 200,
// default-ledgers-limit and default-transactions-limit 50).
const (
	rpcMaxPageLimit     = 200
	rpcDefaultPageLimit = 50
)

// rpcGetVersionInfo follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_version_info.go,
// NewGetVersionInfoHandler): version is the release of the profile RPC answers as (versions.go),
// captiveCoreVersion the core this network models; commitHash names this network and there is
// no build time.
func (n *Network) rpcGetVersionInfo(_ *http.Request, _ json.RawMessage) (any, error) {
	return protocol.GetVersionInfoResponse{
		Version:            n.RPCVersion().Release(),
		CommitHash:         "stellarsim",
		CaptiveCoreVersion: coreVersionString,
		ProtocolVersion:    protocolVersion,
	}, nil
}

// ledgerRangeLocked is the history window as stellar-rpc validates pagination against it, as the
// answering instance shows it (viewOf: visibility lag and read faults).
func (n *Network) ledgerRangeLocked(r *http.Request) protocol.LedgerSeqRange {
	latest := n.viewOf(r, "rpc").latest
	return protocol.LedgerSeqRange{FirstLedger: n.oldestAt(latest), LastLedger: latest}
}

// rpcGetLedgers follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_ledgers.go,
// ledgersHandler.getLedgers and initializePagination): startLedger or a cursor (the last ledger
// of the previous page) within the history window, at most 200 ledgers a page (50 by default),
// each with its hash, close time, LedgerHeaderHistoryEntry (headerXdr; getLatestLedger sends the
// bare header) and LedgerCloseMeta (metadataXdr). Errors: -32600 for a start outside the window,
// both a start and a cursor, or a limit over 200; -32602 for a bad cursor or params.
func (n *Network) rpcGetLedgers(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetLedgersRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	rng := n.ledgerRangeLocked(r)
	if err := req.Validate(rpcMaxPageLimit, rng); err != nil {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: err.Error()}
	}
	start, limit := req.StartLedger, uint(rpcDefaultPageLimit)
	if p := req.Pagination; p != nil {
		if p.Cursor != "" {
			c, err := strconv.ParseUint(p.Cursor, 10, 32)
			if err != nil {
				return nil, invalidParams("%v", err)
			}
			start = uint32(c) + 1
			if !protocol.IsLedgerWithinRange(start, rng) {
				return nil, invalidParams("cursor ('%s') must be between the oldest ledger: %d and the latest ledger: %d for this rpc instance",
					p.Cursor, rng.FirstLedger, rng.LastLedger)
			}
		}
		if p.Limit > 0 {
			limit = p.Limit
		}
	}
	resp := protocol.GetLedgersResponse{
		Ledgers:               []protocol.LedgerInfo{},
		LatestLedger:          rng.LastLedger,
		LatestLedgerCloseTime: n.closeTimeOf(rng.LastLedger),
		OldestLedger:          rng.FirstLedger,
		OldestLedgerCloseTime: n.closeTimeOf(rng.FirstLedger),
	}
	for seq := start; seq <= rng.LastLedger && uint(len(resp.Ledgers)) < limit; seq++ {
		hdr := n.ledgerHeaderLocked(seq)
		info := protocol.LedgerInfo{Hash: hex.EncodeToString(hdr.Hash[:]), Sequence: seq, LedgerCloseTime: n.closeTimeOf(seq)}
		var err error
		if info.LedgerHeader, err = xdr.MarshalBase64(hdr); err != nil {
			return nil, err
		}
		if seq == rng.LastLedger {
			info.LedgerMetadata, err = n.closeMetaXDRLocked(seq)
		} else {
			var lcm xdr.LedgerCloseMeta
			if lcm, err = n.ledgerCloseMetaLocked(seq); err == nil {
				info.LedgerMetadata, err = xdr.MarshalBase64(lcm)
			}
		}
		if err != nil {
			return nil, err
		}
		resp.Ledgers = append(resp.Ledgers, info)
	}
	switch {
	case len(resp.Ledgers) > 0:
		resp.Cursor = strconv.FormatUint(uint64(resp.Ledgers[len(resp.Ledgers)-1].Sequence), 10)
	case req.Pagination != nil && req.Pagination.Cursor != "":
		resp.Cursor = req.Pagination.Cursor
	default:
		resp.Cursor = strconv.FormatUint(uint64(start-1), 10)
	}
	return resp, nil
}

// rpcGetTransactions follows stellar-rpc (cmd/stellar-rpc/internal/methods/get_transactions.go,
// transactionsRPCHandler.getTransactionsByLedgerSequence, initializePagination and
// processTransactionsInLedger): transactions in application order from startLedger, or after a
// cursor (a TOID: ledger, application order, operation 1), up to the latest ledger, at most 200 a
// page (50 by default). Each has the envelope's own hash (the outer one for a fee bump), its
// envelope, result and meta, and createdAt as a number (getTransaction sends a string). The
// cursor is the TOID of the last transaction looked at. One deliberate difference: when a page
// starts past the last transaction of the latest ledger, stellar-rpc answers the cursor
// (latest, 0), which makes the next page repeat that ledger's transactions; here the cursor stays
// where the request's was. Errors as getLedgers.
func (n *Network) rpcGetTransactions(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetTransactionsRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	if req.StartLedger > math.MaxInt32 {
		return nil, invalidParams("startLedger exceeds supported range")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	rng := n.ledgerRangeLocked(r)
	if err := req.IsValid(rpcMaxPageLimit, rng); err != nil {
		return nil, &RPCError{Code: rpcInvalidRequest, Message: err.Error()}
	}
	start := *toid.New(int32(req.StartLedger), 1, 1)
	limit := uint(rpcDefaultPageLimit)
	if p := req.Pagination; p != nil {
		if p.Cursor != "" {
			c, err := strconv.ParseInt(p.Cursor, 10, 64)
			if err != nil {
				return nil, invalidParams("%v", err)
			}
			start = toid.Parse(c)
			start.TransactionOrder++ // the page starts after the cursor
		}
		if p.Limit > 0 {
			limit = p.Limit
		}
	}
	if start.LedgerSequence < 0 {
		return nil, invalidParams("cursor ledger sequence cannot be negative")
	}
	resp := protocol.GetTransactionsResponse{
		Transactions:          []protocol.TransactionInfo{},
		LatestLedger:          rng.LastLedger,
		LatestLedgerCloseTime: n.closeTimeOf(rng.LastLedger),
		OldestLedger:          rng.FirstLedger,
		OldestLedgerCloseTime: n.closeTimeOf(rng.FirstLedger),
	}
	cursor := toid.New(0, 0, 0)
	for seq := uint32(start.LedgerSequence); seq <= rng.LastLedger; seq++ {
		first := int32(1)
		if seq == uint32(start.LedgerSequence) {
			first = start.TransactionOrder
		}
		cursor = toid.New(int32(seq), max(first-1, 0), 1)
		txs := n.appliedInLocked(seq)
		for i := first; int(i) <= len(txs); i++ {
			cursor.TransactionOrder = i
			resp.Transactions = append(resp.Transactions, rpcTransactionInfo(txs[i-1]))
			if uint(len(resp.Transactions)) >= limit {
				resp.Cursor = cursor.String()
				return resp, nil
			}
		}
	}
	resp.Cursor = cursor.String()
	return resp, nil
}

// rpcTransactionInfo is one getTransactions entry.
func rpcTransactionInfo(a *AppliedTx) protocol.TransactionInfo {
	info := protocol.TransactionInfo{
		TransactionDetails: protocol.TransactionDetails{
			Status:           a.Status,
			TransactionHash:  a.Hash,
			ApplicationOrder: a.ApplicationOrder,
			EnvelopeXDR:      a.EnvelopeXDR,
			ResultXDR:        a.ResultXDR,
			ResultMetaXDR:    a.ResultMetaXDR,
			Ledger:           a.Ledger,
		},
		LedgerCloseTime: a.CloseTime.Unix(),
	}
	if a.FeeBumpHash != "" {
		info.TransactionHash, info.FeeBump = a.FeeBumpHash, true
	}
	return info
}
