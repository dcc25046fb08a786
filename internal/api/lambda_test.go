package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Fixtures in testdata: apigw-v2-request-no-authorizer.json and apigw-v2-request-iam.json are
// unmodified copies of aws-lambda-go v1.55.1's events/testdata; apigw-v2-request-post-transfer.json
// (from no-authorizer: POST /transfers, base64 body, query, cookie) and
// apigw-v2-request-get-transfer.json (from iam: the view route) are edited copies.

// fixtureWallet is the wallet in the edited fixtures.
const fixtureWallet = "GDXRGXFYU77KVAF37QVLG4D27EKEESYRVLXMAFSDBA4AZIIBQJ25UZRJ"

func loadEvent(t *testing.T, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

func decodeResponseProblem(t *testing.T, resp events.APIGatewayV2HTTPResponse, status int, code string) ProblemDetails {
	t.Helper()
	if resp.StatusCode != status || resp.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("status %d, headers %v, body %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	var pd ProblemDetails
	if err := json.Unmarshal([]byte(resp.Body), &pd); err != nil {
		t.Fatal(err)
	}
	if pd.Code != code || pd.TraceID != resp.Headers[TraceHeader] {
		t.Fatalf("problem %+v, headers %v", pd, resp.Headers)
	}
	return pd
}

// The shipped fixture (GET /) reaches the handler's 404 problem, with the X-Ray Root as trace ID.
func TestLambdaNoAuthorizerFixture(t *testing.T) {
	f := newFixture(t)
	resp, err := NewLambdaHandler(f.h)(context.Background(), loadEvent(t, "apigw-v2-request-no-authorizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	pd := decodeResponseProblem(t, resp, 404, CodeRouteNotFound)
	if pd.TraceID != "1-5e9f0c65-1de4d666d4dd26aced652b6c" || pd.Instance != "/" {
		t.Fatalf("problem %+v", pd)
	}
	if resp.IsBase64Encoded || resp.Headers["Cache-Control"] != "no-store" {
		t.Fatalf("response %+v", resp)
	}
}

// The iam fixture exercises the request mapping: query string with a repeated parameter, headers,
// cookies, a text body, the request ID in the context, Host.
func TestLambdaRequestMapping(t *testing.T) {
	var got *http.Request
	var gotBody string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		http.SetCookie(w, &http.Cookie{Name: "one", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "two", Value: "2"})
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte{0xff, 0x00, 0xfe})
	})
	ev := loadEvent(t, "apigw-v2-request-iam.json")
	resp, err := NewLambdaHandler(h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != http.MethodGet || got.URL.Path != "/my/path" || got.URL.RawQuery != "parameter1=value1&parameter1=value2&parameter2=value" {
		t.Fatalf("request line %s %s ? %s", got.Method, got.URL.Path, got.URL.RawQuery)
	}
	if q := got.URL.Query(); strings.Join(q["parameter1"], ",") != "value1,value2" || q.Get("parameter2") != "value" {
		t.Fatalf("query %v", q)
	}
	if got.Header.Get("Header1") != "value1" || got.Header.Get("Header2") != "value2" {
		t.Fatalf("headers %v", got.Header)
	}
	if c, err := got.Cookie("cookie1"); err != nil || c.Value != "" || got.Header.Get("Cookie") != "cookie1; cookie2" {
		t.Fatalf("cookies %q", got.Header.Get("Cookie"))
	}
	if gotBody != "{\r\n\t\"a\": 1\r\n}" || got.ContentLength != int64(len(gotBody)) {
		t.Fatalf("body %q (%d)", gotBody, got.ContentLength)
	}
	if requestIDFrom(got.Context()) != "id" || got.Host != "id.execute-api.us-east-1.amazonaws.com" || got.RemoteAddr != "IP" {
		t.Fatalf("request ID %q host %q remote %q", requestIDFrom(got.Context()), got.Host, got.RemoteAddr)
	}
	if got.ProtoMajor != 1 || got.ProtoMinor != 1 {
		t.Fatalf("proto %s", got.Proto)
	}

	// The response: multi-valued headers joined, Set-Cookie into Cookies, binary body in base64.
	if resp.StatusCode != http.StatusAccepted || resp.Headers["X-Multi"] != "a, b" {
		t.Fatalf("status %d headers %v", resp.StatusCode, resp.Headers)
	}
	if _, ok := resp.Headers["Set-Cookie"]; ok || strings.Join(resp.Cookies, "|") != "one=1|two=2" {
		t.Fatalf("cookies %v headers %v", resp.Cookies, resp.Headers)
	}
	if !resp.IsBase64Encoded || resp.Body != base64.StdEncoding.EncodeToString([]byte{0xff, 0x00, 0xfe}) {
		t.Fatalf("body %q base64=%v", resp.Body, resp.IsBase64Encoded)
	}
}

// The edited fixture: POST /transfers with a base64 body through the whole handler, with the
// invocation's deadline reaching the Service.
func TestLambdaPostTransfer(t *testing.T) {
	f := newFixture(t)
	var deadline time.Time
	var hasDeadline bool
	f.svc.transfer = func(ctx context.Context, in transfer.Input) (transfer.Outcome, error) {
		deadline, hasDeadline = ctx.Deadline()
		return transfer.Outcome{TransactionHash: strings.Repeat("9f", 32), Ledger: 1234, Replayed: true}, nil
	}
	want := time.Now().Add(29 * time.Second).Truncate(time.Millisecond)
	ctx, cancel := context.WithDeadline(context.Background(), want)
	defer cancel()
	resp, err := NewLambdaHandler(f.h)(ctx, loadEvent(t, "apigw-v2-request-post-transfer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.IsBase64Encoded || resp.Headers[ReplayedHeader] != "true" || resp.Headers["Content-Type"] != "application/json" {
		t.Fatalf("response %+v", resp)
	}
	if !hasDeadline || !deadline.Equal(want) {
		t.Fatalf("deadline %v (%v), want %v", deadline, hasDeadline, want)
	}
	var body TransferResponse
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatal(err)
	}
	if body != (TransferResponse{TransactionHash: strings.Repeat("9f", 32), Ledger: 1234, Replayed: true}) {
		t.Fatalf("body %+v", body)
	}
	in := f.svc.transfers[0]
	if in.ClientKey != "order-2020-04-21.0001" || in.TraceID != "1-5e9f0c65-1de4d666d4dd26aced652b6c" ||
		in.Request != (transfer.Request{OperationType: transfer.Withdraw, WalletAddress: fixtureWallet, Amount: "1000.5", Asset: "USDC", Stroops: 10_005_000_000}) {
		t.Fatalf("input %+v", in)
	}
}

// The edited fixture: the view route; without an X-Ray header the trace ID is the request ID.
func TestLambdaGetTransfer(t *testing.T) {
	f := newFixture(t)
	f.svc.view = func(context.Context, string, string) (transfer.View, error) {
		return transfer.View{Status: "pending", InDoubt: true}, nil
	}
	resp, err := NewLambdaHandler(f.h)(context.Background(), loadEvent(t, "apigw-v2-request-get-transfer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || strings.TrimSpace(resp.Body) != `{"status":"pending","inDoubt":true}` || resp.Headers[TraceHeader] != "JKJaXmPLvHcESHA=" {
		t.Fatalf("response %+v", resp)
	}
	if f.svc.views[0] != [2]string{fixtureWallet, "order-2020-04-21.0001"} {
		t.Fatalf("view call %v", f.svc.views)
	}

	// HEAD answers the same status and headers without a body.
	ev := loadEvent(t, "apigw-v2-request-get-transfer.json")
	ev.RequestContext.HTTP.Method = http.MethodHead
	resp, _ = NewLambdaHandler(f.h)(context.Background(), ev)
	if resp.StatusCode != 200 || resp.Body != "" || resp.Headers["Content-Length"] == "" {
		t.Fatalf("HEAD response %+v", resp)
	}
}

// Problems from the handler come through the adapter with their headers (Retry-After).
func TestLambdaProblemHeaders(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{}, &transfer.UnavailableError{Code: transfer.CodeCircuitOpen, Detail: "open", RetryAfter: 2500 * time.Millisecond}
	}
	resp, _ := NewLambdaHandler(f.h)(context.Background(), loadEvent(t, "apigw-v2-request-post-transfer.json"))
	pd := decodeResponseProblem(t, resp, 503, transfer.CodeCircuitOpen)
	if pd.RetryAfterMs != 2500 || resp.Headers["Retry-After"] != "3" {
		t.Fatalf("retry %d %q", pd.RetryAfterMs, resp.Headers["Retry-After"])
	}
}

func TestLambdaBadEvent(t *testing.T) {
	f := newFixture(t)
	ev := loadEvent(t, "apigw-v2-request-post-transfer.json")
	ev.Body = "not base64!"
	resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	pd := decodeResponseProblem(t, resp, 400, transfer.CodeRequestInvalid)
	if pd.Instance != "/transfers" || !strings.Contains(pd.Detail, "base64") || pd.TraceID != "1-5e9f0c65-1de4d666d4dd26aced652b6c" {
		t.Fatalf("problem %+v", pd)
	}
	if f.svc.calls() != 0 {
		t.Fatal("Service called")
	}

	// "//host/x" is a path, never a host to talk to.
	ev = loadEvent(t, "apigw-v2-request-no-authorizer.json")
	ev.RawPath = "//evil.example/transfers"
	resp, _ = NewLambdaHandler(f.h)(context.Background(), ev)
	if pd := decodeResponseProblem(t, resp, 404, CodeRouteNotFound); pd.Instance != "//evil.example/transfers" {
		t.Fatalf("instance %q", pd.Instance)
	}
}
