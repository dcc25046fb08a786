package stellarsim

import (
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/support/render/hal"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Horizon's ledger resources: /ledgers, /ledgers/{seq} (/fee_stats is in feestats.go).

func (n *Network) ledgerResource(lb links, seq uint32) hProtocol.Ledger {
	ct := n.closeTimeOf(seq)
	var l hProtocol.Ledger
	l.ID = ledgerHash(seq, ct)
	l.Hash = l.ID
	if seq > 1 {
		l.PrevHash = ledgerHash(seq-1, n.closeTimeOf(seq-1))
	}
	l.PT = strconv.FormatInt(int64(seq)<<32, 10)
	l.Sequence = int32(seq)
	var ok, failed, ops int32
	i := sort.Search(len(n.applied), func(i int) bool { return n.applied[i].Ledger >= seq })
	for ; i < len(n.applied) && n.applied[i].Ledger == seq; i++ {
		if n.applied[i].Status == "SUCCESS" {
			ok++
			ops += int32(len(n.applied[i].Ops))
		} else {
			failed++
		}
	}
	l.SuccessfulTransactionCount, l.FailedTransactionCount, l.OperationCount = ok, &failed, ops
	l.TxSetOperationCount = &ops
	l.ClosedAt = time.Unix(ct, 0).UTC()
	l.TotalCoins = amount.StringFromInt64(rootBalance)
	l.FeePool = "0.0000000"
	l.BaseFee, l.BaseReserve = int32(n.opts.BaseFee), int32(n.opts.BaseReserve)
	l.MaxTxSetSize = int32(n.opts.Lanes.ClassicOps)
	l.ProtocolVersion = protocolVersion
	// Horizon's header_xdr is the bare LedgerHeader (resourceadapter/ledger.go, PopulateLedger).
	l.HeaderXDR, _ = xdr.MarshalBase64(n.ledgerHeaderLocked(seq).Header)
	l.Links.Self = lb.link("/ledgers/" + strconv.FormatUint(uint64(seq), 10))
	return l
}

// hLedgers serves GET /ledgers with order (asc|desc, default asc), limit (1..200, default 10)
// and cursor (a paging token or sequence), within the history window, as Horizon's ledger index
// renders it (stellar/go at 096f654e, services/horizon/internal/actions/ledger.go,
// GetLedgersHandler): a hal.Page, records under _embedded.records, and self, next and prev links
// carrying cursor, limit and order (support/render/hal/page.go, Page.PopulateLinks).
func (n *Network) hLedgers(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 10
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 200 {
			writeProblem(w, problem{Type: "bad_request", Title: "Bad Request", Status: http.StatusBadRequest,
				Detail: "The request you sent was invalid in some way.", Extras: map[string]any{"invalid_field": "limit", "reason": "limit must be 1 to 200"}})
			return
		}
		limit = v
	}
	order := q.Get("order")
	switch order {
	case "":
		order = "asc"
	case "asc", "desc":
	default:
		writeProblem(w, problem{Type: "bad_request", Title: "Bad Request", Status: http.StatusBadRequest,
			Detail: "The request you sent was invalid in some way.", Extras: map[string]any{"invalid_field": "order", "reason": "order must be asc or desc"}})
		return
	}
	var cursor int64
	if c := q.Get("cursor"); c != "" && c != "now" {
		v, err := strconv.ParseInt(c, 10, 64)
		if err != nil || v < 0 {
			writeProblem(w, problem{Type: "bad_request", Title: "Bad Request", Status: http.StatusBadRequest,
				Detail: "The request you sent was invalid in some way.", Extras: map[string]any{"invalid_field": "cursor"}})
			return
		}
		if v > 1<<32 {
			v >>= 32 // a paging token
		}
		cursor = v
	}
	lb := n.links(r)
	n.mu.Lock()
	view := n.viewOf(r, "horizon").latest
	latest, oldest := int64(view), int64(n.oldestAt(view))
	var records []hal.Pageable
	if order == "desc" {
		start := latest
		if cursor > 0 {
			start = cursor - 1
		}
		for s := start; s >= oldest && len(records) < limit; s-- {
			records = append(records, n.ledgerResource(lb, uint32(s)))
		}
	} else {
		start := max(oldest, cursor+1)
		for s := start; s <= latest && len(records) < limit; s++ {
			records = append(records, n.ledgerResource(lb, uint32(s)))
		}
	}
	n.mu.Unlock()
	page := hal.Page{Order: order, Limit: uint64(limit), Cursor: q.Get("cursor")}
	page.FullURL, _ = url.Parse(string(lb) + r.URL.EscapedPath() + "?" + r.URL.RawQuery)
	page.Embedded.Records = records
	page.PopulateLinks()
	writeHAL(w, http.StatusOK, page)
}

func (n *Network) hLedger(w http.ResponseWriter, r *http.Request) {
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 32)
	n.mu.Lock()
	defer n.mu.Unlock()
	latest := n.viewOf(r, "horizon").latest
	if err != nil || seq < uint64(n.oldestAt(latest)) || seq > uint64(latest) {
		writeProblem(w, problemNotFound)
		return
	}
	writeHAL(w, http.StatusOK, n.ledgerResource(n.links(r), uint32(seq)))
}
