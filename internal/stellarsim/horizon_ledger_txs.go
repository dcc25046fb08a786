package stellarsim

import (
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"

	"github.com/stellar/go-stellar-sdk/support/render/hal"
)

// hLedgerTransactions serves GET /ledgers/{seq}/transactions as Horizon's transaction index
// does for one ledger (stellar/go services/horizon/internal/actions/transaction.go,
// GetTransactionsHandler with ledger_id; history.TransactionsQ.ForLedger): the ledger's
// transactions in application order (their paging tokens, TOIDs, grow with it), order asc or
// desc (default asc), limit 1..200 (default 10), cursor a paging token, include_failed (default
// false: successful ones only). A fee bump is rendered under its outer hash, as in any Horizon
// collection. A ledger outside the history window is not_found.
//
// stellar-core applies a ledger's classic phase before its Soroban phase
// (src/herder/TxSetFrame.cpp, ApplicableTxSetFrame::getPhasesInApplyOrder; txset.go applyOrder),
// so a ledger's classic transactions come first in this listing.
func (n *Network) hLedgerTransactions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	badRequest := func(field, reason string) {
		writeProblem(w, problem{Type: "bad_request", Title: "Bad Request", Status: http.StatusBadRequest,
			Detail: "The request you sent was invalid in some way.", Extras: map[string]any{"invalid_field": field, "reason": reason}})
	}
	limit := 10
	if s := q.Get("limit"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 || v > 200 {
			badRequest("limit", "limit must be 1 to 200")
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
		badRequest("order", "order must be asc or desc")
		return
	}
	var cursor int64
	if c := q.Get("cursor"); c != "" {
		v, err := strconv.ParseInt(c, 10, 64)
		if err != nil || v < 0 {
			badRequest("cursor", "cursor must be a paging token")
			return
		}
		cursor = v
	}
	includeFailed := false
	switch f := q.Get("include_failed"); f {
	case "", "false":
	case "true":
		includeFailed = true
	default:
		badRequest("include_failed", "include_failed must be true or false")
		return
	}
	seq, err := strconv.ParseUint(r.PathValue("seq"), 10, 32)
	lb := n.links(r)
	n.mu.Lock()
	latest := n.viewOf(r, "horizon").latest
	if err != nil || seq < uint64(n.oldestAt(latest)) || seq > uint64(latest) {
		n.mu.Unlock()
		writeProblem(w, problemNotFound)
		return
	}
	var txs []*AppliedTx
	i := sort.Search(len(n.applied), func(i int) bool { return n.applied[i].Ledger >= uint32(seq) })
	for ; i < len(n.applied) && n.applied[i].Ledger == uint32(seq); i++ {
		if a := n.applied[i]; includeFailed || a.Status == "SUCCESS" {
			txs = append(txs, a)
		}
	}
	slices.SortFunc(txs, func(a, b *AppliedTx) int { return int(a.ApplicationOrder) - int(b.ApplicationOrder) })
	if order == "desc" {
		slices.Reverse(txs)
	}
	var records []hal.Pageable
	for _, a := range txs {
		asked := a.Hash
		if a.FeeBumpHash != "" {
			asked = a.FeeBumpHash
		}
		tx := n.horizonTx(lb, a, asked)
		pt, _ := strconv.ParseInt(tx.PT, 10, 64)
		if cursor > 0 && ((order == "asc" && pt <= cursor) || (order == "desc" && pt >= cursor)) {
			continue
		}
		if len(records) == limit {
			break
		}
		records = append(records, tx)
	}
	n.mu.Unlock()
	page := hal.Page{Order: order, Limit: uint64(limit), Cursor: q.Get("cursor")}
	page.FullURL, _ = url.Parse(string(lb) + r.URL.EscapedPath() + "?" + r.URL.RawQuery)
	page.Embedded.Records = records
	page.PopulateLinks()
	writeHAL(w, http.StatusOK, page)
}
