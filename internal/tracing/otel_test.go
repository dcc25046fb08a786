package tracing_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/tracing"
	"github.com/stellar-transfer/orchestrator/internal/tracing/otlpreceiver"
)

// The incoming invocation: the trace header Lambda hands the runtime (Lambda-Runtime-Trace-Id),
// whose Parent is the function's segment. From the X-Ray Developer Guide's "Tracing header" example.
const (
	incomingRoot   = "1-5759e988-bd862e3fe1be46a994272793"
	incomingParent = "53995c3f42cd8ad8"
	sampledHeader  = "Root=" + incomingRoot + ";Parent=" + incomingParent + ";Sampled=1;Lineage=a87bd80c:1"
	requestID      = "c6af9ac6-7b61-11e6-9a41-93e812345678"
	functionARN    = "arn:aws:lambda:us-east-1:123456789012:function:ApiFunction"
	// Static test credentials (never real ones).
	testKeyID   = "AKIDEXAMPLE"
	testSecret  = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	testSession = "session-token-example"
)

// xrayTraceID is X-Ray's trace ID format (X-Ray Developer Guide, "Tracing header").
var xrayTraceID = regexp.MustCompile(`^1-[0-9a-f]{8}-[0-9a-f]{24}$`)

func otelEnv(endpoint string) map[string]string {
	return map[string]string{
		"TRACING": "otel", "AWS_REGION": "us-east-1", "AWS_LAMBDA_FUNCTION_NAME": "ApiFunction",
		"AWS_LAMBDA_FUNCTION_VERSION": "$LATEST", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
		"AWS_ACCESS_KEY_ID": testKeyID, "AWS_SECRET_ACCESS_KEY": testSecret, "AWS_SESSION_TOKEN": testSession,
	}
}

// tracedContext is an invocation's context as aws-lambda-go makes it: the Lambda context and the
// trace header.
func tracedContext(header string) context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID, InvokedFunctionArn: functionARN})
	return logging.WithTraceHeader(ctx, header)
}

// receiver starts an OTLP receiver on 127.0.0.1 and configures TRACING=otel to export to it.
func receiver(t *testing.T, logger *slog.Logger) *otlpreceiver.Receiver {
	t.Helper()
	r := otlpreceiver.New()
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	env := otelEnv(srv.URL + otlpreceiver.Path)
	if err := tracing.Configure(func(k string) string { return env[k] }, logger); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { configure(t, map[string]string{"TRACING": "off"}) })
	return r
}

// fakeAWS answers every DynamoDB call with an empty JSON object and records the trace header of
// each request.
type fakeAWS struct {
	mu      sync.Mutex
	headers []string
}

func (f *fakeAWS) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.headers = append(f.headers, r.Header.Get("X-Amzn-Trace-Id"))
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amzn-Requestid", "DDBREQUEST0001")
	_, _ = io.WriteString(w, "{}")
}

func (f *fakeAWS) traceHeaders() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.headers...)
}

// dynamoClient is a DynamoDB client on the fake, instrumented by the active mode.
func dynamoClient(t *testing.T, f *fakeAWS) *dynamodb.Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
		RetryMaxAttempts: 1}
	tracing.InstrumentAWS(&cfg)
	return dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(srv.URL) })
}

// handler is an invocation that does what the API function does, in small: a claim step with a
// DynamoDB read, and a send step with a Stellar request that fails.
func handler(db *dynamodb.Client, stellarURL string) lambda.Handler {
	return lambda.NewHandler(func(ctx context.Context) (string, error) {
		cctx, end := tracing.Observer{}.StartStep(ctx, "claim")
		_, err := db.GetItem(cctx, &dynamodb.GetItemInput{TableName: aws.String("transfers"),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "transfer:x"}}})
		end(err)
		if err != nil {
			return "", err
		}
		sctx, end := tracing.Observer{}.StartStep(ctx, "send")
		req, _ := http.NewRequestWithContext(sctx, http.MethodPost, stellarURL, strings.NewReader(`{"jsonrpc":"2.0"}`))
		resp, err := tracing.HTTPClient(&http.Client{}).Do(req)
		if err == nil {
			resp.Body.Close()
			err = errors.New("sendTransaction: TRY_AGAIN_LATER")
		}
		end(err)
		return "answered", nil
	})
}

func byName(spans []otlpreceiver.Span) map[string]otlpreceiver.Span {
	m := map[string]otlpreceiver.Span{}
	for _, s := range spans {
		m[s.Name] = s
	}
	return m
}

func TestOTelInvocationContinuesTheLambdaTrace(t *testing.T) {
	rec := receiver(t, nil)
	fake := &fakeAWS{}
	db := dynamoClient(t, fake)
	var stellarHeader string
	stellar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stellarHeader = r.Header.Get("X-Amzn-Trace-Id")
		w.WriteHeader(http.StatusOK)
	}))
	defer stellar.Close()

	out, err := tracing.Lambda(handler(db, stellar.URL)).Invoke(tracedContext(sampledHeader), []byte(`{}`))
	if err != nil || string(out) != `"answered"` {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
	// Flushed before Invoke returned: the spans are already here, in one request.
	spans := rec.Spans()
	if n := len(rec.Requests()); n != 1 {
		t.Fatalf("%d export requests, want 1 (one flush per invocation)", n)
	}
	got := byName(spans)
	if len(spans) != 5 || len(got) != 5 {
		t.Fatalf("spans = %+v", spans)
	}
	inv, claim, getItem, send, post := got["ApiFunction"], got["transfer.claim"], got["DynamoDB.GetItem"], got["transfer.send"], got["HTTP POST"]
	wantTrace := strings.ReplaceAll(strings.TrimPrefix(incomingRoot, "1-"), "-", "")
	for _, s := range spans {
		if s.TraceID != wantTrace || !xrayTraceID.MatchString(s.XRayTraceID()) || s.XRayTraceID() != incomingRoot {
			t.Errorf("%s: trace %s (%s), want the incoming %s", s.Name, s.TraceID, s.XRayTraceID(), incomingRoot)
		}
		if s.Resource["service.name"] != "ApiFunction" || s.Resource["cloud.region"] != "us-east-1" || s.Resource["cloud.platform"] != "aws_lambda" {
			t.Errorf("%s: resource %v", s.Name, s.Resource)
		}
	}
	// The tree: the function's segment (the header's Parent) > invocation > steps > calls.
	for _, link := range []struct {
		child  otlpreceiver.Span
		parent string
	}{{inv, incomingParent}, {claim, inv.SpanID}, {getItem, claim.SpanID}, {send, inv.SpanID}, {post, send.SpanID}} {
		if link.child.ParentSpanID != link.parent {
			t.Errorf("%s: parent %q, want %q", link.child.Name, link.child.ParentSpanID, link.parent)
		}
	}
	if inv.Kind != "SERVER" || inv.Attributes["faas.invocation_id"] != requestID || inv.Attributes["cloud.account.id"] != "123456789012" ||
		inv.Attributes["cloud.resource_id"] != functionARN || inv.Status != "UNSET" {
		t.Errorf("invocation span = %+v", inv)
	}
	if getItem.Kind != "CLIENT" || getItem.Attributes["aws.request_id"] != "DDBREQUEST0001" ||
		getItem.Attributes["aws.dynamodb.table_names"] != `["transfers"]` {
		t.Errorf("DynamoDB span = %+v", getItem)
	}
	if claim.Kind != "INTERNAL" || claim.Status != "UNSET" {
		t.Errorf("claim span = %+v", claim)
	}
	if send.Status != "ERROR" || send.StatusMessage != "sendTransaction: TRY_AGAIN_LATER" {
		t.Errorf("send span = %+v", send)
	}
	if post.Kind != "CLIENT" || post.Attributes["http.response.status_code"] != "200" {
		t.Errorf("Stellar request span = %+v", post)
	}
	// The downstream calls carry the trace on, each with its own span as the parent, as the X-Ray
	// SDK's header does (so SQS hands it to the submitter).
	if h := fake.traceHeaders(); len(h) != 1 || h[0] != "Root="+incomingRoot+";Parent="+getItem.SpanID+";Sampled=1" {
		t.Errorf("DynamoDB request's X-Amzn-Trace-Id = %q", h)
	}
	if stellarHeader != "Root="+incomingRoot+";Parent="+post.SpanID+";Sampled=1" {
		t.Errorf("Stellar request's X-Amzn-Trace-Id = %q", stellarHeader)
	}
	verifySigV4(t, rec.Requests()[0])
}

// verifySigV4 checks that the export is signed with SigV4 for service xray in us-east-1 with the
// test's static credentials: the Authorization header's scope, and its signature recomputed with
// the SDK's signer over the headers it names and the body as sent.
func verifySigV4(t *testing.T, r otlpreceiver.Request) {
	t.Helper()
	auth := r.Header.Get("Authorization")
	m := regexp.MustCompile(`^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$`).FindStringSubmatch(auth)
	if m == nil {
		t.Fatalf("Authorization %q is not a SigV4 signature", auth)
	}
	if m[1] != testKeyID || m[3] != "us-east-1" || m[4] != "xray" {
		t.Fatalf("signed by %s for %s/%s, want %s for us-east-1/xray", m[1], m[3], m[4], testKeyID)
	}
	if r.Header.Get("X-Amz-Security-Token") != testSession {
		t.Errorf("X-Amz-Security-Token = %q", r.Header.Get("X-Amz-Security-Token"))
	}
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil || when.Format("20060102") != m[2] {
		t.Fatalf("X-Amz-Date %q, scope date %s", r.Header.Get("X-Amz-Date"), m[2])
	}
	signed := strings.Split(m[5], ";")
	for _, h := range []string{"host", "x-amz-date", "content-type", "content-encoding"} {
		if !contains(signed, h) {
			t.Errorf("SignedHeaders %s lacks %s", m[5], h)
		}
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.Path, bytes.NewReader(r.Body))
	again.ContentLength = int64(len(r.Body))
	for _, h := range signed {
		if h != "host" && h != "content-length" {
			again.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(r.Body)
	creds := aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testSession}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, again, hex.EncodeToString(sum[:]), "xray", "us-east-1", when); err != nil {
		t.Fatal(err)
	}
	if again.Header.Get("Authorization") != auth {
		t.Errorf("signature does not verify:\n got  %s\n want %s", auth, again.Header.Get("Authorization"))
	}
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func TestOTelRecordsNothingOutsideASampledInvocation(t *testing.T) {
	rec := receiver(t, nil)
	fake := &fakeAWS{}
	db := dynamoClient(t, fake)
	stellar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer stellar.Close()
	h := tracing.Lambda(handler(db, stellar.URL))
	// Not sampled by Lambda; no header at all (a local invocation); and a call at init, outside
	// any invocation.
	for _, ctx := range []context.Context{tracedContext(strings.Replace(sampledHeader, "Sampled=1", "Sampled=0", 1)),
		tracedContext(""), context.Background()} {
		if _, err := h.Invoke(ctx, []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String("t"),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "k"}}}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Requests()); n != 0 {
		t.Fatalf("%d export requests, want none: %+v", n, rec.Spans())
	}
	// The unsampled trace is still passed on, marked unsampled, as X-Ray expects.
	if h := fake.traceHeaders(); !strings.HasPrefix(h[0], "Root="+incomingRoot+";Parent=") || !strings.HasSuffix(h[0], ";Sampled=0") {
		t.Errorf("unsampled DynamoDB request's header = %q", h[0])
	}
}

func TestOTelExportFailureFailsNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		status int // 0: nothing listens
	}{{"refused", 0}, {"500", http.StatusInternalServerError}, {"throttled", http.StatusTooManyRequests}} {
		t.Run(c.name, func(t *testing.T) {
			endpoint := "http://127.0.0.1:1/v1/traces"
			var posts int
			var mu sync.Mutex
			if c.status != 0 {
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					posts++
					mu.Unlock()
					w.WriteHeader(c.status)
				}))
				defer srv.Close()
				endpoint = srv.URL + otlpreceiver.Path
			}
			var logs bytes.Buffer
			env := otelEnv(endpoint)
			if err := tracing.Configure(func(k string) string { return env[k] }, logging.New(&logs, slog.LevelInfo)); err != nil {
				t.Fatal(err)
			}
			defer configure(t, map[string]string{"TRACING": "off"})
			h := lambda.NewHandler(func(ctx context.Context) (string, error) {
				_, end := tracing.Observer{}.StartStep(ctx, "claim")
				end(nil)
				return "answered", nil
			})
			out, err := tracing.Lambda(h).Invoke(tracedContext(sampledHeader), []byte(`{}`))
			if err != nil || string(out) != `"answered"` {
				t.Fatalf("Invoke = %s, %v", out, err)
			}
			if !strings.Contains(logs.String(), `"msg":"traces not exported"`) || !strings.Contains(logs.String(), `"level":"WARN"`) {
				t.Errorf("no WARN line for the failed export:\n%s", logs.String())
			}
			if c.status != 0 && posts != 1 {
				t.Errorf("%d export attempts, want 1 (no retries)", posts)
			}
		})
	}
}

func TestOTelPanicStillEndsTheInvocationSpan(t *testing.T) {
	rec := receiver(t, nil)
	h := tracing.Lambda(lambda.NewHandler(func(context.Context) error { panic("boom") }))
	func() {
		defer func() {
			if v := recover(); v == nil {
				t.Error("the panic did not reach the runtime")
			}
		}()
		_, _ = h.Invoke(tracedContext(sampledHeader), []byte(`{}`))
	}()
	spans := rec.Spans()
	if len(spans) != 1 || spans[0].Name != "ApiFunction" || spans[0].Status != "ERROR" || spans[0].StatusMessage != "panic: boom" {
		t.Fatalf("spans = %+v", spans)
	}
}

// Never both SDKs: under otel the X-Ray SDK emits nothing, under xray nothing reaches the OTLP
// receiver, for the same traced invocation.
func TestOneSDKAtATime(t *testing.T) {
	em := &emitter{}
	// The X-Ray SDK's global emitter is the recorder from here on (it would be the daemon).
	if err := xray.Configure(xray.Config{Emitter: em}); err != nil {
		t.Fatal(err)
	}
	stellar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer stellar.Close()

	t.Run("otel", func(t *testing.T) {
		rec := receiver(t, nil)
		db := dynamoClient(t, &fakeAWS{})
		if _, err := tracing.Lambda(handler(db, stellar.URL)).Invoke(tracedContext(sampledHeader), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		if len(rec.Spans()) != 5 || em.count() != 0 {
			t.Fatalf("otel: %d spans exported, %d X-Ray segments emitted; want 5 and 0", len(rec.Spans()), em.count())
		}
	})
	t.Run("xray", func(t *testing.T) {
		rec := otlpreceiver.New()
		srv := httptest.NewServer(rec)
		defer srv.Close()
		env := otelEnv(srv.URL + otlpreceiver.Path)
		env["TRACING"] = "xray"
		configure(t, env)
		db := dynamoClient(t, &fakeAWS{})
		if _, err := tracing.Lambda(handler(db, stellar.URL)).Invoke(tracedContext(sampledHeader), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
		// The facade segment's subsegments: the two steps, DynamoDB and the Stellar host.
		if len(rec.Requests()) != 0 || em.count() == 0 {
			t.Fatalf("xray: %d export requests, %d X-Ray segments emitted; want 0 and some", len(rec.Requests()), em.count())
		}
	})
}

func TestOffLeavesEverythingAsItIs(t *testing.T) {
	configure(t, map[string]string{"TRACING": "off"})
	c := &http.Client{Timeout: time.Second}
	if tracing.HTTPClient(c) != c {
		t.Error("off wrapped the HTTP client")
	}
	var cfg aws.Config
	tracing.InstrumentAWS(&cfg)
	if len(cfg.APIOptions) != 0 {
		t.Errorf("off added %d AWS middlewares", len(cfg.APIOptions))
	}
	h := lambda.NewHandler(func() {})
	if tracing.Lambda(h) != h {
		t.Error("off wrapped the handler")
	}
	ctx := tracedContext(sampledHeader)
	if got, _ := (tracing.Observer{}).StartStep(ctx, "claim"); got != ctx || tracing.Traced(ctx) {
		t.Error("off traced a step")
	}
}

func TestModeAndConfiguration(t *testing.T) {
	for v, want := range map[string]tracing.Mode{"": tracing.XRay, "xray": tracing.XRay, "otel": tracing.OTel, "off": tracing.Off} {
		if got, err := tracing.ModeFrom(func(string) string { return v }); err != nil || got != want {
			t.Errorf("TRACING=%q: %q, %v", v, got, err)
		}
	}
	for _, v := range []string{"OTEL", "x-ray", "opentelemetry", " otel", "none"} {
		if _, err := tracing.ModeFrom(func(string) string { return v }); err == nil || !strings.Contains(err.Error(), "TRACING must be xray, otel or off") {
			t.Errorf("TRACING=%q: %v", v, err)
		}
	}
	for _, c := range []struct {
		name  string
		edit  func(map[string]string)
		error string
	}{
		{"no region", func(e map[string]string) { delete(e, "AWS_REGION") }, "needs AWS_REGION"},
		{"no key", func(e map[string]string) { delete(e, "AWS_ACCESS_KEY_ID") }, "AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set"},
		{"no secret", func(e map[string]string) { delete(e, "AWS_SECRET_ACCESS_KEY") }, "AWS_ACCESS_KEY_ID or AWS_SECRET_ACCESS_KEY is not set"},
		{"http elsewhere", func(e map[string]string) {
			e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://collector.example/v1/traces"
		}, "must be https"},
		{"not a URL", func(e map[string]string) { e["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "xray" }, "is not a URL"},
	} {
		env := otelEnv("http://127.0.0.1:1/v1/traces")
		c.edit(env)
		err := tracing.Configure(func(k string) string { return env[k] }, nil)
		if err == nil || !strings.Contains(err.Error(), c.error) {
			t.Errorf("%s: %v, want %q", c.name, err, c.error)
		}
		if strings.Contains(err.Error(), testSecret) {
			t.Errorf("%s: the error holds the secret key", c.name)
		}
	}
	// Without an endpoint the exporter goes to X-Ray's in the region.
	if got := tracing.XRayEndpoint("eu-west-1"); got != "https://xray.eu-west-1.amazonaws.com/v1/traces" {
		t.Errorf("XRayEndpoint = %s", got)
	}
	env := otelEnv("")
	if err := tracing.Configure(func(k string) string { return env[k] }, nil); err != nil || tracing.ActiveMode() != tracing.OTel {
		t.Errorf("default endpoint: %v, mode %s", err, tracing.ActiveMode())
	}
	configure(t, map[string]string{"TRACING": "off"})
}

// What Configure adds to a function's init, per mode (README.md, "Tracing: X-Ray or
// OpenTelemetry"): go test -run '^$' -bench Configure ./internal/tracing/
func BenchmarkConfigure(b *testing.B) {
	for _, mode := range []string{"xray", "otel", "off"} {
		b.Run(mode, func(b *testing.B) {
			env := otelEnv("http://127.0.0.1:1/v1/traces")
			env["TRACING"] = mode
			getenv := func(k string) string { return env[k] }
			b.ReportAllocs()
			for b.Loop() {
				if err := tracing.Configure(getenv, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	_ = tracing.Configure(func(string) string { return "off" }, nil)
}
