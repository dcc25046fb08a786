package lambdatest_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/lambdatest"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The functions' real bootstraps under aws-lambda-rie, as Lambda runs them. They run when
// AWS_LAMBDA_RIE names the emulator (`make test-lambda` installs it and sets it); plain `go test`
// skips them, as building three binaries takes a while on a cold cache.

const root = "../.."

// functions maps functions/<dir> to the template's logical ID.
var functions = map[string]string{"api": "ApiFunction", "alert": "AlertFunction", "reconcile": "ReconcileFunction",
	"submitter": "SubmitterFunction"}

type built struct {
	path     string
	size     int64 // this machine's build, bytes
	armSize  int64 // linux/arm64 (what Lambda runs), bytes
	buildErr error
}

var (
	buildOnce sync.Once
	bootstrap map[string]*built
)

// rie returns the emulator's path and the bootstrap of functions/<fn>, built once per test binary
// for this machine and for linux/arm64 (whose size is reported).
func rie(t *testing.T, fn string) (string, string) {
	t.Helper()
	rie := os.Getenv("AWS_LAMBDA_RIE")
	if rie == "" {
		t.Skip("AWS_LAMBDA_RIE is not set (make test-lambda sets it)")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the emulator runs linux bootstraps")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "bootstraps-")
		if err != nil {
			t.Fatal(err)
		}
		bootstrap = map[string]*built{}
		var wg sync.WaitGroup
		for f := range functions {
			b := &built{path: filepath.Join(dir, f, "bootstrap")}
			bootstrap[f] = b
			wg.Go(func() {
				ctx := context.Background()
				b.size, b.buildErr = lambdatest.Build(ctx, root, "./functions/"+f, b.path, "linux", runtime.GOARCH)
				if b.buildErr == nil {
					b.armSize, b.buildErr = lambdatest.Build(ctx, root, "./functions/"+f, filepath.Join(dir, f, "bootstrap-arm64"), "linux", "arm64")
				}
			})
		}
		wg.Wait()
	})
	b := bootstrap[fn]
	if b.buildErr != nil {
		t.Fatal(b.buildErr)
	}
	return rie, b.path
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

// stack is what the functions talk to, all on 127.0.0.1: DynamoDB (minidyn) with the table, the
// local Stellar network with a funded vault, a USDC asset and a wallet, and fake Secrets Manager,
// SNS and EventBridge endpoints.
type stack struct {
	table      string
	dynamoURL  string
	db         *dynamodb.Client
	net        *stellarsim.Network
	usdc       stellarsim.Asset
	vault      *keypair.Full
	wallet     string
	secrets    *lambdatest.SecretsManager
	secretsURL string
	sns        *lambdatest.SNS
	snsURL     string
	events     *lambdatest.EventBridge
	eventsURL  string
	seedDoc    string // the good secret document, to prove it never reaches a log
	dynamoLog  *requestLog
	stellarLog *requestLog
	rpcURL     string
}

// requestLog records each request (method, path, AWS operation) with its status and the start of
// its answer, for a failing test's log.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		l.mu.Lock()
		l.lines = append(l.lines, fmt.Sprintf("%s %s %s %s -> %d %.300s", time.Now().Format("15:04:05.000"), r.Method, r.URL.Path, r.Header.Get("X-Amz-Target"), rec.Code, rec.Body.String()))
		l.mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	})
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

const (
	secretARN  = "arn:aws:secretsmanager:us-east-1:123456789012:secret:transfers/signing-AbCdEf"
	badARN     = "arn:aws:secretsmanager:us-east-1:123456789012:secret:transfers/malformed-XyZxYz"
	missingARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:transfers/missing-QqQqQq"
	topicARN   = "arn:aws:sns:us-east-1:123456789012:transfer-alerts"
	goneTopic  = "arn:aws:sns:us-east-1:123456789012:deleted-topic"
	eventBus   = "transfers-rie-settlements"
)

// newStack starts the local stack (internal/devstack) with the API function alone and no channel
// accounts, a ledger a second (the network gives each ledger a close time at least a second after
// the last, so closing faster would run its clock ahead of the envelopes' maxTime), keys whose
// seeds go into the fake Secrets Manager, and its DynamoDB and network behind request logs, so a
// failing test shows what the functions asked them; then the fake AWS endpoints.
func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{dynamoLog: &requestLog{}, stellarLog: &requestLog{}}
	keys, err := signing.GenerateKeys(0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := devstack.Start(ctx, devstack.Options{LedgerInterval: time.Second, APIOnly: true, DemoWallets: 1, Keys: &keys,
		Getenv: func(k string) string { return map[string]string{"CHANNEL_COUNT": "0"}[k] },
		WrapHandler: func(server string, h http.Handler) http.Handler {
			if server == "dynamodb" {
				return s.dynamoLog.wrap(h)
			}
			return s.stellarLog.wrap(h)
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s.net, s.table, s.dynamoURL, s.rpcURL = st.Network, st.Info.Table, st.Info.DynamoDBEndpoint, st.Info.RPCURL
	s.db = dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.dynamoURL),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	s.usdc = stellarsim.Asset{Code: st.Info.Assets[0].Code, Issuer: st.Info.Assets[0].Issuer}
	s.vault, s.wallet = keys.Vault, st.Info.Wallets[0].Account

	doc, err := keys.MarshalSecret()
	if err != nil {
		t.Fatal(err)
	}
	s.seedDoc = string(doc)
	s.secrets = lambdatest.NewSecretsManager(map[string]string{
		secretARN: string(doc),
		badARN:    `{"vaultSeed":"SBADSEEDNOTBASE32"}`,
	})
	sm := httptest.NewServer(s.secrets)
	t.Cleanup(sm.Close)
	s.secretsURL = sm.URL
	s.sns = lambdatest.NewSNS(topicARN)
	sns := httptest.NewServer(s.sns)
	t.Cleanup(sns.Close)
	s.snsURL = sns.URL
	s.events = lambdatest.NewEventBridge(eventBus)
	eb := httptest.NewServer(s.events)
	t.Cleanup(eb.Close)
	s.eventsURL = eb.URL
	return s
}

// env is a function's environment on this stack: AWS settings (region, static credentials, the
// fake endpoints) and the service's configuration, minus the names in drop, plus extra.
func (s *stack) env(drop []string, extra ...string) []string {
	all := []string{
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_SECRETS_MANAGER=" + s.secretsURL, "AWS_ENDPOINT_URL_SNS=" + s.snsURL,
		"TABLE_NAME=" + s.table, "DYNAMODB_ENDPOINT=" + s.dynamoURL,
		"STELLAR_BACKEND=rpc", "STELLAR_RPC_URL=" + s.rpcURL, "NETWORK_PASSPHRASE=" + s.net.Passphrase(),
		"VAULT_ACCOUNT=" + s.vault.Address(), "ASSETS=USDC:" + s.usdc.Issuer, "SIGNING_SECRET_ARN=" + secretARN,
		"ALERT_TOPIC_ARN=" + topicARN, "EVENT_BUS_NAME=" + eventBus, "AWS_ENDPOINT_URL_EVENTBRIDGE=" + s.eventsURL,
		// The template's values (template.yaml): the API function's timeout is 29 s.
		"TRANSFER_ORCHESTRATION_TIMEOUT_MS=25000", "TRANSFER_DEADLINE_MARGIN_MS=2000", "TRANSFER_PROOF_WINDOW_MS=9000", "TRANSFER_MIN_VALIDITY_MS=12000",
	}
	var out []string
	for _, kv := range all {
		k, _, _ := strings.Cut(kv, "=")
		if !contains(drop, k) {
			out = append(out, kv)
		}
	}
	return append(out, extra...)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// start runs fn's bootstrap under the emulator with env and the function's template timeout.
func start(t *testing.T, fn string, env []string, timeout time.Duration) *lambdatest.Emulator {
	t.Helper()
	return startAs(t, fn, functions[fn], env, timeout)
}

// startAs is start under another of the template's logical IDs (name) built from functions/<fn>.
func startAs(t *testing.T, fn, name string, env []string, timeout time.Duration) *lambdatest.Emulator {
	t.Helper()
	rieBin, boot := rie(t, fn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := lambdatest.Start(ctx, lambdatest.Options{RIE: rieBin, Bootstrap: boot, Env: env, FunctionName: name, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("%s log:\n%s", name, e.Log())
		}
	})
	return e
}

func invoke(t *testing.T, e *lambdatest.Emulator, payload any) lambdatest.Response {
	t.Helper()
	b, ok := payload.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(payload); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r, err := e.Invoke(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// reportTimes logs the init duration and each invocation's duration from the emulator's lines.
func reportTimes(t *testing.T, fn string, e *lambdatest.Emulator, invocations int) {
	t.Helper()
	reportTimesAs(t, fn, functions[fn], e, invocations)
}

// reportTimesAs is reportTimes for functions/<fn>'s bootstrap run as the function name.
func reportTimesAs(t *testing.T, fn, name string, e *lambdatest.Emulator, invocations int) {
	t.Helper()
	d, ok := e.InitDuration()
	if !ok {
		t.Fatalf("%s: no INIT REPORT line", name)
	}
	reports := e.Reports()
	if len(reports) != invocations {
		t.Errorf("%s: %d REPORT lines, want %d", name, len(reports), invocations)
	}
	var ds []string
	for _, r := range reports {
		ds = append(ds, fmt.Sprintf("%.1f ms", float64(r.Duration.Microseconds())/1000))
	}
	b := bootstrap[fn]
	t.Logf("%s: bootstrap %d bytes (%.1f MiB) linux/%s, %d bytes (%.1f MiB) linux/arm64; init %.1f ms (INIT REPORT); invocations: %s (REPORT)",
		name, b.size, mib(b.size), runtime.GOARCH, b.armSize, mib(b.armSize), float64(d.Microseconds())/1000, strings.Join(ds, ", "))
}

// An init failure: the emulator answers 5xx, and the function's log says why in one line.
func expectInitFailure(t *testing.T, fn string, env []string, want ...string) string {
	t.Helper()
	e := start(t, fn, env, 30*time.Second)
	r := invoke(t, e, []byte(`{}`))
	if r.Status < 500 {
		t.Fatalf("%s with a bad configuration answered %d %s; want an init failure", functions[fn], r.Status, r.Body)
	}
	log := e.Log()
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("%s init failure: the log does not say %q:\n%s", functions[fn], w, log)
		}
	}
	if !strings.Contains(log, "Runtime exited with error: exit status 1") {
		t.Errorf("%s: the runtime did not exit with status 1:\n%s", functions[fn], log)
	}
	return log
}

// apiEvent is the API Gateway HTTP API (payload 2.0) fixture at name, with its path, headers and
// body replaced where given.
func apiEvent(t *testing.T, name, method, path string, headers map[string]string, body string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, "internal/api/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev.RawPath, ev.RawQueryString = path, ""
	ev.RequestContext.HTTP.Method, ev.RequestContext.HTTP.Path = method, path
	ev.RouteKey = method + " " + path
	if ev.Headers == nil {
		ev.Headers = map[string]string{}
	}
	for k, v := range headers {
		ev.Headers[k] = v
	}
	ev.Body, ev.IsBase64Encoded = "", false
	if body != "" {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString([]byte(body)), true
		ev.Headers["content-length"] = fmt.Sprint(len(body))
	}
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func httpResponse(t *testing.T, r lambdatest.Response) (events.APIGatewayV2HTTPResponse, map[string]any) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("emulator answered %d: %s", r.Status, r.Body)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(r.Body, &resp); err != nil {
		t.Fatalf("not an HTTP API response: %s", r.Body)
	}
	var body map[string]any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("body %q: %v", resp.Body, err)
	}
	return resp, body
}

var hexHash = regexp.MustCompile(`^[0-9a-f]{64}$`)

func TestRIEApiFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	e := start(t, "api", s.env(nil), 29*time.Second)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("DynamoDB requests:\n%s\nStellar requests:\n%s", s.dynamoLog, s.stellarLog)
		}
	})
	key := "rie-order-00000001"
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"12.5","asset":"USDC"}`, strings.ToLower(s.wallet))
	post := apiEvent(t, "apigw-v2-request-post-transfer.json", "POST", "/transfers",
		map[string]string{"idempotency-key": key, "content-type": "application/json"}, body)

	resp, got := httpResponse(t, invoke(t, e, post))
	if resp.StatusCode != 200 || !hexHash.MatchString(fmt.Sprint(got["transactionHash"])) || got["replayed"] != false {
		t.Fatalf("POST /transfers = %d %v", resp.StatusCode, got)
	}
	if bal, err := s.net.Balance(s.wallet, s.usdc); err != nil || bal != 125_000_000 {
		t.Fatalf("the wallet holds %d stroops of USDC (%v), want 12.5 USDC", bal, err)
	}
	if s.secrets.Reads() != 1 {
		t.Errorf("the signing secret was read %d times, want once at init", s.secrets.Reads())
	}
	// The same request again replays it.
	resp2, again := httpResponse(t, invoke(t, e, post))
	if resp2.StatusCode != 200 || again["transactionHash"] != got["transactionHash"] || again["replayed"] != true || resp2.Headers["Idempotent-Replayed"] != "true" {
		t.Fatalf("replay = %d %v %v", resp2.StatusCode, again, resp2.Headers)
	}
	getEv := apiEvent(t, "apigw-v2-request-get-transfer.json", "GET", "/wallets/"+s.wallet+"/transfers/"+key, nil, "")
	resp3, view := httpResponse(t, invoke(t, e, getEv))
	if resp3.StatusCode != 200 || view["status"] != "success" || view["transactionHash"] != got["transactionHash"] {
		t.Fatalf("GET = %d %v", resp3.StatusCode, view)
	}
	// The wallet's history lists the transfer (the deployed table's gsi2, here the local one).
	histEv := apiEvent(t, "apigw-v2-request-get-transfer.json", "GET", "/wallets/"+s.wallet+"/transfers", nil, "")
	resp5, history := httpResponse(t, invoke(t, e, histEv))
	items, _ := history["items"].([]any)
	if resp5.StatusCode != 200 || len(items) != 1 || items[0].(map[string]any)["transactionHash"] != got["transactionHash"] ||
		items[0].(map[string]any)["idempotencyKey"] != key {
		t.Fatalf("GET history = %d %v", resp5.StatusCode, history)
	}
	// A problem: the key missing.
	resp4, problem := httpResponse(t, invoke(t, e, apiEvent(t, "apigw-v2-request-post-transfer.json", "POST", "/transfers",
		map[string]string{"idempotency-key": "", "content-type": "application/json"}, body)))
	if resp4.StatusCode != 400 || problem["code"] != transfer.CodeKeyMissing || resp4.Headers["Content-Type"] != "application/problem+json" {
		t.Fatalf("no key = %d %v %v", resp4.StatusCode, problem, resp4.Headers)
	}
	reportTimes(t, "api", e, 5)
	noSecretsIn(t, s, e.Log())
}

func decodeAnswer(t *testing.T, r lambdatest.Response, v any) {
	t.Helper()
	if r.Status != http.StatusOK {
		t.Fatalf("emulator answered %d: %s", r.Status, r.Body)
	}
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("answer %s: %v", r.Body, err)
	}
}

// noSecretsIn fails if any seed of the stack's signing secret appears in log.
func noSecretsIn(t *testing.T, s *stack, log string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(s.seedDoc), &doc); err != nil {
		t.Fatal(err)
	}
	for k, v := range doc {
		if seed, ok := v.(string); ok && seed != "" && strings.Contains(log, seed) {
			t.Errorf("the log contains the secret's %s", k)
		}
	}
}

func TestRIEApiFunctionBadConfiguration(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	t.Run("environment", func(t *testing.T) {
		expectInitFailure(t, "api", s.env([]string{"TABLE_NAME", "VAULT_ACCOUNT"}, "ASSETS=USDC", "MAX_FEE_STROOPS=ten"),
			`"msg":"invalid configuration"`, "TABLE_NAME is required", "VAULT_ACCOUNT is required",
			`ASSETS: entry 1 is not CODE:ISSUER`, "MAX_FEE_STROOPS must be a whole number")
	})
	t.Run("no secret ARN", func(t *testing.T) {
		expectInitFailure(t, "api", s.env([]string{"SIGNING_SECRET_ARN"}), "SIGNING_SECRET_ARN is required")
	})
	t.Run("SIGNER=kms without its key", func(t *testing.T) {
		expectInitFailure(t, "api", s.env([]string{"SIGNING_SECRET_ARN"}, "SIGNER=kms"),
			`"msg":"invalid configuration"`, "VAULT_KMS_KEY_ID is required when SIGNER=kms")
	})
	t.Run("SIGNER=kms, KMS unreachable", func(t *testing.T) {
		// Port 1 on 127.0.0.1 refuses connections: GetPublicKey fails at init, which names it.
		key := "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
		expectInitFailure(t, "api", s.env([]string{"SIGNING_SECRET_ARN"}, "SIGNER=kms", "VAULT_KMS_KEY_ID="+key,
			"KMS_ENDPOINT=http://127.0.0.1:1"), `"msg":"signing keys"`, "GetPublicKey", key)
	})
	t.Run("secret missing", func(t *testing.T) {
		expectInitFailure(t, "api", s.env([]string{"SIGNING_SECRET_ARN"}, "SIGNING_SECRET_ARN="+missingARN),
			`"msg":"signing keys"`, "ResourceNotFoundException", missingARN)
	})
	t.Run("secret malformed", func(t *testing.T) {
		log := expectInitFailure(t, "api", s.env([]string{"SIGNING_SECRET_ARN"}, "SIGNING_SECRET_ARN="+badARN),
			`"msg":"signing keys"`, "vaultSeed is not a valid secret seed")
		if strings.Contains(log, "SBADSEEDNOTBASE32") {
			t.Error("the malformed seed's value reached the log")
		}
	})
}

// inDoubtRecord is an in-doubt transfer of the stack's wallet, as the store writes it.
func inDoubtRecord(t *testing.T, s *stack, key string) (transfer.Record, map[string]events.DynamoDBAttributeValue) {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Millisecond)
	req := transfer.Request{OperationType: transfer.Operation("withdraw"), WalletAddress: s.wallet, Amount: "7", Asset: "USDC", Stroops: 70_000_000}
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(s.wallet, key), Status: transfer.StatusInDoubt, Fingerprint: req.Fingerprint(),
		Request: req, ClientKey: key, TraceID: "1-5e9f0c65-1de4d666d4dd26aced652b6c",
		Envelope: &transfer.Envelope{XDR: "AAAAAgAAAAA=", InnerHash: strings.Repeat("ab", 32), MaxTime: now.Add(time.Hour).Unix(),
			SubmittedLedger: s.net.LatestLedger().Sequence, Channel: s.vault.Address(), FeeStroops: 100},
		Result:  &transfer.Result{Code: transfer.CodeTimeout},
		Version: 3, CreatedAt: now, UpdatedAt: now,
	}
	item, err := dynamo.EncodeItem(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(s.table), Item: item}); err != nil {
		t.Fatal(err)
	}
	image, err := alert.FromSDK(item)
	if err != nil {
		t.Fatal(err)
	}
	return rec, image
}

func (s *stack) streamRecord(seq, name string, keys, oldImage, newImage map[string]events.DynamoDBAttributeValue) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: "event-" + seq, EventName: name, EventSource: "aws:dynamodb", EventVersion: "1.1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/" + s.table + "/stream/2026-01-01T00:00:00.000",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Now().Truncate(time.Second)},
			Keys:                        keys, OldImage: oldImage, NewImage: newImage, SequenceNumber: seq, SizeBytes: 512,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

func TestRIEAlertFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rec, image := inDoubtRecord(t, s, "rie-alert-00000001")
	keys := map[string]events.DynamoDBAttributeValue{dynamo.AttrPK: events.NewStringAttribute(rec.StoreKey)}
	malformed := s.streamRecord("100000000000000000002", "MODIFY", keys, nil, image)
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		s.streamRecord("100000000000000000001", "INSERT", keys, nil, image),
		// A MODIFY without its old image can never be processed: logged and skipped, so that it
		// does not hold the shard back.
		malformed,
	}}
	e := start(t, "alert", s.env(nil), 30*time.Second)
	var resp events.DynamoDBEventResponse
	decodeAnswer(t, invoke(t, e, batch), &resp)
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("batchItemFailures = %+v, want none", resp.BatchItemFailures)
	}
	log := e.Log()
	if !regexp.MustCompile(`"alert":"transfer-in-doubt","storeKey":"` + regexp.QuoteMeta(rec.StoreKey) + `"`).MatchString(log) {
		t.Errorf("no transfer-in-doubt alert line for %s:\n%s", rec.StoreKey, log)
	}
	if !regexp.MustCompile(`"msg":"malformed stream record skipped"[^\n]*"sequenceNumber":"100000000000000000002"`).MatchString(log) {
		t.Errorf("the malformed record was not logged:\n%s", log)
	}
	if !strings.Contains(log, `"transfer_orchestration_in_doubt":1`) {
		t.Errorf("no in-doubt gauge of 1 in the log:\n%s", log)
	}
	if strings.Contains(log, rec.Fingerprint) {
		t.Error("the fingerprint reached the log")
	}
	pubs := s.sns.Published()
	if len(pubs) != 1 || pubs[0].TopicARN != topicARN || !strings.Contains(pubs[0].Message, rec.StoreKey) {
		t.Errorf("SNS publications = %+v, want one for %s on %s", pubs, rec.StoreKey, topicARN)
	}
	// Its settlement event: "Transfer In Doubt", through the SDK's eventbridge client.
	evs := s.events.Accepted()
	if len(evs) != 1 || evs[0].EventBusName != eventBus || evs[0].Source != alert.EventSource || evs[0].DetailType != alert.DetailTypeInDoubt ||
		!strings.Contains(evs[0].Detail, `"idempotencyKey":"rie-alert-00000001"`) || !strings.Contains(evs[0].Detail, `"failingCode":"TRANSFER_TIMEOUT"`) {
		t.Errorf("events = %+v, want one Transfer In Doubt for rie-alert-00000001 on %s", evs, eventBus)
	}
	for _, ev := range evs {
		if strings.Contains(ev.Detail, rec.Envelope.XDR) || strings.Contains(ev.Detail, rec.Fingerprint) {
			t.Errorf("the event leaks the envelope or the fingerprint: %s", ev.Detail)
		}
	}
	reportTimes(t, "alert", e, 1)

	// PutEvents refuses the entry (a bus it does not hold): reported, so Lambda retries the batch
	// from that record.
	t.Run("event refused", func(t *testing.T) {
		e := start(t, "alert", s.env([]string{"EVENT_BUS_NAME"}, "EVENT_BUS_NAME=deleted-bus"), 30*time.Second)
		var resp events.DynamoDBEventResponse
		decodeAnswer(t, invoke(t, e, events.DynamoDBEvent{Records: batch.Records[:1]}), &resp)
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100000000000000000001" {
			t.Errorf("batchItemFailures = %+v, want the record whose event was refused", resp.BatchItemFailures)
		}
		if log := e.Log(); !strings.Contains(log, `"msg":"settlement events not published`) || !strings.Contains(log, `"transfer_orchestration_event_publish_failures":1`) {
			t.Errorf("no failure line or metric in the log:\n%s", log)
		}
	})

	// A failure a retry can fix (the topic is gone: SNS answers NotFound) is reported, so Lambda
	// retries the batch from that record.
	t.Run("publish fails", func(t *testing.T) {
		e := start(t, "alert", s.env([]string{"ALERT_TOPIC_ARN"}, "ALERT_TOPIC_ARN="+goneTopic), 30*time.Second)
		var resp events.DynamoDBEventResponse
		decodeAnswer(t, invoke(t, e, events.DynamoDBEvent{Records: batch.Records[:1]}), &resp)
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100000000000000000001" {
			t.Errorf("batchItemFailures = %+v, want the record whose alert failed", resp.BatchItemFailures)
		}
	})
	t.Run("bad configuration", func(t *testing.T) {
		expectInitFailure(t, "alert", s.env([]string{"TABLE_NAME", "ALERT_TOPIC_ARN", "EVENT_BUS_NAME"}, "ALERT_TOPIC_ARN=transfer-alerts", "EVENT_BUS_NAME=two words"),
			`"msg":"invalid configuration"`, "TABLE_NAME is required", "ALERT_TOPIC_ARN must be an SNS topic ARN", "EVENT_BUS_NAME must be")
	})
}

func TestRIEReconcileFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rec, _ := inDoubtRecord(t, s, "rie-reconcile-0001")
	env := s.env([]string{"SIGNING_SECRET_ARN"}) // the reconcile function never signs
	e := start(t, "reconcile", env, 55*time.Second)

	answer := func(payload string) map[string]any {
		t.Helper()
		r := invoke(t, e, []byte(payload))
		var m map[string]any
		if r.Status != 200 || json.Unmarshal(r.Body, &m) != nil {
			t.Fatalf("%s -> %d %s", payload, r.Status, r.Body)
		}
		return m
	}
	list := answer(`{"action":"list"}`)
	if b, _ := json.Marshal(list); !strings.Contains(string(b), rec.StoreKey) {
		t.Errorf("list does not show %s: %s", rec.StoreKey, b)
	}
	get := answer(fmt.Sprintf(`{"action":"get","storeKey":%q}`, rec.StoreKey))
	if b, _ := json.Marshal(get); !strings.Contains(string(b), rec.StoreKey) || !strings.Contains(string(b), rec.Envelope.InnerHash) {
		t.Errorf("get does not show the item and its hash: %s", b)
	}
	// The schedule's payload (template.yaml). The envelope cannot be proven either way yet
	// (maxTime is an hour away, the hash is unknown): the sweep answers and leaves it in doubt.
	sweep := answer(`{"action":"sweep"}`)
	if len(sweep) == 0 {
		t.Errorf("sweep answered %v", sweep)
	}
	refused := answer(fmt.Sprintf(`{"action":"resolve","storeKey":%q,"transactionHash":%q}`, rec.StoreKey, strings.Repeat("cd", 32)))
	// Refusals are answers with a problem, not function errors (internal/reconcile, Invoke).
	if refused["code"] != "BAD_REQUEST" || refused["detail"] == nil || refused["type"] == nil {
		t.Errorf("resolve without an operator: %v, want a BAD_REQUEST problem", refused)
	}
	unknown := answer(`{"action":"launch"}`)
	if unknown["code"] != "UNKNOWN_ACTION" {
		t.Errorf("an unknown action answered %v, want an UNKNOWN_ACTION problem", unknown)
	}
	// Data after the object: the bootstrap reads every byte of the payload (reconcile.Service is a
	// lambda.Handler), so the runtime's json.Decoder cannot drop it before the strict decoder.
	for _, p := range []string{`{"action":"list","limit":20}{}`, `{"action":"list"} {"action":"sweep"}`} {
		if trailing := answer(p); trailing["code"] != "BAD_REQUEST" || trailing["status"] != float64(400) || trailing["errorType"] != nil {
			t.Errorf("%s answered %v, want a BAD_REQUEST problem", p, trailing)
		}
	}
	reportTimes(t, "reconcile", e, 7)
	noSecretsIn(t, s, e.Log())

	t.Run("bad configuration", func(t *testing.T) {
		expectInitFailure(t, "reconcile", s.env([]string{"NETWORK_PASSPHRASE", "STELLAR_RPC_URL"}),
			`"msg":"invalid configuration"`, "NETWORK_PASSPHRASE is required", "STELLAR_RPC_URL is required")
	})
}

// InDoubtReaderFunction (template.yaml): the reconcile bootstrap with RECONCILE_ACTIONS=read. It
// lists and gets; resolve (a forced discard included), sweep and channels answer the problem
// ACTION_NOT_ALLOWED as the invocation's result (no X-Amz-Function-Error), and the item is
// untouched. Its DynamoDB calls are only GetItem and Query, the two actions its role grants; it
// never reads the signing secret, even when given one.
func TestRIEInDoubtReaderFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	rec, _ := inDoubtRecord(t, s, "rie-reader-0001")
	s.dynamoLog.mu.Lock()
	from := len(s.dynamoLog.lines)
	s.dynamoLog.mu.Unlock()
	e := startAs(t, "reconcile", "InDoubtReaderFunction", s.env(nil, "RECONCILE_ACTIONS=read", "CHANNEL_COUNT=2"), 55*time.Second)

	answer := func(payload string) map[string]any {
		t.Helper()
		r := invoke(t, e, []byte(payload))
		var m map[string]any
		if r.Status != 200 || json.Unmarshal(r.Body, &m) != nil {
			t.Fatalf("%s -> %d %s", payload, r.Status, r.Body)
		}
		return m
	}
	if b, _ := json.Marshal(answer(`{"action":"list"}`)); !strings.Contains(string(b), rec.StoreKey) {
		t.Errorf("list does not show %s: %s", rec.StoreKey, b)
	}
	if b, _ := json.Marshal(answer(fmt.Sprintf(`{"action":"get","storeKey":%q}`, rec.StoreKey))); !strings.Contains(string(b), rec.Envelope.InnerHash) {
		t.Errorf("get does not show the item's hash: %s", b)
	}
	for _, payload := range []string{
		fmt.Sprintf(`{"action":"resolve","storeKey":%q,"discard":true,"force":true,"reason":"checked","innerHash":%q,"operator":"mallory"}`, rec.StoreKey, rec.Envelope.InnerHash),
		fmt.Sprintf(`{"action":"resolve","storeKey":%q,"transactionHash":%q,"operator":"mallory"}`, rec.StoreKey, rec.Envelope.InnerHash),
		`{"action":"sweep"}`, `{"action":"channels"}`,
	} {
		p := answer(payload)
		if p["errorType"] != nil || p["code"] != "ACTION_NOT_ALLOWED" || p["status"] != float64(403) || !strings.HasSuffix(fmt.Sprint(p["type"]), "tag:stellar-transfer-orchestrator,2026:reconcile:action-not-allowed") {
			t.Errorf("%s -> %v, want the problem ACTION_NOT_ALLOWED", payload, p)
		}
	}
	if unknown := answer(`{"action":"launch"}`); unknown["errorType"] != nil || unknown["code"] != "UNKNOWN_ACTION" {
		t.Errorf("an unknown action answered %v, want the problem UNKNOWN_ACTION", unknown)
	}
	s.dynamoLog.mu.Lock()
	calls := slices.Clone(s.dynamoLog.lines[from:])
	s.dynamoLog.mu.Unlock()
	ops := map[string]int{}
	for _, line := range calls {
		if m := regexp.MustCompile(`DynamoDB_20120810\.(\w+)`).FindStringSubmatch(line); m != nil {
			ops[m[1]]++
		}
	}
	if ops["GetItem"] == 0 || ops["Query"] == 0 || len(ops) != 2 {
		t.Errorf("the reader's DynamoDB calls = %v, want GetItem (get) and Query (list) only, the actions its role grants", ops)
	}
	if n := s.secrets.Reads(); n != 0 {
		t.Errorf("the reader read the signing secret %d times", n)
	}
	t.Logf("InDoubtReaderFunction: DynamoDB calls %v", ops)
	out, err := s.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(s.table),
		Key: map[string]types.AttributeValue{dynamo.AttrPK: &types.AttributeValueMemberS{Value: rec.StoreKey}}})
	if err != nil {
		t.Fatal(err)
	}
	if after, err := dynamo.DecodeItem(out.Item); err != nil || after.Status != transfer.StatusInDoubt || after.Version != rec.Version || after.Audit != nil {
		t.Errorf("the item changed: %+v, %v", after, err)
	}
	reportTimesAs(t, "reconcile", "InDoubtReaderFunction", e, 7)
	noSecretsIn(t, s, e.Log())

	t.Run("bad RECONCILE_ACTIONS", func(t *testing.T) {
		expectInitFailure(t, "reconcile", s.env(nil, "RECONCILE_ACTIONS=readonly"),
			`"msg":"invalid configuration"`, "RECONCILE_ACTIONS must be all or read")
	})
}
