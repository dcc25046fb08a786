package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Service is what the handler needs from the domain; *transfer.Orchestrator is meant to provide it.
// Errors that implement transfer.ProblemError are rendered as their problem; any other error is a
// 500 INTERNAL_ERROR whose text is logged, never returned.
type Service interface {
	Transfer(ctx context.Context, in transfer.Input) (transfer.Outcome, error)
	// View returns the transfer stored under (wallet, clientKey); wallet is canonical (upper
	// case; transfer.Rules.ParseWallet). *transfer.NotFoundError when there is none.
	View(ctx context.Context, wallet transfer.Wallet, clientKey string) (transfer.View, error)
	// History lists wallet's transfers newest first (wallet canonical, limit 1 to
	// transfer.MaxHistoryLimit, cursor "" for the first page). *transfer.ValidationError
	// LIMIT_INVALID or CURSOR_INVALID for what the client sent wrong.
	History(ctx context.Context, wallet transfer.Wallet, limit int, cursor string) (transfer.HistoryPage, error)
}

// Enqueuer accepts a transfer for asynchronous processing (*transfer.Orchestrator.Enqueue with a
// Queue): transfer.Enqueued is a 202 (Accepted) or a replayed 200; its errors are Service's.
type Enqueuer interface {
	Enqueue(ctx context.Context, in transfer.Input) (transfer.Enqueued, error)
}

// CancelService cancels a queued asynchronous transfer (*transfer.Orchestrator.Cancel): wallet is
// canonical; the answer is the cancelled transfer (Replayed when an earlier DELETE cancelled it);
// errors are Service's, plus *transfer.NotCancellableError (409).
type CancelService interface {
	Cancel(ctx context.Context, wallet transfer.Wallet, clientKey string, by transfer.Canceller) (transfer.Cancellation, error)
}

// DefaultMaxBodyBytes bounds a request body (16 KiB); a transfer request is well under 1 KiB.
const DefaultMaxBodyBytes = 16 << 10

// Header names of the HTTP contract.
const (
	IdempotencyKeyHeader = "Idempotency-Key"
	// ReplayedHeader is "true" on a 200 that replays a stored outcome.
	ReplayedHeader = "Idempotent-Replayed"
	// AmznTraceHeader is X-Ray's trace header; its Root= part becomes the trace ID.
	AmznTraceHeader = "X-Amzn-Trace-Id"
	// PreferHeader carries the client's preferences (RFC 7240); "respond-async" asks for a 202.
	PreferHeader = "Prefer"
	// PreferenceAppliedHeader names the preferences honoured (RFC 7240 section 3).
	PreferenceAppliedHeader = "Preference-Applied"
	// RespondAsync is the preference of RFC 7240 section 4.1.
	RespondAsync = "respond-async"
)

// TransferResponse is the 200 body of POST /transfers.
type TransferResponse struct {
	TransactionHash string `json:"transactionHash"`
	// OperationIndex is the 0-based index of this transfer's operation in the transaction, present
	// only for a transfer paid with others in one transaction (transfer.OperationIndexOf).
	OperationIndex *int `json:"operationIndex,omitempty"`
	// Ledger is the sequence number of the ledger that included the transaction.
	Ledger   uint32 `json:"ledger"`
	Replayed bool   `json:"replayed"`
}

// ViewResponse is the 200 body of GET /wallets/{walletAddress}/transfers/{idempotencyKey}.
type ViewResponse struct {
	// Status is "pending" (queued, in flight or in doubt), "success", "error", "cancelled", or
	// "released" (outside the replay window only: an in-doubt transfer released, nothing moved).
	Status          string `json:"status"`
	TransactionHash string `json:"transactionHash,omitempty"`
	// OperationIndex is the 0-based index of this transfer's operation in the transaction, present
	// only for a transfer paid or rejected with others in one transaction (transfer.OperationIndexOf).
	OperationIndex *int   `json:"operationIndex,omitempty"`
	Ledger         uint32 `json:"ledger,omitempty"`
	// InDoubt is true while the outcome is unknown and awaits reconciliation.
	InDoubt bool `json:"inDoubt,omitempty"`
	// Error is the stored rejection (status "error"), without instance and traceId.
	Error *ProblemDetails `json:"error,omitempty"`
	// CancelledAt (status "cancelled": RFC 3339, UTC, milliseconds) and CancelledBy (the caller
	// identity that cancelled it: an IAM principal's ARN, or "anonymous" when the API
	// authenticates nobody; absent in a history item).
	CancelledAt string `json:"cancelledAt,omitempty"`
	CancelledBy string `json:"cancelledBy,omitempty"`
	// Memo is the transfer's memo as canonical ({"type","value"}), absent without one.
	Memo *transfer.Memo `json:"memo,omitempty"`
	// MuxedAccount names the muxed (M...) wallet a transfer paid: absent for a G... or C... one.
	MuxedAccount *MuxedAccount `json:"muxedAccount,omitempty"`
	// OutsideReplayWindow is true (else absent) when the key's replay window has ended or its
	// in-doubt item was released: this is the lasting record of its last settled transfer, and a
	// POST with the key now starts a new transfer (transfer.View.OutsideReplayWindow).
	OutsideReplayWindow bool `json:"outsideReplayWindow,omitempty"`
	// CreatedAt is when the transfer this answer describes was claimed (RFC 3339, UTC,
	// milliseconds): with outsideReplayWindow, an earlier transfer of the key.
	CreatedAt string `json:"createdAt,omitempty"`
}

// MuxedAccount is a muxed destination (SEP-23): the M... address as the request named it, the
// G... account the payment credited and the id, a decimal string (a uint64 is not exact in
// every client's JSON number).
type MuxedAccount struct {
	Address string `json:"address"`
	Account string `json:"account"`
	ID      string `json:"id"`
}

// HistoryResponse is the 200 body of GET /wallets/{walletAddress}/transfers: a page of the
// wallet's transfers, newest first, and the cursor of the next page (absent on the last).
type HistoryResponse struct {
	Items      []HistoryItem `json:"items"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

// HistoryItem is one transfer of a wallet's history: what GET .../transfers/{idempotencyKey}
// shows of it (status, hash, ledger, inDoubt, error) and what was asked. No envelope, no secret.
type HistoryItem struct {
	IdempotencyKey string `json:"idempotencyKey"`
	ViewResponse
	OperationType string `json:"operationType,omitempty"`
	// Amount is the canonical decimal string; Asset the configured asset code.
	Amount string `json:"amount,omitempty"`
	Asset  string `json:"asset,omitempty"`
	// CreatedAt (the key's claim) and UpdatedAt (the last write): RFC 3339, UTC, milliseconds.
	CreatedAt string `json:"createdAt,omitempty"`
	UpdatedAt string `json:"updatedAt,omitempty"`
}

// Query parameters of GET /wallets/{walletAddress}/transfers.
const (
	LimitParam  = "limit"
	CursorParam = "cursor"
)

// Option configures NewHandler.
type Option func(*handler)

// WithLogger sets the logger for the per-request line and for internal errors; the default
// discards.
func WithLogger(l *slog.Logger) Option {
	return func(h *handler) {
		if l != nil {
			h.log = l
		}
	}
}

// WithMaxBodyBytes bounds request bodies (413 REQUEST_TOO_LARGE above it); n <= 0 keeps
// DefaultMaxBodyBytes.
func WithMaxBodyBytes(n int64) Option {
	return func(h *handler) {
		if n > 0 {
			h.maxBody = n
		}
	}
}

// WithAsync lets POST /transfers honour Prefer: respond-async with e (README.md, "Asynchronous
// transfers"); without it the preference is ignored, as RFC 7240 section 2 allows, and the
// transfer runs synchronously.
func WithAsync(e Enqueuer) Option {
	return func(h *handler) { h.async = e }
}

// WithCancel serves DELETE /wallets/{walletAddress}/transfers/{idempotencyKey} with c (README.md,
// "Asynchronous transfers": Cancel); without it DELETE is 405, as any method a path does not take.
func WithCancel(c CancelService) Option {
	return func(h *handler) { h.cancel = c }
}

// StaticRules returns a rules function that always returns r.
func StaticRules(r transfer.Rules) func() transfer.Rules {
	return func() transfer.Rules { return r }
}

type handler struct {
	svc     Service
	rules   func() transfer.Rules
	log     *slog.Logger
	maxBody int64
	mux     *http.ServeMux
	async   Enqueuer
	cancel  CancelService
}

// NewHandler returns the API's handler. rules is called once per request, so settings such as
// TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH can change without a restart. The handler recovers from
// panics (500 INTERNAL_ERROR), sets X-Trace-Id and Cache-Control: no-store on every response and
// logs one line per request.
func NewHandler(svc Service, rules func() transfer.Rules, opts ...Option) http.Handler {
	h := &handler{
		svc:     svc,
		rules:   rules,
		log:     slog.New(slog.DiscardHandler),
		maxBody: DefaultMaxBodyBytes,
		mux:     http.NewServeMux(),
	}
	for _, o := range opts {
		o(h)
	}
	// A method-specific pattern beats the same path without a method, so the method-less ones
	// only see the wrong methods. ServeMux's own 404/405 replies are plain text; these are problems.
	h.mux.HandleFunc("POST /transfers", h.postTransfer)
	h.mux.HandleFunc("/transfers", h.methodNotAllowed("POST"))
	h.mux.HandleFunc("GET /wallets/{walletAddress}/transfers", h.listTransfers)
	h.mux.HandleFunc("/wallets/{walletAddress}/transfers", h.methodNotAllowed("GET, HEAD"))
	h.mux.HandleFunc("GET /wallets/{walletAddress}/transfers/{idempotencyKey}", h.getTransfer)
	transferMethods := "GET, HEAD"
	if h.cancel != nil {
		h.mux.HandleFunc("DELETE /wallets/{walletAddress}/transfers/{idempotencyKey}", h.deleteTransfer)
		transferMethods = "DELETE, GET, HEAD"
	}
	h.mux.HandleFunc("/wallets/{walletAddress}/transfers/{idempotencyKey}", h.methodNotAllowed(transferMethods))
	h.mux.HandleFunc("/", h.notFound)
	return h
}

// requestState is filled in while a request is served, for the log line and problems.
type requestState struct {
	traceID string
	route   string
	code    string
	key     string
}

type stateKey struct{}

func stateOf(ctx context.Context) *requestState {
	st, _ := ctx.Value(stateKey{}).(*requestState)
	return st
}

// statusWriter remembers the status written, for the log line and the panic handler.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	st := &requestState{traceID: traceID(r.Context(), r.Header.Get(AmznTraceHeader))}
	r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
	sw := &statusWriter{ResponseWriter: w}
	setCommonHeaders(sw.Header(), st.traceID)

	defer func() {
		if v := recover(); v != nil {
			h.log.ErrorContext(r.Context(), "panic while serving request",
				"panic", fmt.Sprint(v), "stack", string(debug.Stack()),
				"method", r.Method, "route", st.route, "traceId", st.traceID)
			if sw.status == 0 {
				clear(sw.Header())
				setCommonHeaders(sw.Header(), st.traceID)
				writeProblem(sw, r, internalProblem(r))
			}
		}
		h.logRequest(r, st, sw.status, time.Since(start))
	}()
	if !isCleanPath(r.URL.Path) {
		// ServeMux would redirect to the cleaned path with an HTML body; an API answers 404.
		h.notFound(sw, r)
		return
	}
	h.mux.ServeHTTP(sw, r)
}

// isCleanPath reports whether p is what ServeMux's path cleaning leaves unchanged: rooted, no
// empty, "." or ".." segments (a trailing slash is kept).
func isCleanPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if p[len(p)-1] == '/' && c != "/" {
		c += "/"
	}
	return c == p
}

func setCommonHeaders(h http.Header, traceID string) {
	h.Set(TraceHeader, traceID)
	h.Set("Cache-Control", "no-store")
}

func (h *handler) logRequest(r *http.Request, st *requestState, status int, d time.Duration) {
	if status == 0 {
		status = http.StatusOK
	}
	level := slog.LevelInfo
	switch {
	case status == http.StatusInternalServerError:
		level = slog.LevelError
	case status >= 500:
		level = slog.LevelWarn // a dependency is down (503); the domain has already said why
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", st.route),
		slog.Int("status", status),
		slog.Float64("durationMs", float64(d.Microseconds())/1000),
		slog.String("traceId", st.traceID),
	}
	if st.code != "" {
		attrs = append(attrs, slog.String("code", st.code))
	}
	if st.key != "" {
		attrs = append(attrs, slog.String("idempotencyKey", logging.Redact(st.key)))
	}
	h.log.LogAttrs(r.Context(), level, "request", attrs...)
}

// writeError renders err: its problem when it is a transfer.ProblemError, else a 500 whose cause
// is logged. A 5xx problem's wrapped cause (e.g. UnavailableError.Err) is logged at warn.
func (h *handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	pd, ok := problemFor(err, r)
	st := stateOf(r.Context())
	switch {
	case !ok:
		h.log.ErrorContext(r.Context(), "internal error", "err", err.Error(),
			"method", r.Method, "route", st.route, "traceId", st.traceID)
	case pd.Status >= 500:
		h.log.WarnContext(r.Context(), "dependency failure", "code", pd.Code, "err", err.Error(),
			"method", r.Method, "route", st.route, "traceId", st.traceID)
	}
	if p, isProblem := asProblem(err); isProblem && p.Replayed {
		w.Header().Set(ReplayedHeader, "true") // a stored rejection replayed, like a replayed success
	}
	writeProblem(w, r, pd)
}

// asProblem returns err's transfer.Problem when it has one.
func asProblem(err error) (transfer.Problem, bool) {
	var pe transfer.ProblemError
	if errors.As(err, &pe) {
		return pe.Problem(), true
	}
	return transfer.Problem{}, false
}

// postTransfer serves POST /transfers. Checks run in this order, and the Service is called only
// when all pass: Content-Type (415), Idempotency-Key (400), body size (413), JSON (400),
// canonical request (400/422).
func (h *handler) postTransfer(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	st.route = r.Pattern
	if !isJSONMediaType(r.Header.Get("Content-Type")) {
		writeProblem(w, r, httpProblem(r, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType,
			"Content-Type must be application/json (optionally with charset=utf-8)"))
		return
	}
	rules := h.rules()
	key, err := parseKeyHeader(rules, r.Header)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	st.key = key
	if r.ContentLength > h.maxBody {
		h.tooLarge(w, r)
		return
	}
	raw, err := decodeRequest(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			h.tooLarge(w, r)
			return
		}
		h.writeError(w, r, err)
		return
	}
	req, err := rules.Canonicalize(raw)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	in := transfer.Input{ClientKey: key, Request: req, TraceID: st.traceID}
	if h.async != nil && prefersAsync(r.Header) {
		h.enqueue(w, r, in)
		return
	}
	out, err := h.svc.Transfer(r.Context(), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if out.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	writeJSON(w, http.StatusOK, "application/json", TransferResponse{
		TransactionHash: out.TransactionHash, OperationIndex: out.OperationIndex, Ledger: out.Ledger, Replayed: out.Replayed})
}

// enqueue answers a POST that prefers respond-async: 202 with Location (the transfer's GET),
// Preference-Applied and the status body; a settled success replays 200 as a synchronous POST
// does; errors are the same problems.
func (h *handler) enqueue(w http.ResponseWriter, r *http.Request, in transfer.Input) {
	w.Header().Add("Vary", PreferHeader)
	res, err := h.async.Enqueue(r.Context(), in)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if !res.Accepted {
		w.Header().Set(ReplayedHeader, "true")
		writeJSON(w, http.StatusOK, "application/json", TransferResponse{
			TransactionHash: res.Outcome.TransactionHash, OperationIndex: res.Outcome.OperationIndex, Ledger: res.Outcome.Ledger, Replayed: true})
		return
	}
	w.Header().Set("Location", transferPath(in.Request.WalletAddress, in.ClientKey))
	w.Header().Set(PreferenceAppliedHeader, RespondAsync)
	writeJSON(w, http.StatusAccepted, "application/json", ViewResponse{Status: res.View.Status, InDoubt: res.View.InDoubt})
}

// transferPath is the GET route of (wallet, key): /wallets/{walletAddress}/transfers/{idempotencyKey},
// each segment path-escaped (a key's characters need none; the escape is a guard).
func transferPath(wallet, key string) string {
	return "/wallets/" + url.PathEscape(wallet) + "/transfers/" + url.PathEscape(key)
}

func (h *handler) tooLarge(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, httpProblem(r, http.StatusRequestEntityTooLarge, CodeRequestTooLarge,
		"the request body exceeds "+strconv.FormatInt(h.maxBody, 10)+" bytes"))
}

// parseKeyHeader validates the Idempotency-Key header and returns the key it names: the
// unquoted value of the draft's sf-string form or the bare key (headerKey), then checked by
// parseKey. More than one header is malformed (draft-ietf-httpapi-idempotency-key-header-07
// section 2.1: clients send exactly one).
func parseKeyHeader(rules transfer.Rules, hdr http.Header) (string, error) {
	if vs := hdr.Values(IdempotencyKeyHeader); len(vs) > 1 {
		return "", keyInvalid("send exactly one Idempotency-Key header")
	}
	key, err := headerKey(hdr.Get(IdempotencyKeyHeader))
	if err != nil {
		return "", err
	}
	return parseKey(rules, key)
}

// parseKey is rules.ParseKey, refusing also a key that holds a secret seed: such a key would be
// stored, logged and shown to operators, so it is refused before anything happens.
func parseKey(rules transfer.Rules, key string) (string, error) {
	if logging.ContainsSeed(key) {
		return "", &transfer.ValidationError{Code: transfer.CodeKeyInvalid, Kind: transfer.KindMalformed, Field: IdempotencyKeyHeader,
			Detail: "the Idempotency-Key holds a Stellar secret seed; never send secrets, and rotate that key"}
	}
	return rules.ParseKey(key)
}

// transferOf reads the wallet (canonical) and key of /wallets/{walletAddress}/transfers/{idempotencyKey}:
// 422 INVALID_ADDRESS for a wallet that is no Stellar address, 400 IDEMPOTENCY_KEY_INVALID for a
// key out of its syntax (both written to w; ok is then false).
func (h *handler) transferOf(w http.ResponseWriter, r *http.Request) (wallet transfer.Wallet, key string, ok bool) {
	st := stateOf(r.Context())
	st.route = r.Pattern
	rules := h.rules()
	wallet, err := rules.ParseWallet(r.PathValue("walletAddress"))
	if err != nil {
		h.writeError(w, r, err)
		return transfer.Wallet{}, "", false
	}
	// The path segment is the key's value, never its sf-string form: a structured field is a
	// header's syntax, and a URI that may name one key two ways is two cache keys.
	key, err = parseKey(rules, r.PathValue("idempotencyKey"))
	if err != nil {
		if strings.HasPrefix(r.PathValue("idempotencyKey"), `"`) {
			err = keyInvalid(`the path takes the key's value, without the quotes of the Idempotency-Key header's structured-field form: "order-0001" is .../transfers/order-0001`)
		}
		h.writeError(w, r, err)
		return transfer.Wallet{}, "", false
	}
	st.key = key
	return wallet, key, true
}

// getTransfer serves GET /wallets/{walletAddress}/transfers/{idempotencyKey}.
func (h *handler) getTransfer(w http.ResponseWriter, r *http.Request) {
	wallet, key, ok := h.transferOf(w, r)
	if !ok {
		return
	}
	v, err := h.svc.View(r.Context(), wallet, key)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, "application/json", viewResponse(v))
}

// deleteTransfer serves DELETE /wallets/{walletAddress}/transfers/{idempotencyKey}: the wallet
// and key as GET reads them, then the cancel, by the caller the API authenticated (callerOf).
// 200 with the cancelled transfer (Idempotent-Replayed: true when an earlier DELETE cancelled
// it), 404 TRANSFER_NOT_FOUND, 409 TRANSFER_NOT_CANCELLABLE with its state, 503.
func (h *handler) deleteTransfer(w http.ResponseWriter, r *http.Request) {
	wallet, key, ok := h.transferOf(w, r)
	if !ok {
		return
	}
	c, err := h.cancel.Cancel(r.Context(), wallet, key, callerOf(r.Context()))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	if c.Replayed {
		w.Header().Set(ReplayedHeader, "true")
	}
	writeJSON(w, http.StatusOK, "application/json", viewResponse(c.View))
}

// viewResponse is what a client sees of v: a stored rejection as a problem without instance and
// traceId.
func viewResponse(v transfer.View) ViewResponse {
	resp := ViewResponse{Status: v.Status, TransactionHash: v.TransactionHash, OperationIndex: v.OperationIndex, Ledger: v.Ledger, InDoubt: v.InDoubt,
		CancelledAt: rfc3339Millis(v.CancelledAt), CancelledBy: v.CancelledBy, OutsideReplayWindow: v.OutsideReplayWindow,
		CreatedAt: rfc3339Millis(v.CreatedAt)}
	if !v.Memo.IsZero() {
		m := v.Memo
		resp.Memo = &m
	}
	if v.Wallet.Muxed() {
		resp.MuxedAccount = &MuxedAccount{Address: v.Wallet.Address, Account: v.Wallet.Account, ID: strconv.FormatUint(v.Wallet.MuxedID, 10)}
	}
	if v.Problem != nil {
		p := *v.Problem
		if p.Kind == "" {
			p.Kind = transfer.KindRejected // a stored rejection (README.md, "Problem types": 422)
		}
		if p.Classification == "" {
			p.Classification = transfer.Terminal
		}
		pd := newProblem(p, statusOf(p), nil)
		resp.Error = &pd
	}
	return resp
}

// listTransfers serves GET /wallets/{walletAddress}/transfers?limit=&cursor=. Checks run in this
// order, and the Service is called only when all pass: the wallet (422 INVALID_ADDRESS), the
// query string (400 REQUEST_INVALID when it does not parse), limit (400 LIMIT_INVALID: absent
// is transfer.DefaultHistoryLimit, else one parameter of 1 to transfer.MaxHistoryLimit in
// decimal digits) and cursor (400 CURSOR_INVALID when sent empty or twice; what it holds is
// the store's to judge). Other parameters are ignored.
func (h *handler) listTransfers(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	st.route = r.Pattern
	wallet, err := h.rules().ParseWallet(r.PathValue("walletAddress"))
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		h.writeError(w, r, &transfer.ValidationError{Code: transfer.CodeRequestInvalid, Kind: transfer.KindMalformed,
			Field: "query", Detail: "the query string is malformed (a bad %-escape or a ';')"})
		return
	}
	limit := transfer.DefaultHistoryLimit
	if vs, ok := q[LimitParam]; ok {
		n, convErr := strconv.Atoi(vs[0])
		if len(vs) != 1 || !allDigits(vs[0]) || convErr != nil || n < 1 || n > transfer.MaxHistoryLimit {
			h.writeError(w, r, transfer.LimitInvalid())
			return
		}
		limit = n
	}
	cursor := ""
	if vs, ok := q[CursorParam]; ok {
		if len(vs) != 1 || vs[0] == "" {
			h.writeError(w, r, transfer.CursorInvalid())
			return
		}
		cursor = vs[0]
	}
	page, err := h.svc.History(r.Context(), wallet, limit, cursor)
	if err != nil {
		h.writeError(w, r, err)
		return
	}
	resp := HistoryResponse{Items: make([]HistoryItem, 0, len(page.Entries)), NextCursor: page.Next}
	for _, e := range page.Entries {
		resp.Items = append(resp.Items, HistoryItem{
			IdempotencyKey: e.ClientKey,
			ViewResponse:   viewResponse(e.View),
			OperationType:  string(e.Operation),
			Amount:         e.Amount,
			Asset:          e.Asset,
			CreatedAt:      rfc3339Millis(e.CreatedAt),
			UpdatedAt:      rfc3339Millis(e.UpdatedAt),
		})
	}
	writeJSON(w, http.StatusOK, "application/json", resp)
}

// allDigits reports whether s is one or more ASCII digits (strconv.Atoi also takes a sign).
func allDigits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return s != ""
}

// rfc3339Millis is t as RFC 3339 in UTC with milliseconds ("2026-03-01T12:00:00.000Z"), "" for
// the zero time. The store keeps times in epoch milliseconds.
func rfc3339Millis(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

func (h *handler) methodNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		stateOf(r.Context()).route = r.Pattern
		w.Header().Set("Allow", allow)
		writeProblem(w, r, httpProblem(r, http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"method "+r.Method+" is not allowed here; allowed: "+allow))
	}
}

func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	writeProblem(w, r, httpProblem(r, http.StatusNotFound, CodeRouteNotFound,
		"no route for "+r.Method+" "+instanceOf(r.URL.Path)+"; the routes are POST /transfers, GET /wallets/{walletAddress}/transfers and GET (or DELETE) /wallets/{walletAddress}/transfers/{idempotencyKey}"))
}
