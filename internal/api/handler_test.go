package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The orchestrator is the Service the functions wire in.
var _ Service = (*transfer.Orchestrator)(nil)

// fakeService records its calls and answers with the configured functions.
type fakeService struct {
	mu        sync.Mutex
	transfers []transfer.Input
	views     [][2]string
	histories []historyCall
	ctxs      []context.Context

	transfer func(ctx context.Context, in transfer.Input) (transfer.Outcome, error)
	view     func(ctx context.Context, wallet, key string) (transfer.View, error)
	history  func(ctx context.Context, wallet string, limit int, cursor string) (transfer.HistoryPage, error)
	cancels  []cancelCall
	cancel   func(ctx context.Context, wallet, key string, by transfer.Canceller) (transfer.Cancellation, error)
}

// historyCall is one History call's arguments.
type historyCall struct {
	wallet string
	limit  int
	cursor string
}

func (f *fakeService) History(ctx context.Context, w transfer.Wallet, limit int, cursor string) (transfer.HistoryPage, error) {
	wallet := w.Address
	f.mu.Lock()
	f.histories = append(f.histories, historyCall{wallet, limit, cursor})
	f.ctxs = append(f.ctxs, ctx)
	fn := f.history
	f.mu.Unlock()
	if fn == nil {
		return transfer.HistoryPage{}, nil
	}
	return fn(ctx, wallet, limit, cursor)
}

func (f *fakeService) Transfer(ctx context.Context, in transfer.Input) (transfer.Outcome, error) {
	f.mu.Lock()
	f.transfers = append(f.transfers, in)
	f.ctxs = append(f.ctxs, ctx)
	fn := f.transfer
	f.mu.Unlock()
	if fn == nil {
		return transfer.Outcome{TransactionHash: strings.Repeat("ab", 32), Ledger: 42}, nil
	}
	return fn(ctx, in)
}

func (f *fakeService) View(ctx context.Context, w transfer.Wallet, key string) (transfer.View, error) {
	wallet := w.Address
	f.mu.Lock()
	f.views = append(f.views, [2]string{wallet, key})
	f.ctxs = append(f.ctxs, ctx)
	fn := f.view
	f.mu.Unlock()
	if fn == nil {
		return transfer.View{}, &transfer.NotFoundError{}
	}
	return fn(ctx, wallet, key)
}

func (f *fakeService) Cancel(ctx context.Context, w transfer.Wallet, key string, by transfer.Canceller) (transfer.Cancellation, error) {
	f.mu.Lock()
	f.cancels = append(f.cancels, cancelCall{w.Address, key, by})
	f.ctxs = append(f.ctxs, ctx)
	fn := f.cancel
	f.mu.Unlock()
	if fn == nil {
		return transfer.Cancellation{}, &transfer.NotFoundError{}
	}
	return fn(ctx, wallet, key, by)
}

// cancelCall is one Cancel call's arguments.
type cancelCall struct {
	wallet, key string
	by          transfer.Canceller
}

func (f *fakeService) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.transfers) + len(f.views) + len(f.histories) + len(f.cancels)
}

// syncBuffer is a log sink safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lines are the JSON log records written so far.
func (b *syncBuffer) lines(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", sc.Text())
		}
		out = append(out, m)
	}
	return out
}

var testRules = transfer.Rules{Assets: []string{"USDC", "EURC"}, Addresses: testAddresses{}}

type fixture struct {
	svc  *fakeService
	logs *syncBuffer
	h    http.Handler
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	f := &fixture{svc: &fakeService{}, logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	f.h = NewHandler(f.svc, StaticRules(testRules), append([]Option{WithLogger(logger), WithCancel(f.svc)}, opts...)...)
	return f
}

const goodKey = "order-0001.retry:~_A"

var wallet = randomAddress(versionAccount)

func goodBody(w string) string {
	return `{"operationType":"withdraw","walletAddress":"` + w + `","amount":"01000.50","asset":"usdc"}`
}

type req struct {
	method, path, body string
	header             map[string]string
}

func (f *fixture) do(r req) *httptest.ResponseRecorder {
	var body io.Reader = http.NoBody
	if r.body != "" {
		body = strings.NewReader(r.body)
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	for k, v := range r.header {
		hr.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, hr)
	return rec
}

func post(body string, header map[string]string) req {
	h := map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}
	for k, v := range header {
		if v == "" {
			delete(h, k)
		} else {
			h[k] = v
		}
	}
	return req{method: http.MethodPost, path: "/transfers", body: body, header: h}
}

// problem decodes and checks the invariants of every problem response.
func problem(t *testing.T, rec *httptest.ResponseRecorder, status int, code string) ProblemDetails {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status = %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Fatalf("Content-Type = %q", ct)
	}
	var pd ProblemDetails
	dec := json.NewDecoder(rec.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pd); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if pd.Code != code || pd.Status != status {
		t.Fatalf("problem code/status = %s/%d, want %s/%d (%+v)", pd.Code, pd.Status, code, status, pd)
	}
	wantType := ProblemTypeBase + strings.ReplaceAll(strings.ToLower(code), "_", "-")
	if pd.Type != wantType || pd.Title == "" || pd.Detail == "" || pd.Instance == "" || pd.Classification == "" {
		t.Fatalf("problem members incomplete: %+v", pd)
	}
	if pd.TraceID == "" || pd.TraceID != rec.Header().Get(TraceHeader) {
		t.Fatalf("traceId %q, header %q", pd.TraceID, rec.Header().Get(TraceHeader))
	}
	if pd.RetryAfterMs == 0 && rec.Header().Get("Retry-After") != "" {
		t.Fatalf("Retry-After without retryAfterMs")
	}
	return pd
}

func TestPostTransferFresh(t *testing.T) {
	f := newFixture(t)
	rec := f.do(post(goodBody(strings.ToLower(wallet)), map[string]string{AmznTraceHeader: "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c;Parent=53995c3f42cd8ad8;Sampled=1"}))
	if rec.Code != http.StatusOK {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if rec.Header().Get(ReplayedHeader) != "" {
		t.Fatal("fresh transfer must not carry Idempotent-Replayed")
	}
	if got := rec.Header().Get(TraceHeader); got != "1-5e9f0c65-1de4d666d4dd26aced652b6c" {
		t.Fatalf("X-Trace-Id %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"transactionHash": strings.Repeat("ab", 32), "ledger": float64(42), "replayed": false}
	if fmt.Sprint(body) != fmt.Sprint(want) {
		t.Fatalf("body %v, want %v", body, want)
	}
	if len(f.svc.transfers) != 1 {
		t.Fatalf("Transfer calls %d", len(f.svc.transfers))
	}
	in := f.svc.transfers[0]
	wantIn := transfer.Input{ClientKey: goodKey, TraceID: "1-5e9f0c65-1de4d666d4dd26aced652b6c", Request: transfer.Request{
		OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1000.5", Asset: "USDC", Stroops: 10_005_000_000}}
	if in != wantIn {
		t.Fatalf("Input %+v, want %+v", in, wantIn)
	}
}

func TestPostTransferReplay(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{TransactionHash: strings.Repeat("cd", 32), Ledger: 7, Replayed: true}, nil
	}
	rec := f.do(post(goodBody(wallet), nil))
	if rec.Code != http.StatusOK || rec.Header().Get(ReplayedHeader) != "true" {
		t.Fatalf("status %d, %s=%q", rec.Code, ReplayedHeader, rec.Header().Get(ReplayedHeader))
	}
	var got TransferResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if got != (TransferResponse{TransactionHash: strings.Repeat("cd", 32), Ledger: 7, Replayed: true}) {
		t.Fatalf("body %+v", got)
	}
}

// Every request that fails validation is answered without calling the Service.
func TestPostTransferValidation(t *testing.T) {
	big := `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","pad":"` + strings.Repeat("x", DefaultMaxBodyBytes) + `"}`
	tests := []struct {
		name   string
		req    req
		status int
		code   string
		detail string // a substring of the detail
	}{
		{"missing key", post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: ""}), 400, transfer.CodeKeyMissing, "required"},
		{"key too short", post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: "1234567"}), 400, transfer.CodeKeyInvalid, "8 to 255"},
		{"key too long", post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: strings.Repeat("k", 256)}), 400, transfer.CodeKeyInvalid, "8 to 255"},
		{"key bad chars", post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: "order 0001/x"}), 400, transfer.CodeKeyInvalid, "may only contain"},
		{"key non-ascii", post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: "ordér-0001"}), 400, transfer.CodeKeyInvalid, "may only contain"},
		{"malformed json", post(`{"operationType":"withdraw",`, nil), 400, transfer.CodeRequestInvalid, "ends in the middle"},
		{"syntax error", post(`{"operationType" "withdraw"}`, nil), 400, transfer.CodeRequestInvalid, "not valid JSON"},
		{"empty body", post("", nil), 400, transfer.CodeRequestInvalid, "empty"},
		{"unknown field", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","asset":"USDC","note":"x"}`, nil), 400, transfer.CodeRequestInvalid, `unknown field "note"`},
		{"field in wrong case", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","AMOUNT":"1","asset":"USDC"}`, nil), 400, transfer.CodeRequestInvalid, `did you mean "amount"`},
		{"duplicate field", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","amount":"1000","asset":"USDC"}`, nil), 400, transfer.CodeRequestInvalid, `"amount" appears more than once`},
		{"wrong type", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":1000,"asset":"USDC"}`, nil), 400, transfer.CodeRequestInvalid, "amount must be a string, not a JSON number"},
		{"array body", post(`[]`, nil), 400, transfer.CodeRequestInvalid, "must be a JSON object"},
		{"null body", post(`null`, nil), 400, transfer.CodeRequestInvalid, "must be a JSON object"},
		{"trailing garbage", post(goodBody(wallet)+`garbage`, nil), 400, transfer.CodeRequestInvalid, "unexpected data after the JSON object"},
		{"two objects", post(goodBody(wallet)+goodBody(wallet), nil), 400, transfer.CodeRequestInvalid, "exactly one JSON object"},
		{"missing field", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1"}`, nil), 400, transfer.CodeRequestInvalid, "asset is required"},
		{"bad address", post(goodBody("GABC"), nil), 422, transfer.CodeInvalidAddress, "not a valid"},
		{"muxed address, bad checksum", post(goodBody(flipMiddle(muxedOf(wallet, 7))), nil), 422, transfer.CodeInvalidAddress, "muxed"},
		{"muxed address, 68 characters", post(goodBody(muxedOf(wallet, 7)[:68]), nil), 422, transfer.CodeInvalidAddress, "muxed"},
		{"bad amount", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"-1","asset":"USDC"}`, nil), 422, transfer.CodeInvalidAmount, "positive"},
		{"bad asset", post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","asset":"BTC"}`, nil), 422, transfer.CodeInvalidAsset, "not supported"},
		{"bad operation", post(`{"operationType":"swap","walletAddress":"`+wallet+`","amount":"1","asset":"USDC"}`, nil), 422, transfer.CodeOperationNotSupp, "operationType"},
		{"too large", post(big, nil), 413, CodeRequestTooLarge, "16384 bytes"},
		{"no content type", post(goodBody(wallet), map[string]string{"Content-Type": ""}), 415, CodeUnsupportedMediaType, "application/json"},
		{"text content type", post(goodBody(wallet), map[string]string{"Content-Type": "text/plain"}), 415, CodeUnsupportedMediaType, "application/json"},
		{"other charset", post(goodBody(wallet), map[string]string{"Content-Type": "application/json; charset=latin1"}), 415, CodeUnsupportedMediaType, "application/json"},
		{"json-ish type", post(goodBody(wallet), map[string]string{"Content-Type": "application/jsonx"}), 415, CodeUnsupportedMediaType, "application/json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			pd := problem(t, f.do(tc.req), tc.status, tc.code)
			if pd.Classification != transfer.Terminal {
				t.Errorf("classification %q", pd.Classification)
			}
			if !strings.Contains(pd.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", pd.Detail, tc.detail)
			}
			if pd.Instance != "/transfers" {
				t.Errorf("instance %q", pd.Instance)
			}
			if n := f.svc.calls(); n != 0 {
				t.Errorf("Service called %d times on a validation error", n)
			}
		})
	}
}

func TestPostTransferAcceptsCharset(t *testing.T) {
	f := newFixture(t)
	for _, ct := range []string{"application/json; charset=utf-8", "Application/JSON;charset=UTF-8"} {
		if rec := f.do(post(goodBody(wallet), map[string]string{"Content-Type": ct})); rec.Code != http.StatusOK {
			t.Errorf("%q: status %d %s", ct, rec.Code, rec.Body)
		}
	}
}

// A chunked body (no Content-Length) over the limit is stopped by the MaxBytesReader.
func TestPostTransferTooLargeStreamed(t *testing.T) {
	f := newFixture(t, WithMaxBodyBytes(64))
	hr := httptest.NewRequest(http.MethodPost, "/transfers", io.MultiReader(strings.NewReader(goodBody(wallet)), strings.NewReader(strings.Repeat(" ", 100))))
	hr.ContentLength = -1
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(IdempotencyKeyHeader, goodKey)
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, hr)
	pd := problem(t, rec, 413, CodeRequestTooLarge)
	if !strings.Contains(pd.Detail, "64 bytes") || f.svc.calls() != 0 {
		t.Fatalf("detail %q, calls %d", pd.Detail, f.svc.calls())
	}
}

func TestPostTransferTwoKeyHeaders(t *testing.T) {
	f := newFixture(t)
	hr := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(goodBody(wallet)))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Add(IdempotencyKeyHeader, goodKey)
	hr.Header.Add(IdempotencyKeyHeader, "another-key-0002")
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, hr)
	problem(t, rec, 400, transfer.CodeKeyInvalid)
	if f.svc.calls() != 0 {
		t.Fatal("Service called")
	}
}

// The rules function is read per request (e.g. a new TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH).
func TestRulesReadPerRequest(t *testing.T) {
	svc := &fakeService{}
	var mu sync.Mutex
	max := 255
	h := NewHandler(svc, func() transfer.Rules {
		mu.Lock()
		defer mu.Unlock()
		r := testRules
		r.MaxKeyLength = max
		return r
	})
	f := &fixture{svc: svc, h: h}
	if rec := f.do(post(goodBody(wallet), nil)); rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	mu.Lock()
	max = 10
	mu.Unlock()
	pd := problem(t, f.do(post(goodBody(wallet), nil)), 400, transfer.CodeKeyInvalid)
	if !strings.Contains(pd.Detail, "8 to 10") {
		t.Fatalf("detail %q", pd.Detail)
	}
}

func TestRoutingProblems(t *testing.T) {
	viewPath := "/wallets/" + wallet + "/transfers/" + goodKey
	tests := []struct {
		name, method, path string
		status             int
		code, allow        string
	}{
		{"GET /transfers", http.MethodGet, "/transfers", 405, CodeMethodNotAllowed, "POST"},
		{"PUT /transfers", http.MethodPut, "/transfers", 405, CodeMethodNotAllowed, "POST"},
		{"PATCH view", http.MethodPatch, viewPath, 405, CodeMethodNotAllowed, "DELETE, GET, HEAD"},
		{"POST view", http.MethodPost, viewPath, 405, CodeMethodNotAllowed, "DELETE, GET, HEAD"},
		{"unknown path", http.MethodGet, "/nope", 404, CodeRouteNotFound, ""},
		{"root", http.MethodGet, "/", 404, CodeRouteNotFound, ""},
		{"trailing slash", http.MethodPost, "/transfers/", 404, CodeRouteNotFound, ""},
		{"POST history", http.MethodPost, "/wallets/" + wallet + "/transfers", 405, CodeMethodNotAllowed, "GET, HEAD"},
		{"DELETE history", http.MethodDelete, "/wallets/" + wallet + "/transfers", 405, CodeMethodNotAllowed, "GET, HEAD"},
		{"view prefix", http.MethodGet, "/wallets/" + wallet, 404, CodeRouteNotFound, ""},
		{"empty wallet's history", http.MethodGet, "/wallets//transfers", 404, CodeRouteNotFound, ""},
		{"view suffix", http.MethodGet, viewPath + "/more", 404, CodeRouteNotFound, ""},
		{"unclean path", http.MethodPost, "/x/../transfers", 404, CodeRouteNotFound, ""},
		{"double slash", http.MethodPost, "//transfers", 404, CodeRouteNotFound, ""},
		{"empty wallet", http.MethodGet, "/wallets//transfers/" + goodKey, 404, CodeRouteNotFound, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.do(req{method: tc.method, path: tc.path, body: goodBody(wallet),
				header: map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}})
			pd := problem(t, rec, tc.status, tc.code)
			if got := rec.Header().Get("Allow"); got != tc.allow {
				t.Errorf("Allow %q, want %q", got, tc.allow)
			}
			if pd.Instance != tc.path || pd.Classification != transfer.Terminal {
				t.Errorf("problem %+v", pd)
			}
			if f.svc.calls() != 0 {
				t.Errorf("Service called")
			}
		})
	}
}

// Each typed error of the domain maps to its status, classification and extension members.
func TestServiceProblemErrors(t *testing.T) {
	hash := strings.Repeat("ef", 32)
	tests := []struct {
		name       string
		err        error
		status     int
		code       string
		class      transfer.Classification
		retryMs    int64
		retryAfter string
		check      func(t *testing.T, pd ProblemDetails)
	}{
		{name: "conflict", err: &transfer.ConflictError{}, status: 409, code: transfer.CodeKeyConflict, class: transfer.Terminal},
		{name: "in doubt", err: &transfer.InDoubtError{FailingCode: transfer.CodeTimeout, RetryAfter: 1500 * time.Millisecond},
			status: 409, code: transfer.CodeInDoubt, class: transfer.Indeterminate, retryMs: 1500, retryAfter: "2",
			check: func(t *testing.T, pd ProblemDetails) {
				if pd.FailingCode != transfer.CodeTimeout {
					t.Errorf("failingCode %q", pd.FailingCode)
				}
			}},
		{name: "in progress", err: &transfer.InProgressError{RetryAfter: 250 * time.Millisecond},
			status: 409, code: transfer.CodeInProgress, class: transfer.Retryable, retryMs: 250, retryAfter: "1"},
		{name: "in progress sub-millisecond", err: &transfer.InProgressError{RetryAfter: 300 * time.Microsecond},
			status: 409, code: transfer.CodeInProgress, class: transfer.Retryable, retryMs: 1, retryAfter: "1"},
		{name: "circuit open", err: &transfer.UnavailableError{Code: transfer.CodeCircuitOpen, Detail: "The network circuit is open.",
			RetryAfter: 30 * time.Second, Err: errors.New("dial tcp 10.1.2.3:443: connection refused")},
			status: 503, code: transfer.CodeCircuitOpen, class: transfer.Retryable, retryMs: 30000, retryAfter: "30"},
		{name: "channels busy", err: &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, Detail: "Every channel account is busy.",
			RetryAfter: 7500 * time.Millisecond},
			status: 503, code: transfer.CodeChannelsBusy, class: transfer.Retryable, retryMs: 7500, retryAfter: "8"},
		{name: "store unavailable", err: &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable, Detail: "The store is unavailable."},
			status: 503, code: transfer.CodeStoreUnavailable, class: transfer.Retryable},
		{name: "rejected included", err: &transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "The transaction failed.",
			TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_underfunded"}},
			status: 422, code: transfer.CodeTransactionFailed, class: transfer.Terminal,
			check: func(t *testing.T, pd ProblemDetails) {
				if pd.TransactionHash != hash || strings.Join(pd.ResultCodes, ",") != "tx_failed,op_underfunded" {
					t.Errorf("rejection members %q %v", pd.TransactionHash, pd.ResultCodes)
				}
			}},
		{name: "rejected included, alone", err: &transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "The transaction failed.",
			TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_no_trust"}},
			status: 422, code: transfer.CodeTransactionFailed, class: transfer.Terminal,
			check: func(t *testing.T, pd ProblemDetails) {
				if pd.OperationIndex != nil {
					t.Errorf("a transfer rejected alone names operationIndex %d", *pd.OperationIndex)
				}
			}},
		{name: "rejected included, batched", err: &transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "The transaction failed.",
			TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_no_trust"}, OperationIndex: ptr(0)},
			status: 422, code: transfer.CodeTransactionFailed, class: transfer.Terminal,
			check: func(t *testing.T, pd ProblemDetails) {
				// 0 is the first operation, not "none": it must be on the wire.
				if pd.OperationIndex == nil || *pd.OperationIndex != 0 || pd.TransactionHash != hash {
					t.Errorf("a batched rejection: operationIndex %v, transactionHash %q; want 0 and %s", pd.OperationIndex, pd.TransactionHash, hash)
				}
			}},
		{name: "rejected with status", err: &transfer.RejectedError{Code: transfer.CodeOperationNotSupp, StoredStatus: 422, Detail: "Deposits are not supported."},
			status: 422, code: transfer.CodeOperationNotSupp, class: transfer.Terminal},
		{name: "validation from service", err: &transfer.ValidationError{Code: transfer.CodeInvalidAddress, Kind: transfer.KindUnacceptable, Detail: "no such account"},
			status: 422, code: transfer.CodeInvalidAddress, class: transfer.Terminal},
		{name: "not found", err: &transfer.NotFoundError{}, status: 404, code: transfer.CodeNotFound, class: transfer.Terminal},
		{name: "wrapped", err: fmt.Errorf("orchestrate: %w", &transfer.ConflictError{}), status: 409, code: transfer.CodeKeyConflict, class: transfer.Terminal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) { return transfer.Outcome{}, tc.err }
			rec := f.do(post(goodBody(wallet), nil))
			pd := problem(t, rec, tc.status, tc.code)
			if pd.Classification != tc.class || pd.RetryAfterMs != tc.retryMs {
				t.Errorf("classification %q retryAfterMs %d, want %q %d", pd.Classification, pd.RetryAfterMs, tc.class, tc.retryMs)
			}
			if got := rec.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			if tc.check != nil {
				tc.check(t, pd)
			}
			if strings.Contains(rec.Body.String(), "10.1.2.3") {
				t.Errorf("wrapped cause leaked: %s", rec.Body)
			}
		})
	}
}

func TestInternalErrorDoesNotLeak(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{}, errors.New("dynamodb: AccessDenied arn:aws:iam::123456789012:role/secret-role")
	}
	rec := f.do(post(goodBody(wallet), nil))
	pd := problem(t, rec, 500, transfer.CodeInternalError)
	if pd.Classification != transfer.Indeterminate {
		t.Errorf("classification %q", pd.Classification)
	}
	if strings.Contains(rec.Body.String(), "secret-role") || strings.Contains(rec.Body.String(), "AccessDenied") {
		t.Fatalf("internal error leaked: %s", rec.Body)
	}
	if !strings.Contains(f.logs.String(), "secret-role") {
		t.Fatalf("internal error not logged: %s", f.logs)
	}
	var errorLine bool
	for _, l := range f.logs.lines(t) {
		if l["msg"] == "internal error" && l["level"] == "ERROR" && l["traceId"] == pd.TraceID {
			errorLine = true
		}
	}
	if !errorLine {
		t.Fatalf("no error-level log with the trace ID: %s", f.logs)
	}
}

func TestPanicBecomes500(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		panic("boom: nil map in orchestrator")
	}
	rec := f.do(post(goodBody(wallet), nil))
	pd := problem(t, rec, 500, transfer.CodeInternalError)
	if strings.Contains(rec.Body.String(), "boom") {
		t.Fatalf("panic value leaked: %s", rec.Body)
	}
	var panicLine, requestLine bool
	for _, l := range f.logs.lines(t) {
		switch l["msg"] {
		case "panic while serving request":
			panicLine = l["level"] == "ERROR" && strings.Contains(fmt.Sprint(l["panic"]), "boom") && l["traceId"] == pd.TraceID
		case "request":
			requestLine = l["status"] == float64(500) && l["code"] == transfer.CodeInternalError
		}
	}
	if !panicLine || !requestLine {
		t.Fatalf("logs: %s", f.logs)
	}
}

// A panic after the handler set headers must not leak them into the 500.
func TestPanicClearsHeaders(t *testing.T) {
	f := newFixture(t)
	f.svc.view = func(context.Context, string, string) (transfer.View, error) { panic(errors.New("x")) }
	rec := f.do(req{method: http.MethodGet, path: "/wallets/" + wallet + "/transfers/" + goodKey})
	problem(t, rec, 500, transfer.CodeInternalError)
	if rec.Header().Get("Cache-Control") != "no-store" {
		t.Fatalf("headers %v", rec.Header())
	}
}

func TestTraceID(t *testing.T) {
	hexID := regexp.MustCompile(`^[0-9a-f]{32}$`)
	f := newFixture(t)
	for name, hdr := range map[string]string{
		"absent":    "",
		"no root":   "Self=1-67891233-12456789abcdef012345678;Sampled=1",
		"malformed": "Root=<script>",
	} {
		rec := f.do(post(`{`, map[string]string{AmznTraceHeader: hdr}))
		pd := problem(t, rec, 400, transfer.CodeRequestInvalid)
		if !hexID.MatchString(pd.TraceID) {
			t.Errorf("%s: trace ID %q is not a random 32-hex ID", name, pd.TraceID)
		}
	}
	a := f.do(post(`{`, nil)).Header().Get(TraceHeader)
	b := f.do(post(`{`, nil)).Header().Get(TraceHeader)
	if a == b {
		t.Errorf("random trace IDs repeat: %q", a)
	}
	// The API Gateway request ID is the fallback.
	hr := httptest.NewRequest(http.MethodGet, "/nope", nil)
	hr = hr.WithContext(withRequestID(hr.Context(), "LV7fzho-PHcEJPw="))
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, hr)
	if got := rec.Header().Get(TraceHeader); got != "LV7fzho-PHcEJPw=" {
		t.Errorf("request ID fallback: %q", got)
	}
}

func TestRequestLog(t *testing.T) {
	f := newFixture(t)
	marker := "MARKER-amount-9f8e7d"
	f.do(post(`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"1","asset":"USDC","note":"`+marker+`"}`, nil))
	f.do(post(goodBody(wallet), nil))
	if strings.Contains(f.logs.String(), marker) {
		t.Fatalf("request body logged: %s", f.logs)
	}
	lines := f.logs.lines(t)
	if len(lines) != 2 {
		t.Fatalf("want one line per request, got %d: %s", len(lines), f.logs)
	}
	for i, wantStatus := range []float64{400, 200} {
		l := lines[i]
		if l["msg"] != "request" || l["method"] != "POST" || l["route"] != "POST /transfers" || l["status"] != wantStatus ||
			l["traceId"] == "" || l["idempotencyKey"] != goodKey {
			t.Errorf("line %d: %v", i, l)
		}
		if _, ok := l["durationMs"].(float64); !ok {
			t.Errorf("line %d: durationMs %v", i, l["durationMs"])
		}
	}
	if lines[0]["code"] != transfer.CodeRequestInvalid || lines[1]["code"] != nil {
		t.Errorf("codes %v %v", lines[0]["code"], lines[1]["code"])
	}
}

func TestGetTransferView(t *testing.T) {
	hash := strings.Repeat("0a", 32)
	tests := []struct {
		name string
		view transfer.View
		want string
	}{
		{"success", transfer.View{Status: "success", TransactionHash: hash, Ledger: 99},
			`{"status":"success","transactionHash":"` + hash + `","ledger":99}`},
		{"pending in flight", transfer.View{Status: "pending"}, `{"status":"pending"}`},
		{"error with defaults", transfer.View{Status: "error", Problem: &transfer.Problem{Code: transfer.CodeTransactionExpired, Detail: "Expired."}},
			`{"status":"error","error":{"type":"tag:stellar-transfer-orchestrator,2026:problem:transaction-expired","title":"Transaction expired","status":422,` +
				`"detail":"Expired.","code":"TRANSACTION_EXPIRED","classification":"terminal"}}`},
		{"pending in doubt", transfer.View{Status: "pending", InDoubt: true}, `{"status":"pending","inDoubt":true}`},
		{"error", transfer.View{Status: "error", Problem: &transfer.Problem{Code: transfer.CodeTransactionFailed, Kind: transfer.KindRejected,
			Classification: transfer.Terminal, Detail: "The transaction failed.", TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_no_trust"}}},
			`{"status":"error","error":{"type":"tag:stellar-transfer-orchestrator,2026:problem:transaction-failed","title":"Transaction failed","status":422,` +
				`"detail":"The transaction failed.","code":"TRANSACTION_FAILED","classification":"terminal","transactionHash":"` + hash + `","resultCodes":["tx_failed","op_no_trust"]}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc.view = func(context.Context, string, string) (transfer.View, error) { return tc.view, nil }
			rec := f.do(req{method: http.MethodGet, path: "/wallets/" + strings.ToLower(wallet) + "/transfers/" + goodKey})
			if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			if got := strings.TrimSpace(rec.Body.String()); got != tc.want {
				t.Fatalf("body\n%s\nwant\n%s", got, tc.want)
			}
			if len(f.svc.views) != 1 || f.svc.views[0] != [2]string{wallet, goodKey} {
				t.Fatalf("View calls %v (want the canonical upper-case wallet)", f.svc.views)
			}
		})
	}
}

func TestGetTransferProblems(t *testing.T) {
	contract := randomAddress(versionContract)
	tests := []struct {
		name, wallet, key string
		err               error
		status            int
		code              string
		called            bool
	}{
		{"not found", wallet, goodKey, &transfer.NotFoundError{}, 404, transfer.CodeNotFound, true},
		{"contract wallet not found", contract, goodKey, &transfer.NotFoundError{}, 404, transfer.CodeNotFound, true},
		{"internal", wallet, goodKey, errors.New("secret internals"), 500, transfer.CodeInternalError, true},
		{"bad wallet", "GNOTANADDRESS", goodKey, nil, 422, transfer.CodeInvalidAddress, false},
		{"bad checksum", flipLast(wallet), goodKey, nil, 422, transfer.CodeInvalidAddress, false},
		{"muxed wallet, bad checksum", flipMiddle(muxedOf(wallet, 7)), goodKey, nil, 422, transfer.CodeInvalidAddress, false},
		{"short key", wallet, "short", nil, 400, transfer.CodeKeyInvalid, false},
		{"bad key chars", wallet, "order%200001", nil, 400, transfer.CodeKeyInvalid, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc.view = func(context.Context, string, string) (transfer.View, error) { return transfer.View{}, tc.err }
			path := "/wallets/" + tc.wallet + "/transfers/" + tc.key
			rec := f.do(req{method: http.MethodGet, path: path})
			pd := problem(t, rec, tc.status, tc.code)
			if pd.Instance != path || strings.Contains(rec.Body.String(), "secret internals") {
				t.Errorf("problem %+v", pd)
			}
			if called := f.svc.calls() > 0; called != tc.called {
				t.Errorf("Service called = %v, want %v", called, tc.called)
			}
		})
	}
}

func TestHeadView(t *testing.T) {
	f := newFixture(t)
	f.svc.view = func(context.Context, string, string) (transfer.View, error) {
		return transfer.View{Status: "pending"}, nil
	}
	rec := f.do(req{method: http.MethodHead, path: "/wallets/" + wallet + "/transfers/" + goodKey})
	if rec.Code != 200 {
		t.Fatalf("HEAD status %d", rec.Code)
	}
}

// The SEP-23 vectors keep the test strkey codec honest.
func TestTestAddresses(t *testing.T) {
	for s, want := range map[string]transfer.AddressKind{
		"GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ":                  transfer.AccountAddress,
		"CA3D5KRYM6CB7OWQ6TWYRR3Z4T7GNZLKERYNZGGA5SOAOPIFY6YQGAXE":                  transfer.ContractAddress,
		"MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVAAAAAAAAAAAAAJLK":     transfer.MuxedAddress,
		"GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGA":                  0,
		"G" + strings.Repeat("A", 55):                                               0,
		strings.ToLower("GA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJVSGZ"): 0,
	} {
		got, err := testAddresses{}.ParseAddress(s)
		if got != want || (want == 0) != (err != nil) {
			t.Errorf("%s: %v %v, want %v", s, got, err, want)
		}
	}
}

// flipLast changes an address's last character, which breaks its checksum.
// flipMiddle is s with its 31st character changed: a strkey whose checksum no longer holds.
func flipMiddle(s string) string {
	c := "A"
	if s[30] == 'A' {
		c = "B"
	}
	return s[:30] + c + s[31:]
}

func flipLast(s string) string {
	last := "A"
	if s[len(s)-1] == 'A' {
		last = "B"
	}
	return s[:len(s)-1] + last
}

// oddProblem is a ProblemError of no known kind that claims a non-error stored status.
type oddProblem struct{}

func (oddProblem) Error() string { return "odd" }
func (oddProblem) Problem() transfer.Problem {
	return transfer.Problem{Code: "ODD_THING", StoredStatus: 200, Detail: "odd"}
}

func TestProblemErrorWithBadStatus(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{}, oddProblem{}
	}
	pd := problem(t, f.do(post(goodBody(wallet), nil)), 500, "ODD_THING")
	if pd.Title != "Odd thing" || pd.Classification != transfer.Indeterminate {
		t.Fatalf("problem %+v", pd)
	}
}

// Concurrent requests share nothing mutable (run with -race).
func TestConcurrentRequests(t *testing.T) {
	f := newFixture(t)
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Go(func() {
			r := post(goodBody(wallet), nil)
			if i%2 == 1 {
				r = post(`{`, nil)
			}
			rec := f.do(r)
			if want := []int{200, 400}[i%2]; rec.Code != want {
				t.Errorf("request %d: status %d", i, rec.Code)
			}
		})
	}
	wg.Wait()
	if len(f.logs.lines(t)) != 32 {
		t.Fatalf("log lines %d", len(f.logs.lines(t)))
	}
}

func TestSecretShapedInputIsNeverEchoed(t *testing.T) {
	seed := randomAddress(versionSeed)
	var logs bytes.Buffer
	h := NewHandler(&fakeService{}, StaticRules(testRules), WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	for _, tc := range []struct{ method, path, key, body string }{
		{"POST", "/transfers", "order-0001", `{"` + seed + `":"x"}`},
		{"GET", "/wallets/" + seed + "/transfers/12345678", "", ""},
		{"GET", "/" + seed, "", ""},
		{"GET", "/" + strings.ToLower(seed), "", ""},
		{"POST", "/transfers", seed, `{"operationType":"withdraw"}`},
		{"POST", "/transfers", `"` + seed + `"`, goodBody(wallet)},
		{"POST", "/transfers", `"` + seed, goodBody(wallet)},
		{"POST", "/transfers", `"` + seed + `\x"`, goodBody(wallet)},
		{"GET", "/wallets/" + wallet + "/transfers/%22" + seed + "%22", "", ""},
		{"POST", "/transfers", "x" + seed + "0", goodBody(wallet)},
		{"GET", "/wallets/" + wallet + "/transfers/" + seed + "0", "", ""},
		{"POST", "/transfers", "order-0001", `{"operationType":"withdraw","walletAddress":"` + seed + `x","amount":"1","asset":"USDC"}`},
	} {
		req := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		req.Header.Set("Content-Type", "application/json")
		if tc.key != "" {
			req.Header.Set("Idempotency-Key", tc.key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code < 400 || rec.Code >= 500 {
			t.Errorf("%s %s: status %d, want a 4xx", tc.method, tc.path, rec.Code)
		}
		if body := rec.Body.String(); strings.Contains(strings.ToUpper(body), seed) {
			t.Errorf("%s %s: the answer echoes the seed: %s", tc.method, tc.path, body)
		}
	}
	if strings.Contains(strings.ToUpper(logs.String()), seed) {
		t.Errorf("the log holds the seed: %s", logs.String())
	}
	long := httptest.NewRequest("GET", "/"+strings.Repeat("x", 5000), nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, long)
	if rec.Body.Len() > 2000 {
		t.Errorf("a 5,000-character path came back in a %d-byte problem", rec.Body.Len())
	}
}

// replayedRejection is a stored rejection as the orchestrator replays it.
type replayedRejection struct{}

func (replayedRejection) Error() string { return "TRANSACTION_FAILED: replayed" }
func (replayedRejection) Problem() transfer.Problem {
	return transfer.Problem{Code: transfer.CodeTransactionFailed, Kind: transfer.KindRejected, Classification: transfer.Terminal, Replayed: true}
}

func TestReplayedRejectionCarriesTheReplayHeader(t *testing.T) {
	svc := &fakeService{transfer: func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{}, replayedRejection{}
	}}
	h := NewHandler(svc, StaticRules(testRules))
	req := httptest.NewRequest("POST", "/transfers", strings.NewReader(goodBody(wallet)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", goodKey)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != 422 || rec.Header().Get(ReplayedHeader) != "true" {
		t.Fatalf("status %d, %s = %q; want 422 and true", rec.Code, ReplayedHeader, rec.Header().Get(ReplayedHeader))
	}
}
