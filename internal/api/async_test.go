package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The orchestrator is the Enqueuer the API function wires in.
var _ Enqueuer = (*transfer.Orchestrator)(nil)

type fakeEnqueuer struct {
	mu    sync.Mutex
	calls []transfer.Input
	fn    func(in transfer.Input) (transfer.Enqueued, error)
}

func (e *fakeEnqueuer) Enqueue(_ context.Context, in transfer.Input) (transfer.Enqueued, error) {
	e.mu.Lock()
	e.calls = append(e.calls, in)
	e.mu.Unlock()
	if e.fn == nil {
		return transfer.Enqueued{Accepted: true, View: transfer.View{Status: "pending"}}, nil
	}
	return e.fn(in)
}

func TestPreferRespondAsyncAccepted(t *testing.T) {
	enq := &fakeEnqueuer{}
	f := newFixture(t, WithAsync(enq))
	rec := f.do(post(goodBody(strings.ToLower(wallet)), map[string]string{PreferHeader: "wait=10, Respond-Async"}))
	if rec.Code != http.StatusAccepted {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if got, want := rec.Header().Get("Location"), "/wallets/"+wallet+"/transfers/"+goodKey; got != want {
		t.Fatalf("Location = %q, want %q (the canonical wallet)", got, want)
	}
	if got := rec.Header().Get(PreferenceAppliedHeader); got != RespondAsync {
		t.Fatalf("Preference-Applied = %q", got)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body) != 1 || body["status"] != "pending" {
		t.Fatalf("body = %s (%v), want exactly {\"status\":\"pending\"}", rec.Body, err)
	}
	if len(enq.calls) != 1 || f.svc.calls() != 0 {
		t.Fatalf("enqueued %d, synchronous calls %d: want 1 and 0", len(enq.calls), f.svc.calls())
	}
	if in := enq.calls[0]; in.ClientKey != goodKey || in.Request.Amount != "1000.5" || in.Request.WalletAddress != wallet {
		t.Fatalf("enqueued %+v: want the canonical request", in)
	}
}

func TestPreferRespondAsyncInDoubtRepeat(t *testing.T) {
	enq := &fakeEnqueuer{fn: func(transfer.Input) (transfer.Enqueued, error) {
		return transfer.Enqueued{Accepted: true, View: transfer.View{Status: "pending", InDoubt: true}}, nil
	}}
	f := newFixture(t, WithAsync(enq))
	rec := f.do(post(goodBody(wallet), map[string]string{PreferHeader: "respond-async"}))
	if rec.Code != http.StatusAccepted || !strings.Contains(rec.Body.String(), `"inDoubt":true`) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
}

func TestPreferRespondAsyncReplaysSettled(t *testing.T) {
	hash := strings.Repeat("cd", 32)
	enq := &fakeEnqueuer{fn: func(transfer.Input) (transfer.Enqueued, error) {
		return transfer.Enqueued{Outcome: transfer.Outcome{TransactionHash: hash, Ledger: 9, Replayed: true}}, nil
	}}
	f := newFixture(t, WithAsync(enq))
	rec := f.do(post(goodBody(wallet), map[string]string{PreferHeader: "respond-async"}))
	if rec.Code != http.StatusOK || rec.Header().Get(ReplayedHeader) != "true" || rec.Header().Get(PreferenceAppliedHeader) != "" {
		t.Fatalf("status %d, headers %v: %s", rec.Code, rec.Header(), rec.Body)
	}
	var got TransferResponse
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil || got != (TransferResponse{TransactionHash: hash, Ledger: 9, Replayed: true}) {
		t.Fatalf("body = %+v, %v", got, err)
	}
}

func TestPreferRespondAsyncErrors(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{&transfer.ConflictError{}, http.StatusConflict, transfer.CodeKeyConflict},
		{&transfer.UnavailableError{Code: transfer.CodeStoreUnavailable, Detail: "x"}, http.StatusServiceUnavailable, transfer.CodeStoreUnavailable},
	} {
		enq := &fakeEnqueuer{fn: func(transfer.Input) (transfer.Enqueued, error) { return transfer.Enqueued{}, tc.err }}
		f := newFixture(t, WithAsync(enq))
		rec := f.do(post(goodBody(wallet), map[string]string{PreferHeader: "respond-async"}))
		problem(t, rec, tc.status, tc.code)
		if rec.Header().Get("Location") != "" || rec.Header().Get(PreferenceAppliedHeader) != "" {
			t.Fatalf("%s: an error carries Location or Preference-Applied: %v", tc.code, rec.Header())
		}
	}
}

// Bad input is refused before anything is enqueued, with the synchronous answers.
func TestPreferRespondAsyncBadInputStoresNothing(t *testing.T) {
	enq := &fakeEnqueuer{}
	f := newFixture(t, WithAsync(enq))
	async := map[string]string{PreferHeader: "respond-async"}
	bad := func(body string, h map[string]string, status int, code string) {
		t.Helper()
		for k, v := range async {
			if _, set := h[k]; !set {
				h[k] = v
			}
		}
		problem(t, f.do(post(body, h)), status, code)
	}
	bad(goodBody(wallet), map[string]string{IdempotencyKeyHeader: ""}, 400, transfer.CodeKeyMissing)
	bad(goodBody(wallet), map[string]string{IdempotencyKeyHeader: "short"}, 400, transfer.CodeKeyInvalid)
	bad(`{"operationType":"withdraw"}`, map[string]string{}, 400, transfer.CodeRequestInvalid)
	bad(strings.Replace(goodBody(wallet), "01000.50", "-1", 1), map[string]string{}, 422, transfer.CodeInvalidAmount)
	bad(strings.Replace(goodBody(wallet), "usdc", "XLM", 1), map[string]string{}, 422, transfer.CodeInvalidAsset)
	bad(goodBody("GABC"), map[string]string{}, 422, transfer.CodeInvalidAddress)
	if len(enq.calls) != 0 || f.svc.calls() != 0 {
		t.Fatalf("bad input reached the service: %d enqueued, %d synchronous", len(enq.calls), f.svc.calls())
	}
}

// Without the preference, or without WithAsync, nothing changes: the transfer runs synchronously.
func TestPreferAbsentOrUnsupportedIsSynchronous(t *testing.T) {
	enq := &fakeEnqueuer{}
	for _, tc := range []struct {
		name   string
		opts   []Option
		prefer string
	}{
		{"no header", []Option{WithAsync(enq)}, ""},
		{"another preference", []Option{WithAsync(enq)}, "return=minimal, wait=5"},
		{"quoted, not a preference", []Option{WithAsync(enq)}, `foo="a, respond-async"`},
		{"near miss", []Option{WithAsync(enq)}, "respond-asynchronously"},
		{"no enqueuer", nil, "respond-async"},
	} {
		f := newFixture(t, tc.opts...)
		h := map[string]string{}
		if tc.prefer != "" {
			h[PreferHeader] = tc.prefer
		}
		rec := f.do(post(goodBody(wallet), h))
		if rec.Code != http.StatusOK || rec.Header().Get(PreferenceAppliedHeader) != "" || f.svc.calls() != 1 {
			t.Fatalf("%s: status %d, headers %v, synchronous calls %d", tc.name, rec.Code, rec.Header(), f.svc.calls())
		}
	}
	if len(enq.calls) != 0 {
		t.Fatalf("%d enqueued without respond-async", len(enq.calls))
	}
}

func TestPrefersAsync(t *testing.T) {
	for v, want := range map[string]bool{
		"respond-async":                             true,
		" RESPOND-ASYNC ":                           true,
		"respond-async; foo=bar":                    true,
		"wait=10,respond-async":                     true,
		`handling=lenient, x="\"q,", respond-async`: true,
		`x="respond-async"`:                         false,
		`x="a\", respond-async"`:                    false,
		"":                                          false,
		"respond-asyncx":                            false,
	} {
		h := http.Header{}
		h.Set(PreferHeader, v)
		if got := prefersAsync(h); got != want {
			t.Errorf("prefersAsync(%q) = %v, want %v", v, got, want)
		}
	}
	h := http.Header{}
	h.Add(PreferHeader, "wait=1")
	h.Add(PreferHeader, "respond-async")
	if !prefersAsync(h) {
		t.Error("respond-async in a second Prefer header was missed")
	}
}

// The 202 (and the in-doubt 202) conform to openapi.yaml, which documents the Prefer header.
func TestOpenAPIAsyncAnswers(t *testing.T) {
	_, v := loadOpenAPI(t)
	for _, view := range []transfer.View{{Status: "pending"}, {Status: "pending", InDoubt: true}} {
		enq := &fakeEnqueuer{fn: func(transfer.Input) (transfer.Enqueued, error) {
			return transfer.Enqueued{Accepted: true, View: view}, nil
		}}
		f := newFixture(t, WithAsync(enq))
		r := post(goodBody(wallet), map[string]string{PreferHeader: "respond-async"})
		rec := f.do(r)
		if rec.Code != http.StatusAccepted {
			t.Fatalf("status %d", rec.Code)
		}
		hr := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
		for k, val := range r.header {
			hr.Header.Set(k, val)
		}
		if ok, errs := v.ValidateHttpResponse(hr, rec.Result()); !ok {
			for _, e := range errs {
				t.Errorf("202 %+v does not conform: %s: %s", view, e.Message, e.Reason)
			}
		}
	}
}
