package wiring_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/api"
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// The doors' fuzz targets: the HTTP handler and the API Gateway adapter, as
// deployed (wiring.Build: the real address rules, orchestrator, DynamoDB store and Stellar
// ledger), on the local stack's minidyn and network. Whatever a client sends: never a 5xx (nothing here
// is down) and never a panic; every 4xx is application/problem+json with a code; and no part of
// a secret seed in the input comes back in the answer, the log, a stored item or the alert that
// item would raise.

// doorWallet is the funded wallet the corpus pays: the account of the raw seed 0x07 * 32.
var doorWallet = func() string {
	kp, err := keypair.FromRawSeed([32]byte{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7})
	if err != nil {
		panic(err)
	}
	return kp.Address()
}()

// itemRecorder is a dynamo.Client that keeps every item written through it.
type itemRecorder struct {
	dynamo.Client
	mu  sync.Mutex
	raw []*dynamodb.PutItemInput
}

func (r *itemRecorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.mu.Lock()
	r.raw = append(r.raw, in)
	r.mu.Unlock()
	return r.Client.PutItem(ctx, in, optFns...)
}

// written returns what was written since the last call: each item decoded, and the alert it
// would raise, as text.
func (r *itemRecorder) written(t *testing.T) string {
	r.mu.Lock()
	raw := r.raw
	r.raw = nil
	r.mu.Unlock()
	var b strings.Builder
	for _, in := range raw {
		if !strings.HasPrefix(pkOf(in), "transfer:") {
			continue
		}
		rec, err := dynamo.DecodeItem(in.Item)
		if err != nil {
			t.Fatalf("an item written does not decode: %v", err)
		}
		j, _ := json.Marshal(rec)
		d, _ := json.Marshal(alert.DetailsOf(rec))
		b.Write(j)
		b.Write(d)
	}
	return b.String()
}

func pkOf(in *dynamodb.PutItemInput) string {
	if v, ok := in.Item[dynamo.AttrPK].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// syncBuffer is a log sink safe for concurrent use that hands out what was written since the
// last call.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) take() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	return s
}

// doorRig is the deployed service over the local stack (devstack.Start: minidyn and the local
// network, on a virtual clock). handler builds the service anew (wiring.Build makes no network
// call) from the stack's configuration and keys, on the same table and network: a fresh circuit
// breaker per input, so one input's failures cannot open it for the next.
type doorRig struct {
	cfg   config.Config
	db    *itemRecorder
	keys  signing.KeySource
	clock *vclock.Clock
	logs  *syncBuffer
}

func newDoorRig(tb testing.TB) *doorRig {
	tb.Helper()
	r := &doorRig{clock: vclock.New(time.Unix(1_900_000_000, 0)), logs: &syncBuffer{}}
	st, err := devstack.Start(context.Background(), devstack.Options{
		Clock: r.clock, APIOnly: true, DemoWallets: 1,
		Getenv: func(k string) string { return map[string]string{"CHANNEL_COUNT": "0"}[k] },
		WrapDynamo: func(c *dynamodb.Client) dynamo.Client {
			r.db = &itemRecorder{Client: c}
			return r.db
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	// The corpus pays doorWallet, a fixed account: funded here with a USDC trustline.
	usdc := stellarsim.Asset{Code: st.Info.Assets[0].Code, Issuer: st.Info.Assets[0].Issuer}
	if err := st.Network.CreateAccount(doorWallet, 1e11); err != nil {
		tb.Fatal(err)
	}
	if err := st.Network.AddTrustline(doorWallet, usdc, 0); err != nil {
		tb.Fatal(err)
	}
	r.cfg, r.keys = st.Config, st.Keys
	return r
}

func (r *doorRig) handler(tb testing.TB) http.Handler {
	svc, err := wiring.Build(wiring.Deps{Config: r.cfg, Getenv: func(string) string { return "" }, Dynamo: r.db,
		Keys: r.keys, Clock: r.clock, Logger: logging.New(r.logs, slog.LevelDebug)})
	if err != nil {
		tb.Fatal(err)
	}
	return svc.Handler
}

// seedsIn returns every secret seed inside s, upper case.
func seedsIn(s string) []string {
	var out []string
	for i := 0; i+56 <= len(s); i++ {
		if (s[i] == 'S' || s[i] == 's') && logging.ContainsSeed(s[i:i+56]) {
			out = append(out, strings.ToUpper(s[i:i+56]))
		}
	}
	return out
}

// leaks reports whether out holds 16 or more consecutive characters of seed, in any case, as
// written or %-decoded (leniently: what a person reading it would see). A run that the input also
// carries where it is not part of a whole seed (say a path holding 32 characters of a seed sent in
// another field) is the client's own text, not a secret: echoing it is not a leak. plain is the
// input with every whole seed removed, upper-cased (see plainInput).
func leaks(out, seed, plain string) bool {
	texts := []string{strings.ToUpper(out)}
	if u, err := url.QueryUnescape(strings.ReplaceAll(out, "+", "%2B")); err == nil {
		texts = append(texts, strings.ToUpper(u))
	}
	for i := 0; i+16 <= len(seed); i++ {
		run := seed[i : i+16]
		if strings.Contains(plain, run) {
			continue
		}
		for _, t := range texts {
			if strings.Contains(t, run) {
				return true
			}
		}
	}
	return false
}

// plainInput is the request's text (each part as sent, %-decoded, and %-decoded leniently as the
// adapter reads a path that does not decode), upper-cased, with every whole seed in it removed:
// what the client sent that is not a secret.
func plainInput(parts ...string) string {
	var b strings.Builder
	for _, p := range parts {
		for _, v := range []string{p, pathUnescaped(p), leniently(p)} {
			v = strings.ToUpper(v)
			for _, seed := range seedsIn(v) {
				v = strings.ReplaceAll(v, seed, " ")
			}
			b.WriteString(v)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// leniently decodes every well-formed %XX escape of p and keeps the rest, as api's adapter reads
// a path url.PathUnescape refuses before it echoes it as a problem's instance.
func leniently(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		if p[i] == '%' && i+2 < len(p) {
			if v, err := strconv.ParseUint(p[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(p[i])
	}
	return b.String()
}

func pathUnescaped(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// inputSeeds are the seeds a request carries anywhere: method, path (as sent and decoded),
// headers, body.
func inputSeeds(parts ...string) []string {
	var all []string
	for _, p := range parts {
		all = append(all, seedsIn(p)...)
		if u, err := url.PathUnescape(p); err == nil && u != p {
			all = append(all, seedsIn(u)...)
		}
	}
	return all
}

// checkAnswer holds the properties every answer must have.
func checkAnswer(t *testing.T, r *doorRig, status int, header http.Header, body []byte, seeds []string, plain string) {
	t.Helper()
	if status >= 500 {
		t.Fatalf("status %d for a client's input: %s", status, body)
	}
	if status >= 400 {
		if ct := header.Get("Content-Type"); ct != "application/problem+json" {
			t.Fatalf("a %d with Content-Type %q", status, ct)
		}
		var pd api.ProblemDetails
		if err := json.Unmarshal(body, &pd); err != nil || pd.Code == "" || pd.Status != status || pd.Type == "" {
			t.Fatalf("a %d that is not a problem with a code: %s", status, body)
		}
	}
	var out strings.Builder
	out.Write(body)
	for k, vs := range header {
		out.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
	}
	out.WriteString(r.logs.take())
	out.WriteString(r.db.written(t))
	for _, seed := range seeds {
		if leaks(out.String(), seed, plain) {
			t.Fatalf("part of a seed sent came back (answer, log, item or alert):\n%s", out.String())
		}
	}
}

// FuzzHandler fuzzes one HTTP request: method, path, Idempotency-Key, Content-Type,
// X-Amzn-Trace-Id and body.
func FuzzHandler(f *testing.F) {
	good := `{"operationType":"withdraw","walletAddress":"` + doorWallet + `","amount":"1.5","asset":"USDC"}`
	f.Add("POST", "/transfers", "order-0001", "application/json", "Root=1-5e9f0c65-1de4d666d4dd26aced652b6c", []byte(good))
	f.Add("GET", "/wallets/"+doorWallet+"/transfers/order-0001", "", "", "", []byte(nil))
	// Memos of each type and a muxed wallet of doorWallet (id 7), so the fuzzer mutates them too.
	m, err := xdr.MuxedAccountFromAccountId(doorWallet, 7)
	if err != nil {
		f.Fatal(err)
	}
	muxed := m.Address()
	for _, memo := range []string{`{"type":"text","value":"customer 42"}`, `{"type":"id","value":"18446744073709551615"}`,
		`{"type":"hash","value":"` + strings.Repeat("ab", 32) + `"}`, `{"type":"return","value":"` + strings.Repeat("CD", 32) + `"}`} {
		f.Add("POST", "/transfers", "order-0002", "application/json", "", []byte(`{"operationType":"withdraw","walletAddress":"`+muxed+`","amount":"1.5","asset":"USDC","memo":`+memo+`}`))
	}
	f.Add("GET", "/wallets/"+muxed+"/transfers?limit=5", "", "", "", []byte(nil))
	r := newDoorRig(f)
	f.Fuzz(func(t *testing.T, method, path, key, contentType, trace string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || method == "" || strings.ContainsAny(method, " \t\r\n()<>@,;:\\\"/[]?={}") {
			return // not an HTTP request a server would pass on
		}
		req := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(body))
		req.Method, req.URL, req.RequestURI = method, u, path
		for k, v := range map[string]string{"Idempotency-Key": key, "Content-Type": contentType, "X-Amzn-Trace-Id": trace} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		r.logs.take()
		r.db.written(t)
		rec := httptest.NewRecorder()
		r.handler(t).ServeHTTP(rec, req)
		checkAnswer(t, r, rec.Code, rec.Header(), rec.Body.Bytes(), inputSeeds(method, path, key, contentType, trace, string(body)),
			plainInput(method, path, key, contentType, trace, string(body)))
	})
}

// FuzzLambdaAdapter fuzzes a whole API Gateway HTTP API event (payload format 2.0), as the
// Lambda runtime decodes it, through api.NewLambdaHandler.
func FuzzLambdaAdapter(f *testing.F) {
	good := `{"version":"2.0","routeKey":"$default","rawPath":"/transfers","rawQueryString":"",` +
		`"headers":{"content-type":"application/json","idempotency-key":"order-0002","x-amzn-trace-id":"Root=1-5e9f0c65-1de4d666d4dd26aced652b6c"},` +
		`"requestContext":{"http":{"method":"POST","path":"/transfers","protocol":"HTTP/1.1","sourceIp":"203.0.113.7"},"requestId":"JKJaXmPLvHcESHA="},` +
		`"body":"` + strings.ReplaceAll(`{"operationType":"withdraw","walletAddress":"`+doorWallet+`","amount":"2","asset":"USDC"}`, `"`, `\"`) + `","isBase64Encoded":false}`
	f.Add([]byte(good))
	r := newDoorRig(f)
	f.Fuzz(func(t *testing.T, event []byte) {
		var ev events.APIGatewayV2HTTPRequest
		if json.Unmarshal(event, &ev) != nil {
			return
		}
		// API Gateway writes requestContext.requestId itself (a client cannot choose it); the
		// handler uses it as the trace ID when there is no X-Ray header.
		ev.RequestContext.RequestID = "JKJaXmPLvHcESHA="
		r.logs.take()
		r.db.written(t)
		resp, err := api.NewLambdaHandler(r.handler(t))(context.Background(), ev)
		if err != nil {
			t.Fatalf("the adapter returned an error: %v", err)
		}
		header := http.Header{}
		for k, v := range resp.Headers {
			header.Set(k, v)
		}
		body := []byte(resp.Body)
		if resp.IsBase64Encoded {
			t.Fatalf("a base64 answer: %+v", resp)
		}
		sent := []byte(ev.Body)
		if ev.IsBase64Encoded {
			if b, err := base64.StdEncoding.DecodeString(ev.Body); err == nil {
				sent = b
			}
		}
		checkAnswer(t, r, resp.StatusCode, header, body, inputSeeds(string(event), ev.RawPath, ev.RequestContext.HTTP.Path, string(sent)),
			plainInput(ev.RawPath, ev.RequestContext.HTTP.Path, string(sent)))
	})
}

// TestDoorRigPays: the fuzz targets' rig moves money for a good request and records the items it
// writes, so the properties above are checked against real answers and items.
func TestDoorRigPays(t *testing.T) {
	r := newDoorRig(t)
	req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(
		`{"operationType":"withdraw","walletAddress":"`+doorWallet+`","amount":"1.5","asset":"USDC"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "order-rig-0001")
	rec := httptest.NewRecorder()
	r.handler(t).ServeHTTP(rec, req)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"transactionHash"`) {
		t.Fatalf("status %d: %s", rec.Code, rec.Body)
	}
	if items := r.db.written(t); !strings.Contains(items, `"replayable"`) || !strings.Contains(items, "order-rig-0001") {
		t.Fatalf("items written: %s", items)
	}
	if logs := r.logs.take(); !strings.Contains(logs, `"status":200`) {
		t.Fatalf("logs: %s", logs)
	}
}

// TestDoorQuotedKeyReplays: the Idempotency-Key draft's structured-field form ("key") and the bare
// key are one key through the deployed service, over HTTP and through the API Gateway adapter: a
// client that switches form gets its first transfer replayed (same hash, Idempotent-Replayed), not
// a second payment; the item is stored under the unquoted key.
func TestDoorQuotedKeyReplays(t *testing.T) {
	r := newDoorRig(t)
	body := `{"operationType":"withdraw","walletAddress":"` + doorWallet + `","amount":"1.25","asset":"USDC"}`
	post := func(key string) api.TransferResponse {
		t.Helper()
		req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		rec := httptest.NewRecorder()
		r.handler(t).ServeHTTP(rec, req)
		var out api.TransferResponse
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &out) != nil {
			t.Fatalf("%s: status %d: %s", key, rec.Code, rec.Body)
		}
		if got := rec.Header().Get(api.ReplayedHeader); (got == "true") != out.Replayed {
			t.Fatalf("%s: %s %q, body replayed %v", key, api.ReplayedHeader, got, out.Replayed)
		}
		return out
	}
	first := post(`"order-quoted-0001"`)
	items := r.db.written(t)
	if first.Replayed || !strings.Contains(items, `"order-quoted-0001"`) || strings.Contains(items, `\"order-quoted-0001\"`) {
		t.Fatalf("first %+v; items %s", first, items)
	}
	for _, key := range []string{"order-quoted-0001", `"order-quoted-0001";retry=1`} {
		if again := post(key); !again.Replayed || again.TransactionHash != first.TransactionHash || again.Ledger != first.Ledger {
			t.Fatalf("%s: %+v, want the replay of %+v", key, again, first)
		}
	}

	// The adapter, bare first this time, then quoted.
	lambda := func(key string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		ev := events.APIGatewayV2HTTPRequest{RawPath: "/transfers", Body: body,
			Headers: map[string]string{"content-type": "application/json", "idempotency-key": key}}
		ev.RequestContext.HTTP.Method = http.MethodPost
		ev.RequestContext.RequestID = "JKJaXmPLvHcESHA="
		resp, err := api.NewLambdaHandler(r.handler(t))(context.Background(), ev)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %+v, %v", key, resp, err)
		}
		return resp
	}
	a, b := lambda("order-quoted-0002"), lambda(`"order-quoted-0002"`)
	var ra, rb api.TransferResponse
	if json.Unmarshal([]byte(a.Body), &ra) != nil || json.Unmarshal([]byte(b.Body), &rb) != nil {
		t.Fatalf("bodies %q %q", a.Body, b.Body)
	}
	if ra.Replayed || !rb.Replayed || rb.TransactionHash != ra.TransactionHash || ra.TransactionHash == first.TransactionHash {
		t.Fatalf("adapter: %+v then %+v", ra, rb)
	}
}
