package devstack

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// The local stack end to end, over HTTP, as a client and `make run` see it.
// Ledgers close every second of real time (the local network stamps each ledger at least one
// second after the last, so a shorter interval would run its clock ahead); nothing sleeps.

func startStack(t *testing.T) *Stack {
	t.Helper()
	return startWith(t, Options{LedgerInterval: time.Second})
}

// startWith starts a stack with o, closed when the test ends.
func startWith(t *testing.T, o Options) *Stack {
	t.Helper()
	s, err := Start(context.Background(), o)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// envOf is a Getenv of env's settings.
func envOf(env map[string]string) func(string) string { return func(k string) string { return env[k] } }

type reply struct {
	status int
	header http.Header
	body   map[string]any
}

// post sends a transfer as a client following the README does: a 503 CHANNELS_BUSY (nothing was
// sent, the key is free) is retried with the same key after its Retry-After, up to
// busyRetries times: a client's retry is the contract for that answer. No test here expects
// CHANNELS_BUSY from a POST (nothing else uses the channels), so busyRetried counts the retries
// for the run to report; the calendar's own behaviour is tested on a virtual clock
// (internal/stellar/sources, channelsched_test.go and channelsched_lone_test.go).
func post(t *testing.T, s *Stack, key, body string) reply {
	t.Helper()
	for attempt := 0; ; attempt++ {
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		r := do(t, req)
		if r.status != http.StatusServiceUnavailable || r.body["code"] != "CHANNELS_BUSY" || attempt == busyRetries {
			return r
		}
		wait, err := strconv.Atoi(r.header.Get("Retry-After"))
		if err != nil || wait < 1 || wait > 10 {
			t.Fatalf("CHANNELS_BUSY with Retry-After %q: want 1 to 10 s", r.header.Get("Retry-After"))
		}
		n := busyRetried.Add(1)
		t.Logf("POST %s: CHANNELS_BUSY, retrying after %d s as a client does (%d retried in this run)", key, wait, n)
		time.Sleep(time.Duration(wait) * time.Second)
	}
}

// busyRetries is how many CHANNELS_BUSY answers post retries before it returns one.
const busyRetries = 4

// busyRetried counts the CHANNELS_BUSY answers post retried in this run of the package's tests:
// TestMain reports it (with -v), and DEVSTACK_MAX_BUSY_RETRIES=<n> fails the run when more were.
// The retry is the client's contract, so it stays; the count shows whether the stack gives the
// answer where nothing else uses the channels.
var busyRetried atomic.Int64

func TestMain(m *testing.M) {
	code := m.Run()
	n := busyRetried.Load()
	fmt.Printf("devstack tests: %d CHANNELS_BUSY answers to POST /transfers retried after Retry-After\n", n)
	if s := os.Getenv("DEVSTACK_MAX_BUSY_RETRIES"); s != "" && code == 0 {
		limit, err := strconv.Atoi(s)
		if err != nil || limit < 0 {
			fmt.Printf("DEVSTACK_MAX_BUSY_RETRIES=%q: want a count of 0 or more\n", s)
			code = 2
		} else if n > int64(limit) {
			fmt.Printf("FAIL: %d CHANNELS_BUSY answers retried, more than DEVSTACK_MAX_BUSY_RETRIES=%d\n", n, limit)
			code = 1
		}
	}
	os.Exit(code)
}

func do(t *testing.T, req *http.Request) reply {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	r := reply{status: resp.StatusCode, header: resp.Header}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("body %q: %v", raw, err)
	}
	return r
}

func withdraw(wallet, amount string) string {
	return fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":%q,"asset":"USDC"}`, wallet, amount)
}

func (s *Stack) usdc() stellarsim.Asset {
	return stellarsim.Asset{Code: s.Info.Assets[0].Code, Issuer: s.Info.Assets[0].Issuer}
}

func itemCount(t *testing.T, s *Stack) int {
	t.Helper()
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.Info.DynamoDBEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	out, err := db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(s.Info.Table)})
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	n := 0
	for _, it := range out.Items {
		// Channel leases, the channel calendar and the lasting records share the table; they are
		// not transfer items.
		if pk, ok := it[dynamo.AttrPK].(*types.AttributeValueMemberS); ok &&
			(strings.HasPrefix(pk.Value, dynamo.ChannelPrefix) || pk.Value == dynamo.ChannelTicketsKey ||
				strings.HasPrefix(pk.Value, dynamo.ArchivePrefix)) {
			continue
		}
		n++
	}
	return n
}

var hash64 = regexp.MustCompile(`^[0-9a-f]{64}$`)

// badChecksum changes the address's last character, which breaks its CRC16 checksum.
func badChecksum(addr string) string {
	last := byte('A')
	if addr[len(addr)-1] == 'A' {
		last = 'B'
	}
	return addr[:len(addr)-1] + string(last)
}

func TestWithdrawLandsOnceAndReplays(t *testing.T) {
	t.Parallel() // each test has its own stack on free ports; they wait on ledgers, not the CPU
	s := startStack(t)
	wallet := s.Info.Wallets[0].Account
	before, _ := s.Network.Balance(wallet, s.usdc())

	first := post(t, s, "order-00000001", withdraw(wallet, "12.50"))
	if first.status != 200 || !hash64.MatchString(fmt.Sprint(first.body["transactionHash"])) || first.body["replayed"] != false {
		t.Fatalf("first = %d %v", first.status, first.body)
	}
	hash := first.body["transactionHash"].(string)
	tx, ok := s.Network.Transaction(hash)
	if !ok || tx.Status != "SUCCESS" {
		t.Fatalf("the network reports %+v, %v for %s", tx, ok, hash)
	}
	after, _ := s.Network.Balance(wallet, s.usdc())
	if after-before != 125_000_000 {
		t.Fatalf("wallet balance moved by %d stroops, want 125000000", after-before)
	}

	again := post(t, s, "order-00000001", withdraw(strings.ToLower(wallet), "012.5"))
	if again.status != 200 || again.body["transactionHash"] != hash || again.body["replayed"] != true || again.header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay = %d %v %v", again.status, again.body, again.header)
	}
	conflict := post(t, s, "order-00000001", withdraw(wallet, "13"))
	if conflict.status != 409 || conflict.body["code"] != "IDEMPOTENCY_KEY_CONFLICT" {
		t.Fatalf("conflict = %d %v", conflict.status, conflict.body)
	}
	if n := len(transfersApplied(s)); n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}

	req, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+wallet+"/transfers/order-00000001", nil)
	view := do(t, req)
	if view.status != 200 || view.body["status"] != "success" || view.body["transactionHash"] != hash {
		t.Fatalf("view = %d %v", view.status, view.body)
	}

	// The wallet's history (the embedded DynamoDB's gsi2) lists the transfer once; another
	// wallet's is empty.
	req, _ = http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+strings.ToLower(wallet)+"/transfers?limit=5", nil)
	history := do(t, req)
	items, _ := history.body["items"].([]any)
	if history.status != 200 || len(items) != 1 || history.body["nextCursor"] != nil {
		t.Fatalf("history = %d %v", history.status, history.body)
	}
	item := items[0].(map[string]any)
	if item["idempotencyKey"] != "order-00000001" || item["status"] != "success" || item["transactionHash"] != hash ||
		item["amount"] != "12.5" || item["asset"] != "USDC" || item["operationType"] != "withdraw" || item["createdAt"] == nil {
		t.Fatalf("history item %v", item)
	}
	req, _ = http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+s.Info.Wallets[1].Account+"/transfers", nil)
	if other := do(t, req); other.status != 200 || len(other.body["items"].([]any)) != 0 {
		t.Fatalf("another wallet's history = %d %v", other.status, other.body)
	}
}

func TestConcurrentIdenticalRequestsLandOnce(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	wallet := s.Info.Wallets[1].Account
	var wg sync.WaitGroup
	replies := make([]reply, 8)
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			replies[i] = post(t, s, "concurrent-0001", withdraw(wallet, "1"))
		}()
	}
	wg.Wait()
	fresh := 0
	for i, r := range replies {
		if r.status != 200 || r.body["transactionHash"] != replies[0].body["transactionHash"] {
			t.Fatalf("reply %d = %d %v; reply 0 = %v", i, r.status, r.body, replies[0].body)
		}
		if r.body["replayed"] == false {
			fresh++
		}
	}
	if fresh != 1 || len(transfersApplied(s)) != 1 {
		t.Fatalf("fresh answers %d, applied %d; want 1 and 1", fresh, len(transfersApplied(s)))
	}
}

func TestBadInputIsRefusedAndNothingIsWritten(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	wallet := s.Info.Wallets[2].Account
	for _, tc := range []struct {
		name, key, body string
		status          int
		code            string
	}{
		{"no key", "", withdraw(wallet, "1"), 400, "IDEMPOTENCY_KEY_MISSING"},
		{"short key", "short", withdraw(wallet, "1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"bad key characters", "bad key!!", withdraw(wallet, "1"), 400, "IDEMPOTENCY_KEY_INVALID"},
		{"malformed JSON", "bad-input-01", `{"operationType":`, 400, "REQUEST_INVALID"},
		{"unknown field", "bad-input-02", `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":"x"}`, 400, "REQUEST_INVALID"},
		{"amount as a number", "bad-input-03", `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":1,"asset":"USDC"}`, 400, "REQUEST_INVALID"},
		{"bad wallet checksum", "bad-input-04", withdraw(badChecksum(wallet), "1"), 422, "INVALID_ADDRESS"},
		{"negative amount", "bad-input-05", withdraw(wallet, "-1"), 422, "INVALID_AMOUNT"},
		{"exponent amount", "bad-input-06", withdraw(wallet, "1e3"), 422, "INVALID_AMOUNT"},
		{"eight decimals", "bad-input-07", withdraw(wallet, "0.00000001"), 422, "INVALID_AMOUNT"},
		{"unknown asset", "bad-input-08", strings.Replace(withdraw(wallet, "1"), "USDC", "BTC", 1), 422, "INVALID_ASSET"},
		{"unknown operation", "bad-input-09", strings.Replace(withdraw(wallet, "1"), "withdraw", "steal", 1), 422, "OPERATION_NOT_SUPPORTED"},
		{"deposit to an account vault", "bad-input-10", strings.Replace(withdraw(wallet, "1"), "withdraw", "deposit", 1), 422, "OPERATION_NOT_SUPPORTED"},
	} {
		r := post(t, s, tc.key, tc.body)
		if r.status != tc.status || r.body["code"] != tc.code || r.header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %v, want %d %s as problem+json", tc.name, r.status, r.body, tc.status, tc.code)
		}
	}
	if n := itemCount(t, s); n != 0 {
		t.Fatalf("%d items written for bad input, want 0", n)
	}
	if n := len(transferEnvelopes(s)); n != 0 {
		t.Fatalf("%d envelopes sent for bad input, want 0", n)
	}
}

// What the banner of `make run` prints answers: the network admin address lists its routes, this
// stack's among them, and the embedded DynamoDB lists the table (`aws dynamodb list-tables`).
func TestBannerAddressesAnswer(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	var index struct {
		Routes []stellarsim.AdminRoute
		Faults []stellarsim.FaultKind
	}
	resp, err := http.Get(s.Info.AdminURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&index); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", s.Info.AdminURL, resp.StatusCode, err)
	}
	listed := false
	for _, r := range index.Routes {
		listed = listed || r.Method == "GET" && r.Path == "/_sim/stack"
	}
	if !listed || len(index.Faults) == 0 {
		t.Errorf("GET %s = %+v, want the routes with /_sim/stack and the fault kinds", s.Info.AdminURL, index)
	}
	if r := do(t, mustRequest(t, http.MethodGet, s.Info.AdminURL+"stack")); r.status != 200 || r.body["vault"] == nil {
		t.Errorf("GET %sstack = %d %v", s.Info.AdminURL, r.status, r.body)
	} else if fee, _ := r.body["feeAccount"].(map[string]any); fee["account"] != s.Info.FeeAccount.Account || s.Info.FeeAccount.Account == "" ||
		fee["balances"].(map[string]any)["XLM"] == nil {
		t.Errorf("GET %sstack: feeAccount = %v, want %s with its XLM (alarm fee-account-xlm-low)", s.Info.AdminURL, fee, s.Info.FeeAccount.Account)
	}
	db := dynamodb.New(dynamodb.Options{Region: "us-east-1", BaseEndpoint: aws.String(s.Info.DynamoDBEndpoint),
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", "")})
	out, err := db.ListTables(context.Background(), &dynamodb.ListTablesInput{})
	if err != nil || len(out.TableNames) != 1 || out.TableNames[0] != s.Info.Table {
		t.Errorf("ListTables = %v, %v; want [%s]", out, err, s.Info.Table)
	}
}

func mustRequest(t *testing.T, method, url string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// A port already taken is reported with the variable that moves the server (README.md, "The
// local stack"): `make run` beside another stack fails with DYNAMODB_ADDR=... in its message.
func TestBusyPortNamesItsVariable(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for name, o := range map[string]Options{
		"DYNAMODB_ADDR": {DynamoAddr: taken.Addr().String()},
		"STELLAR_ADDR":  {StellarAddr: taken.Addr().String()},
	} {
		s, err := Start(context.Background(), o)
		if err == nil {
			_ = s.Close()
			t.Fatalf("Start on the taken port %s (%s) succeeded", taken.Addr(), name)
		}
		if msg := err.Error(); !strings.Contains(msg, name+"=127.0.0.1:<port> this listener") || !strings.Contains(msg, "PORT_BASE=<port> make run") || !strings.Contains(msg, taken.Addr().String()) {
			t.Errorf("%s taken: %q does not name the variable and the address", name, msg)
		}
	}
}
