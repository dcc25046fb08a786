package stellarsim

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/toid"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// getEvents as stellar-rpc serves it (cmd/stellar-rpc/internal/methods/get_events.go,
// eventsRPCHandler.getEvents; the events' ids from cmd/stellar-rpc/internal/db/event.go,
// eventHandler.InsertEvents).
const (
	// rpcMaxEventsLimit and rpcDefaultEventsLimit are stellar-rpc's max-events-limit and
	// default-events-limit defaults (config/options.go: 10000 and 100).
	rpcMaxEventsLimit     = 10000
	rpcDefaultEventsLimit = 100
	// rpcEventsLedgerScanLimit is how many ledgers one request scans at most (get_events.go,
	// LedgerScanLimit): a page short of its limit ends there, its cursor at the last ledger
	// scanned, and the next request goes on from that cursor.
	rpcEventsLedgerScanLimit = 10000
)

// rpcGetEvents serves a startLedger (and optional endLedger, exclusive) or a cursor (the id of
// the last event read, or a window's end; the page starts after it), at most five filters
// (each with up to five contract ids, five topic filters of up to four segments, "*" for any one
// segment and a trailing "**" for any number more, and the event types), limit 100 by default
// and 10,000 at most. Each event's id is its cursor: ledger, transaction (1-based application
// order; 0 for the fee events charged before all transactions, the largest transaction index for
// the refunds after them), operation (the largest for an event after the transaction's
// operations) and index. A page that reaches the limit has the last event's id as its cursor;
// otherwise the cursor is the end of the scanned window (the largest cursor of its last ledger).
// Events of failed transactions are served: their fee events (a failed transaction has no
// operation events). Errors: -32602 for the request's shape (protocol.GetEventsRequest.Valid),
// -32600 for a start outside the ledger range.
func (n *Network) rpcGetEvents(r *http.Request, params json.RawMessage) (any, error) {
	var req protocol.GetEventsRequest
	if err := decodeParams(params, &req); err != nil {
		return nil, err
	}
	if req.Format == protocol.FormatJSON {
		return nil, invalidParams("xdrFormat json is not supported here; use base64")
	}
	if err := req.Valid(rpcMaxEventsLimit); err != nil {
		return nil, invalidParams("%v", err)
	}
	for _, f := range req.Filters {
		for _, id := range f.ContractIDs {
			if _, err := strkey.Decode(strkey.VersionByteContract, id); err != nil {
				return nil, invalidParams("invalid contract ID: %v", id)
			}
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	rng := n.ledgerRangeLocked(r)
	start := protocol.Cursor{Ledger: req.StartLedger}
	limit := uint(rpcDefaultEventsLimit)
	if p := req.Pagination; p != nil {
		if p.Cursor != nil {
			start = *p.Cursor
			start.Event++ // the page starts after the cursor
		}
		if p.Limit > 0 {
			limit = p.Limit
		}
	}
	end := min(start.Ledger+rpcEventsLedgerScanLimit, rng.LastLedger+1)
	if req.EndLedger != 0 {
		end = min(req.EndLedger, end)
	}
	if start.Ledger < rng.FirstLedger || start.Ledger > rng.LastLedger {
		return nil, &RPCError{Code: rpcInvalidRequest,
			Message: "startLedger must be within the ledger range: " + u32s(rng.FirstLedger) + " - " + u32s(rng.LastLedger)}
	}
	resp := protocol.GetEventsResponse{
		Events:                []protocol.EventInfo{},
		LatestLedger:          rng.LastLedger,
		OldestLedger:          rng.FirstLedger,
		LatestLedgerCloseTime: n.closeTimeOf(rng.LastLedger),
		OldestLedgerCloseTime: n.closeTimeOf(rng.FirstLedger),
	}
	add := func(c protocol.Cursor, a *AppliedTx, ev xdr.ContractEvent) bool {
		if cursorLess(c, start) {
			return true
		}
		de := xdr.DiagnosticEvent{InSuccessfulContractCall: a.Status == "SUCCESS", Event: ev}
		if !req.Matches(de) {
			return true
		}
		info, err := eventInfo(de, c, a)
		if err != nil {
			return true
		}
		resp.Events = append(resp.Events, info)
		return uint(len(resp.Events)) < limit
	}
	for seq := start.Ledger; seq < end; seq++ {
		if !n.ledgerEventsLocked(seq, add) {
			resp.Cursor = resp.Events[len(resp.Events)-1].ID
			return resp, nil
		}
	}
	last := protocol.MaxCursor
	last.Ledger = end - 1
	resp.Cursor = last.String()
	return resp, nil
}

// ledgerEventsLocked calls add with ledger seq's events in id order (InsertEvents): the fee
// events charged before all transactions, each transaction's operation events and its events
// after them, then the events after all transactions. add returns false to stop; so does
// ledgerEventsLocked then. Callers hold n.mu.
func (n *Network) ledgerEventsLocked(seq uint32, add func(protocol.Cursor, *AppliedTx, xdr.ContractEvent) bool) bool {
	txs := n.appliedInLocked(seq)
	var before, after uint32
	for _, a := range txs {
		for _, ev := range a.txEvents {
			if ev.Stage != xdr.TransactionEventStageTransactionEventStageBeforeAllTxs {
				continue
			}
			if !add(protocol.Cursor{Ledger: seq, Event: before}, a, ev.Event) {
				return false
			}
			before++
		}
	}
	for _, a := range txs {
		idx := uint32(a.ApplicationOrder)
		for op, evs := range a.opEvents {
			for i, ev := range evs {
				if !add(protocol.Cursor{Ledger: seq, Tx: idx, Op: uint32(op), Event: uint32(i)}, a, ev) {
					return false
				}
			}
		}
		var afterTx uint32
		for _, ev := range a.txEvents {
			if ev.Stage != xdr.TransactionEventStageTransactionEventStageAfterTx {
				continue
			}
			if !add(protocol.Cursor{Ledger: seq, Tx: idx, Op: toid.OperationMask, Event: afterTx}, a, ev.Event) {
				return false
			}
			afterTx++
		}
	}
	for _, a := range txs {
		for _, ev := range a.txEvents {
			if ev.Stage != xdr.TransactionEventStageTransactionEventStageAfterAllTxs {
				continue
			}
			if !add(protocol.Cursor{Ledger: seq, Tx: toid.TransactionMask, Event: after}, a, ev.Event) {
				return false
			}
			after++
		}
	}
	return true
}

// cursorLess orders cursors as stellar-rpc's ids sort: ledger, transaction, operation, event.
func cursorLess(a, b protocol.Cursor) bool {
	switch {
	case a.Ledger != b.Ledger:
		return a.Ledger < b.Ledger
	case a.Tx != b.Tx:
		return a.Tx < b.Tx
	case a.Op != b.Op:
		return a.Op < b.Op
	}
	return a.Event < b.Event
}

// eventInfo is one getEvents entry in base64 XDR (get_events.go, eventInfoForEvent); txHash is
// the envelope's own hash, the outer one of a fee bump (ingest's LedgerTransaction.Hash).
func eventInfo(de xdr.DiagnosticEvent, c protocol.Cursor, a *AppliedTx) (protocol.EventInfo, error) {
	v0 := de.Event.Body.V0
	info := protocol.EventInfo{
		EventType:       protocol.GetEventTypeFromEventTypeXDR()[de.Event.Type],
		Ledger:          int32(min(c.Ledger, math.MaxInt32)),
		LedgerClosedAt:  a.CloseTime.UTC().Format(time.RFC3339),
		ID:              c.String(),
		TransactionHash: a.Hash,
		OpIndex:         c.Op,
		TxIndex:         c.Tx,
		TopicXDR:        make([]string, 0, len(v0.Topics)),
	}
	//lint:ignore SA1019 deprecated, yet stellar-rpc still sends it (get_events.go, eventInfoForEvent).
	info.InSuccessfulContractCall = de.InSuccessfulContractCall
	if a.FeeBumpHash != "" {
		info.TransactionHash = a.FeeBumpHash
	}
	for _, t := range v0.Topics {
		s, err := xdr.MarshalBase64(t)
		if err != nil {
			return info, err
		}
		info.TopicXDR = append(info.TopicXDR, s)
	}
	data, err := xdr.MarshalBase64(v0.Data)
	if err != nil {
		return info, err
	}
	info.ValueXDR = data
	if de.Event.ContractId != nil {
		info.ContractID = strkey.MustEncode(strkey.VersionByteContract, de.Event.ContractId[:])
	}
	return info, nil
}

func u32s(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
