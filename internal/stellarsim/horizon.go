package stellarsim

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/horizon/base"
	"github.com/stellar/go-stellar-sdk/support/render/hal"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// problem is Horizon's problem+json error body.
type problem struct {
	Type   string         `json:"type"`
	Title  string         `json:"title"`
	Status int            `json:"status"`
	Detail string         `json:"detail,omitempty"`
	Extras map[string]any `json:"extras,omitempty"`
}

func writeProblem(w http.ResponseWriter, p problem) {
	p.Type = "https://stellar.org/horizon-errors/" + p.Type
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	writeJSONTyped(w, p.Status, p)
}

var (
	problemNotFound = problem{Type: "not_found", Title: "Resource Missing", Status: http.StatusNotFound,
		Detail: "The resource at the url requested was not found.  This usually occurs for one of two reasons:  The url requested is not valid, or no data in our database could be found with the parameters provided."}
	problemTimeout = problem{Type: "timeout", Title: "Timeout", Status: http.StatusGatewayTimeout,
		Detail: "Your request timed out before completing.  Please try your request again. If you are submitting a transaction make sure you are sending exactly the same transaction (with the same sequence number)."}
	problemRateLimit = problem{Type: "rate_limit_exceeded", Title: "Rate Limit Exceeded", Status: http.StatusTooManyRequests,
		Detail: "The rate limit for the requesting IP address is over its alloted limit."}
	problemServerError = problem{Type: "server_error", Title: "Internal Server Error", Status: http.StatusInternalServerError,
		Detail: "An error occurred while processing this request."}
	problemTryAgainLater = problem{Type: "transaction_submission_timeout", Title: "Transaction Submission Timeout", Status: http.StatusServiceUnavailable,
		Detail: "stellar-core answered TRY_AGAIN_LATER: the transaction was not accepted. Resubmit the same transaction later."}
	problemMalformed = problem{Type: "transaction_malformed", Title: "Transaction Malformed", Status: http.StatusBadRequest,
		Detail: "Horizon could not decode the transaction envelope in this request."}
)

// problemForStatus picks the problem Horizon would send for an HTTP status.
func problemForStatus(status int) problem {
	switch status {
	case http.StatusTooManyRequests:
		return problemRateLimit
	case http.StatusGatewayTimeout:
		return problemTimeout
	case http.StatusServiceUnavailable:
		return problemTryAgainLater
	case http.StatusNotFound:
		return problemNotFound
	case http.StatusInternalServerError:
		return problemServerError
	}
	p := problemServerError
	p.Status = status
	p.Title = http.StatusText(status)
	return p
}

func (n *Network) horizonRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", n.hRoot)
	// Horizon answers every unknown resource with a not_found problem (this
	// also covers SEP-29's /accounts/{id}/data/config.memo_required check:
	// accounts here have no data entries).
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { writeProblem(w, problemNotFound) })
	mux.HandleFunc("GET /accounts/{id}", n.hAccount)
	mux.HandleFunc("GET /transactions/{hash}", n.hTransaction)
	mux.HandleFunc("POST /transactions", n.hSubmit)
	mux.HandleFunc("POST /transactions_async", n.hSubmitAsync)
	mux.HandleFunc("GET /ledgers", n.hLedgers)
	mux.HandleFunc("GET /ledgers/{seq}", n.hLedger)
	mux.HandleFunc("GET /fee_stats", n.hFeeStats)
	mux.HandleFunc("GET /friendbot", n.serveFriendbot)
	mux.HandleFunc("GET /friendbot/", n.serveFriendbot)
	// The JS SDK's rpc.Server.requestAirdrop POSTs to getNetwork's friendbotUrl (with its slash).
	mux.HandleFunc("POST /friendbot", n.serveFriendbot)
	mux.HandleFunc("POST /friendbot/", n.serveFriendbot)
}

// links builds Horizon's links from the base a client reached the network at (requestBase), as
// Horizon's hal.LinkBuilder does from BaseURL (stellar/go at 096f654e,
// services/horizon/internal/resourceadapter, e.g. ledger.go PopulateLedger). It joins strings rather than parsing them, so templated hrefs
// such as /friendbot{?addr} stay as written.
type links string

func (b links) link(path string) hal.Link { return hal.Link{Href: string(b) + path} }

func (n *Network) links(r *http.Request) links { return links(n.requestBase(r)) }

func (n *Network) hRoot(w http.ResponseWriter, r *http.Request) {
	lb := n.links(r)
	n.mu.Lock()
	core := n.latestLocked()
	view := n.viewOf(r, "horizon")
	latest := n.ledgerInfo(view.latest)
	oldest := n.oldestAt(view.latest)
	n.mu.Unlock()
	var root hProtocol.Root
	root.Links.Self = lb.link("/")
	root.Links.FeeStats = lb.link("/fee_stats")
	root.Links.Ledgers = lb.link("/ledgers")
	root.Links.Transactions = lb.link("/transactions")
	fb := lb.link("/friendbot{?addr}")
	fb.Templated = true
	root.Links.Friendbot = &fb
	root.HorizonVersion = "stellarsim"
	root.StellarCoreVersion = "stellarsim"
	root.IngestSequence = latest.Sequence
	root.HorizonSequence = int32(latest.Sequence)
	root.HorizonLatestClosedAt = latest.CloseTime
	root.HistoryElderSequence = int32(oldest)
	root.CoreSequence = int32(core.Sequence)
	root.NetworkPassphrase = n.passphrase
	root.CurrentProtocolVersion = protocolVersion
	root.SupportedProtocolVersion = protocolVersion
	root.CoreSupportedProtocolVersion = protocolVersion
	writeHAL(w, http.StatusOK, root)
}

func writeHAL(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/hal+json; charset=utf-8")
	writeJSONTyped(w, status, v)
}

func (n *Network) hAccount(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	n.mu.Lock()
	defer n.mu.Unlock()
	at := n.viewOf(r, "horizon").latest // Horizon shows the entries of the ledger it has ingested
	a := n.accountAt(id, at)
	if a == nil {
		writeProblem(w, problemNotFound)
		return
	}
	var out hProtocol.Account
	out.Links.Self = n.links(r).link("/accounts/" + id)
	out.ID, out.AccountID, out.PT = id, id, id
	out.Sequence = a.seq
	out.SubentryCount = int32(a.numSubEntries)
	out.LastModifiedLedger = a.lastModified
	lm := time.Unix(n.closeTimeOf(a.lastModified), 0).UTC()
	out.LastModifiedTime = &lm
	out.NumSponsoring, out.NumSponsored, out.Sponsor = a.numSponsoring, a.numSponsored, a.sponsor
	out.Signers = []hProtocol.Signer{{Weight: 1, Key: id, Type: "ed25519_public_key"}}
	out.Data = map[string]string{}
	yes := true
	var lines []hProtocol.Balance
	for k, t := range n.trustlinesAt(id, at) {
		typ := "credit_alphanum4"
		if len(k.asset.Code) > 4 {
			typ = "credit_alphanum12"
		}
		lines = append(lines, hProtocol.Balance{
			Balance: amount.StringFromInt64(t.balance), Limit: amount.StringFromInt64(t.limit),
			BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000", Sponsor: t.sponsor,
			LastModifiedLedger: t.lastModified, IsAuthorized: &yes, IsAuthorizedToMaintainLiabilities: &yes,
			Asset: base.Asset{Type: typ, Code: k.asset.Code, Issuer: k.asset.Issuer},
		})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Asset.Code+lines[i].Issuer < lines[j].Asset.Code+lines[j].Issuer })
	// Horizon lists credit balances first and the native balance last.
	out.Balances = append(lines, hProtocol.Balance{Balance: amount.StringFromInt64(a.balance),
		BuyingLiabilities: "0.0000000", SellingLiabilities: "0.0000000", Asset: base.Asset{Type: "native"}})
	writeHAL(w, http.StatusOK, out)
}

func (n *Network) hTransaction(w http.ResponseWriter, r *http.Request) {
	hash := strings.ToLower(r.PathValue("hash"))
	n.mu.Lock()
	a, ok := n.byHash[hash]
	latest := n.viewOf(r, "horizon").latest
	oldest := n.oldestAt(latest)
	n.mu.Unlock()
	if !ok || a.Ledger < oldest || a.Ledger > latest {
		writeProblem(w, problemNotFound)
		return
	}
	writeHAL(w, http.StatusOK, n.horizonTx(n.links(r), a, hash))
}

// horizonTx renders an applied transaction as Horizon does. Asked by the
// inner hash of a fee bump, Horizon answers with the inner hash as "hash".
func (n *Network) horizonTx(lb links, a *AppliedTx, asked string) hProtocol.Transaction {
	var env xdr.TransactionEnvelope
	_ = xdr.SafeUnmarshalBase64(a.EnvelopeXDR, &env)
	tx := hProtocol.Transaction{
		ID: a.Hash, PT: strconv.FormatInt(int64(a.Ledger)<<32|int64(a.ApplicationOrder)<<12, 10),
		Successful: a.Status == "SUCCESS", Hash: a.Hash, Ledger: int32(a.Ledger), LedgerCloseTime: a.CloseTime,
		Account: a.Source, AccountSequence: a.Sequence, FeeAccount: a.FeeSource, FeeCharged: a.FeeCharged,
		MaxFee: int64(env.Fee()), OperationCount: int32(len(a.Ops)),
		EnvelopeXdr: a.EnvelopeXDR, ResultXdr: a.ResultXDR, ResultMetaXdr: a.ResultMetaXDR,
		MemoType: "none", Signatures: sigStrings(env.Signatures()),
	}
	if a.FeeBumpHash != "" {
		tx.FeeBumpTransaction = &hProtocol.FeeBumpTransaction{Hash: a.FeeBumpHash, Signatures: sigStrings(env.FeeBumpSignatures())}
		tx.InnerTransaction = &hProtocol.InnerTransaction{Hash: a.Hash, Signatures: sigStrings(env.Signatures()), MaxFee: int64(env.Fee())}
		if asked != a.Hash {
			tx.ID, tx.Hash = a.FeeBumpHash, a.FeeBumpHash
			tx.MaxFee = env.FeeBumpFee()
			tx.Signatures = tx.FeeBumpTransaction.Signatures
		}
	}
	switch m := env.Memo(); m.Type {
	case xdr.MemoTypeMemoText:
		tx.MemoType, tx.Memo = "text", m.MustText()
	case xdr.MemoTypeMemoId:
		tx.MemoType, tx.Memo = "id", strconv.FormatUint(uint64(m.MustId()), 10)
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		tx.MemoType, tx.Memo = "hash", base64.StdEncoding.EncodeToString(h[:])
	case xdr.MemoTypeMemoReturn:
		h := m.MustRetHash()
		tx.MemoType, tx.Memo = "return", base64.StdEncoding.EncodeToString(h[:])
	}
	if tb := env.TimeBounds(); tb != nil {
		tx.Preconditions = &hProtocol.TransactionPreconditions{TimeBounds: &hProtocol.TransactionPreconditionsTimebounds{
			MinTime: strconv.FormatUint(uint64(tb.MinTime), 10)}}
		if tb.MaxTime != 0 {
			tx.Preconditions.TimeBounds.MaxTime = strconv.FormatUint(uint64(tb.MaxTime), 10)
		}
	}
	tx.Links.Self = lb.link("/transactions/" + tx.Hash)
	tx.Links.Transaction = tx.Links.Self
	tx.Links.Account = lb.link("/accounts/" + a.Source)
	tx.Links.Ledger = lb.link("/ledgers/" + strconv.FormatUint(uint64(a.Ledger), 10))
	return tx
}

func sigStrings(sigs []xdr.DecoratedSignature) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = base64.StdEncoding.EncodeToString(s.Signature)
	}
	return out
}

// resultCodes is Horizon's extras.result_codes for a TransactionResult.
func resultCodes(res xdr.TransactionResult) hProtocol.TransactionResultCodes {
	rc := hProtocol.TransactionResultCodes{TransactionCode: horizonTxCode(res.Result.Code)}
	ops := res.Result.Results
	if p := res.Result.InnerResultPair; p != nil {
		rc.InnerTransactionCode = horizonTxCode(p.Result.Result.Code)
		ops = p.Result.Result.Results
	}
	if ops != nil {
		for _, o := range *ops {
			rc.OperationCodes = append(rc.OperationCodes, opCodeName(o))
		}
	}
	return rc
}

func txFailedProblem(envXDR string, res xdr.TransactionResult) problem {
	resXDR, _ := xdr.MarshalBase64(res)
	return problem{Type: "transaction_failed", Title: "Transaction Failed", Status: http.StatusBadRequest,
		Detail: "The transaction failed when submitted to the stellar network. The `extras.result_codes` field on this response contains further details.  Descriptions of each code can be found at: https://developers.stellar.org/docs/data/apis/horizon/api-reference/errors/http-status-codes/horizon-specific/transaction-failed",
		Extras: map[string]any{"envelope_xdr": envXDR, "result_codes": resultCodes(res), "result_xdr": resXDR}}
}

// readTx reads the "tx" form field (or a JSON {"tx": ...} body).
func readTx(r *http.Request) string {
	body, err := io.ReadAll(io.LimitReader(r.Body, 4<<20))
	if err != nil {
		return ""
	}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var j struct {
			Tx string `json:"tx"`
		}
		_ = json.Unmarshal(body, &j)
		return j.Tx
	}
	v, err := url.ParseQuery(string(body))
	if err != nil {
		return ""
	}
	return v.Get("tx")
}

// horizonTransport applies connection faults and answer-by-HTTP-status.
// It reports whether the response has been dealt with.
func (n *Network) horizonTransport(w http.ResponseWriter, r *http.Request, s *submission) bool {
	if s.faults.refuse {
		dropConnection(w)
		return true
	}
	n.waitDelay(r, s.faults.delay)
	if s.faults.dropResponse {
		dropConnection(w)
		return true
	}
	if a := s.faults.answer; a != nil && a.HTTPStatus != 0 {
		n.noteHTTPStatus(s, a.HTTPStatus)
		writeProblem(w, problemForStatus(a.HTTPStatus))
		return true
	}
	return false
}

func (n *Network) noteHTTPStatus(s *submission, status int) {
	n.mu.Lock()
	s.rec.HTTPStatus = status
	n.mu.Unlock()
}

// hSubmit is the synchronous POST /transactions: it waits for the
// transaction to be included (up to HorizonSubmitTimeout, then 504), and
// answers an envelope already in history with its stored result at once.
func (n *Network) hSubmit(w http.ResponseWriter, r *http.Request) {
	b64 := readTx(r)
	s, err := n.submit("horizon", b64)
	if err != nil {
		writeProblem(w, problemMalformed)
		return
	}
	if n.horizonTransport(w, r, s) {
		return
	}
	if s.status == StatusTryAgainLater || s.status == StatusError {
		// A re-send of an envelope that already landed is answered from history.
		if a, ok := n.Transaction(s.tx.fullHash); ok && s.faults.answer == nil {
			n.respondApplied(w, r, s, &a)
			return
		}
	}
	switch s.status {
	case StatusError:
		n.noteHTTPStatus(s, http.StatusBadRequest)
		writeProblem(w, txFailedProblem(b64, *s.errResult))
		return
	case StatusTryAgainLater:
		n.noteHTTPStatus(s, http.StatusServiceUnavailable)
		writeProblem(w, problemTryAgainLater)
		return
	}
	timeout := time.NewTimer(n.opts.HorizonSubmitTimeout)
	defer timeout.Stop()
	for {
		n.mu.Lock()
		a := n.byHash[s.tx.fullHash]
		closed := n.ledgerClosed
		n.mu.Unlock()
		if a != nil {
			c := *a
			n.respondApplied(w, r, s, &c)
			return
		}
		select {
		case <-closed:
		case <-timeout.C:
			n.noteHTTPStatus(s, http.StatusGatewayTimeout)
			writeProblem(w, problemTimeout)
			return
		case <-r.Context().Done():
			return
		case <-n.stop:
			writeProblem(w, problemForStatus(http.StatusServiceUnavailable))
			return
		}
	}
}

func (n *Network) respondApplied(w http.ResponseWriter, r *http.Request, s *submission, a *AppliedTx) {
	if a.Status == "SUCCESS" {
		n.noteHTTPStatus(s, http.StatusOK)
		writeHAL(w, http.StatusOK, n.horizonTx(n.links(r), a, s.tx.fullHash))
		return
	}
	var res xdr.TransactionResult
	_ = xdr.SafeUnmarshalBase64(a.ResultXDR, &res)
	n.noteHTTPStatus(s, http.StatusBadRequest)
	writeProblem(w, txFailedProblem(s.tx.envXDR, res))
}

// hSubmitAsync is POST /transactions_async: core's answer, mapped to
// 201 PENDING, 409 DUPLICATE, 503 TRY_AGAIN_LATER, 400 ERROR.
func (n *Network) hSubmitAsync(w http.ResponseWriter, r *http.Request) {
	s, err := n.submit("horizon_async", readTx(r))
	if err != nil {
		writeProblem(w, problemMalformed)
		return
	}
	if n.horizonTransport(w, r, s) {
		return
	}
	resp := hProtocol.AsyncTransactionSubmissionResponse{TxStatus: s.status, Hash: s.tx.fullHash, ErrorResultXDR: s.errorResultXDR()}
	status := resp.GetStatus()
	if status == 0 {
		status = http.StatusInternalServerError
	}
	n.noteHTTPStatus(s, status)
	writeJSON(w, status, resp)
}

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
	l.MaxTxSetSize = 1000
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

func (n *Network) hFeeStats(w http.ResponseWriter, r *http.Request) {
	n.mu.Lock()
	latest := n.viewOf(r, "horizon").latest
	n.mu.Unlock()
	f := n.opts.BaseFee
	d := hProtocol.FeeDistribution{Max: f, Min: f, Mode: f, P10: f, P20: f, P30: f, P40: f, P50: f,
		P60: f, P70: f, P80: f, P90: f, P95: f, P99: f}
	writeJSON(w, http.StatusOK, hProtocol.FeeStats{LastLedger: latest, LastLedgerBaseFee: f, FeeCharged: d, MaxFee: d})
}
