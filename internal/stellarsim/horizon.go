package stellarsim

import (
	"net/http"
	"sort"
	"time"

	"github.com/stellar/go-stellar-sdk/amount"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/protocols/horizon/base"
	"github.com/stellar/go-stellar-sdk/support/render/hal"
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
	mux.HandleFunc("GET /ledgers/{seq}/transactions", n.hLedgerTransactions)
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
	hv := n.horizonVer
	n.mu.Unlock()
	var root hProtocol.Root
	root.Links.Self = lb.link("/")
	root.Links.FeeStats = lb.link("/fee_stats")
	root.Links.Ledgers = lb.link("/ledgers")
	root.Links.Transactions = lb.link("/transactions")
	fb := lb.link("/friendbot{?addr}")
	fb.Templated = true
	root.Links.Friendbot = &fb
	root.HorizonVersion = hv.versionString()
	root.StellarCoreVersion = coreVersionString
	root.IngestSequence = latest.Sequence
	root.HorizonSequence = int32(latest.Sequence)
	root.HorizonLatestClosedAt = latest.CloseTime
	root.HistoryElderSequence = int32(oldest)
	root.CoreSequence = int32(core.Sequence)
	root.NetworkPassphrase = n.passphrase
	// stellar-horizon internal/actions/root.go, GetRootHandler.GetResource: current_protocol_version
	// is core's current ledger protocol (internal/corestate/main.go, info.ledger.version),
	// supported_protocol_version the release's ingest.MaxSupportedProtocolVersion
	// (internal/ingest/main.go), core_supported_protocol_version core's own.
	root.CurrentProtocolVersion = protocolVersion
	root.SupportedProtocolVersion = hv.supportedProtocol()
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
	auth := authOf(a)
	th := auth.thresholds
	out.Thresholds = hProtocol.AccountThresholds{LowThreshold: th[thLow], MedThreshold: th[thMed], HighThreshold: th[thHigh]}
	for _, sg := range auth.signers {
		out.Signers = append(out.Signers, hProtocol.Signer{Weight: int32(sg.weight), Key: sg.key, Type: "ed25519_public_key"})
	}
	// Horizon lists the master key last, with its weight (0 when disabled).
	out.Signers = append(out.Signers, hProtocol.Signer{Weight: int32(th[thMaster]), Key: id, Type: "ed25519_public_key"})
	out.Data = map[string]string{}
	var lines []hProtocol.Balance
	for k, t := range n.trustlinesAt(id, at) {
		typ := "credit_alphanum4"
		if len(k.asset.Code) > 4 {
			typ = "credit_alphanum12"
		}
		authorized, maintain := t.auth == Authorized, t.auth != Unauthorized
		lines = append(lines, hProtocol.Balance{
			Balance: amount.StringFromInt64(t.balance), Limit: amount.StringFromInt64(t.limit),
			BuyingLiabilities: amount.StringFromInt64(t.buying), SellingLiabilities: amount.StringFromInt64(t.selling), Sponsor: t.sponsor,
			LastModifiedLedger: t.lastModified, IsAuthorized: &authorized, IsAuthorizedToMaintainLiabilities: &maintain,
			Asset: base.Asset{Type: typ, Code: k.asset.Code, Issuer: k.asset.Issuer},
		})
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].Asset.Code+lines[i].Issuer < lines[j].Asset.Code+lines[j].Issuer })
	// Horizon lists credit balances first and the native balance last.
	out.Balances = append(lines, hProtocol.Balance{Balance: amount.StringFromInt64(a.balance),
		BuyingLiabilities: amount.StringFromInt64(a.buying), SellingLiabilities: amount.StringFromInt64(a.selling), Asset: base.Asset{Type: "native"}})
	writeHAL(w, http.StatusOK, out)
}
