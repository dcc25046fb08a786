package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// GET /wallets/{walletAddress}/transfers: the query's checks, each refusal before the Service is
// called, and the body's shape.

func TestHistoryQuery(t *testing.T) {
	base := "/wallets/" + strings.ToLower(wallet) + "/transfers"
	ok := []struct {
		query  string
		limit  int
		cursor string
	}{
		{"", transfer.DefaultHistoryLimit, ""},
		{"?limit=1", 1, ""},
		{"?limit=100", 100, ""},
		{"?limit=007", 7, ""},
		{"?cursor=eyJwayI6IngifQ", transfer.DefaultHistoryLimit, "eyJwayI6IngifQ"},
		{"?limit=5&cursor=abc&other=ignored", 5, "abc"},
	}
	for _, tc := range ok {
		f := newFixture(t)
		rec := f.do(req{method: http.MethodGet, path: base + tc.query})
		if rec.Code != 200 {
			t.Fatalf("%s: status %d %s", tc.query, rec.Code, rec.Body)
		}
		want := historyCall{wallet: wallet, limit: tc.limit, cursor: tc.cursor}
		if len(f.svc.histories) != 1 || f.svc.histories[0] != want {
			t.Errorf("%s: History calls %+v, want %+v (the canonical upper-case wallet)", tc.query, f.svc.histories, want)
		}
	}
	refused := []struct {
		path, code string
		status     int
	}{
		{base + "?limit=0", transfer.CodeLimitInvalid, 400},
		{base + "?limit=101", transfer.CodeLimitInvalid, 400},
		{base + "?limit=-1", transfer.CodeLimitInvalid, 400},
		{base + "?limit=+5", transfer.CodeLimitInvalid, 400},
		{base + "?limit=1.0", transfer.CodeLimitInvalid, 400},
		{base + "?limit=", transfer.CodeLimitInvalid, 400},
		{base + "?limit=ten", transfer.CodeLimitInvalid, 400},
		{base + "?limit=99999999999999999999", transfer.CodeLimitInvalid, 400},
		{base + "?limit=1&limit=2", transfer.CodeLimitInvalid, 400},
		{base + "?cursor=", transfer.CodeCursorInvalid, 400},
		{base + "?cursor=a&cursor=b", transfer.CodeCursorInvalid, 400},
		{base + "?limit=%zz", transfer.CodeRequestInvalid, 400},
		{base + "?limit=1;cursor=x", transfer.CodeRequestInvalid, 400},
		{"/wallets/GNOTANADDRESS/transfers", transfer.CodeInvalidAddress, 422},
		{"/wallets/" + flipLast(wallet) + "/transfers?limit=0", transfer.CodeInvalidAddress, 422},
		{"/wallets/" + flipMiddle(muxedOf(wallet, 7)) + "/transfers", transfer.CodeInvalidAddress, 422},
	}
	for _, tc := range refused {
		f := newFixture(t)
		pd := problem(t, f.do(req{method: http.MethodGet, path: tc.path}), tc.status, tc.code)
		if pd.Classification != transfer.Terminal {
			t.Errorf("%s: classification %s", tc.path, pd.Classification)
		}
		if f.svc.calls() != 0 {
			t.Errorf("%s: the Service was called", tc.path)
		}
	}
}

func TestHistoryBody(t *testing.T) {
	hash := strings.Repeat("0a", 32)
	at := time.Date(2026, 3, 1, 12, 0, 0, 123_000_000, time.FixedZone("CET", 3600))
	f := newFixture(t)
	f.svc.history = func(context.Context, string, int, string) (transfer.HistoryPage, error) {
		return transfer.HistoryPage{Next: "bmV4dA", Entries: []transfer.HistoryEntry{
			{ClientKey: "order-0002", View: transfer.View{Status: "success", TransactionHash: hash, Ledger: 99},
				Operation: transfer.Withdraw, Amount: "12.5", Asset: "USDC", CreatedAt: at, UpdatedAt: at.Add(4 * time.Second)},
			{ClientKey: "order-0001", View: transfer.View{Status: "pending", InDoubt: true},
				Operation: transfer.Deposit, Amount: "1", Asset: "USDC", CreatedAt: at.Add(-time.Hour), UpdatedAt: at},
		}}, nil
	}
	rec := f.do(req{method: http.MethodGet, path: "/wallets/" + wallet + "/transfers"})
	want := `{"items":[` +
		`{"idempotencyKey":"order-0002","status":"success","transactionHash":"` + hash + `","ledger":99,"operationType":"withdraw","amount":"12.5","asset":"USDC","createdAt":"2026-03-01T11:00:00.123Z","updatedAt":"2026-03-01T11:00:04.123Z"},` +
		`{"idempotencyKey":"order-0001","status":"pending","inDoubt":true,"operationType":"deposit","amount":"1","asset":"USDC","createdAt":"2026-03-01T10:00:00.123Z","updatedAt":"2026-03-01T11:00:00.123Z"}` +
		`],"nextCursor":"bmV4dA"}`
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" || strings.TrimSpace(rec.Body.String()) != want {
		t.Fatalf("status %d %s\nbody %s\nwant %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body, want)
	}

	// A wallet with nothing: an empty list, not null, and no cursor.
	f = newFixture(t)
	rec = f.do(req{method: http.MethodGet, path: "/wallets/" + wallet + "/transfers"})
	if got := strings.TrimSpace(rec.Body.String()); rec.Code != 200 || got != `{"items":[]}` {
		t.Fatalf("empty: %d %s", rec.Code, got)
	}
	var body map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["items"] == nil {
		t.Fatalf("empty body %v %v", body, err)
	}

	// HEAD is served as GET (net/http drops the body).
	rec = f.do(req{method: http.MethodHead, path: "/wallets/" + wallet + "/transfers"})
	if rec.Code != 200 {
		t.Fatalf("HEAD: %d", rec.Code)
	}
}

// Through the API Gateway adapter the query string reaches the handler (rawQueryString).
func TestLambdaHistory(t *testing.T) {
	f := newFixture(t)
	ev := loadEvent(t, "apigw-v2-request-get-transfer.json")
	ev.RawPath = "/wallets/" + fixtureWallet + "/transfers"
	ev.RequestContext.HTTP.Path = ev.RawPath
	ev.RawQueryString = "limit=3&cursor=YWJj"
	ev.PathParameters = map[string]string{"walletAddress": fixtureWallet}
	ev.RouteKey = "GET /wallets/{walletAddress}/transfers"
	resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || strings.TrimSpace(resp.Body) != `{"items":[]}` {
		t.Fatalf("response %+v", resp)
	}
	if want := (historyCall{wallet: fixtureWallet, limit: 3, cursor: "YWJj"}); len(f.svc.histories) != 1 || f.svc.histories[0] != want {
		t.Fatalf("History calls %+v, want %+v", f.svc.histories, want)
	}
}
