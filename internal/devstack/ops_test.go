package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// Operating an in-doubt transfer, on a stack started here: an in-doubt transfer is alerted, listed, refused
// a wrong hash and a premature discard, then settled by the sweep once the network heals, and the
// gauge returns to 0.

// watched is a log sink that wakes waiters on every write.
type watched struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	wake chan struct{}
}

func newWatched() *watched { return &watched{wake: make(chan struct{}, 1)} }

func (w *watched) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return n, err
}

func (w *watched) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.buf.Bytes())
}

// waitLine waits (up to limit, never sleeping) for a line after offset matching re and returns
// it and the offset after it.
func (w *watched) waitLine(t *testing.T, re *regexp.Regexp, offset int, limit time.Duration) (string, int) {
	t.Helper()
	timeout := time.NewTimer(limit)
	defer timeout.Stop()
	for {
		b := w.bytes()
		for _, line := range strings.SplitAfter(string(b[offset:]), "\n") {
			if strings.HasSuffix(line, "\n") && re.MatchString(line) {
				return line, offset + strings.Index(string(b[offset:]), line) + len(line)
			}
		}
		select {
		case <-w.wake:
		case <-timeout.C:
			t.Fatalf("no line matching %s within %v", re, limit)
		}
	}
}

// invoke calls a function through the stack's Lambda Invoke API and returns the status, the
// X-Amz-Function-Error header and the decoded body.
func invoke(t *testing.T, s *Stack, function, payload string) (int, string, map[string]any) {
	t.Helper()
	resp, err := http.Post(s.Info.LambdaURL+"/2015-03-31/functions/"+function+"/invocations", "application/json", strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("%s %s: body %q: %v", function, payload, raw, err)
	}
	return resp.StatusCode, resp.Header.Get("X-Amz-Function-Error"), body
}

func TestInDoubtIsAlertedListedGuardedAndSweptAfterTheNetworkHeals(t *testing.T) {
	t.Parallel()
	logs, emf := newWatched(), newWatched()
	env := map[string]string{
		"TRANSFER_ORCHESTRATION_TIMEOUT_MS": "3000", "TRANSFER_PROOF_WINDOW_MS": "1000", "TRANSFER_MIN_VALIDITY_MS": "2500", "CHANNEL_COUNT": "0",
	}
	s, err := Start(context.Background(), Options{
		LedgerInterval: time.Second, Getenv: func(k string) string { return env[k] },
		Logger: logging.New(logs, slog.LevelInfo),
		Ops:    OpsOptions{SweepInterval: 200 * time.Millisecond, Metrics: emf},
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		_ = s.Close()
		logtest.AssertNoSecrets(t, logs.bytes())
	})
	wallet := s.Info.Wallets[0].Account

	// The send's answer is lost and no ledger closes: the envelope may or may not land.
	s.Network.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	s.Network.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultStall})
	r := post(t, s, "doubtful-0001", withdraw(wallet, "3"))
	answered := time.Now()
	if r.status != 409 || r.body["code"] != "TRANSFER_IN_DOUBT" {
		t.Fatalf("transfer = %d %v, want 409 TRANSFER_IN_DOUBT", r.status, r.body)
	}
	line, off := logs.waitLine(t, regexp.MustCompile(`"alert":"transfer-in-doubt".*"requestId"|"requestId".*"alert":"transfer-in-doubt"`), 0, 10*time.Second)
	t.Logf("alert line %v after the 409", time.Since(answered).Round(time.Millisecond))
	var alertLine map[string]any
	_ = json.Unmarshal([]byte(line), &alertLine)
	storeKey, _ := alertLine["storeKey"].(string)
	if alertLine["level"] != "ERROR" || alertLine["walletAddress"] != wallet || alertLine["idempotencyKey"] != "doubtful-0001" ||
		alertLine["amount"] != "3" || alertLine["maxTime"] == nil || !strings.HasPrefix(storeKey, "transfer:") || alertLine["innerHash"] == "" {
		t.Fatalf("alert line %v", alertLine)
	}
	if _, has := alertLine["fingerprint"]; has {
		t.Fatal("the alert shows the fingerprint")
	}

	status, fnErr, list := invoke(t, s, reconcileFunction, `{"action":"list"}`)
	items, _ := list["items"].([]any)
	if status != 200 || fnErr != "" || len(items) != 1 || items[0].(map[string]any)["storeKey"] != storeKey {
		t.Fatalf("list = %d %q %v", status, fnErr, list)
	}
	item := items[0].(map[string]any)
	if chain := item["chain"].(map[string]any); chain["status"] != "NOT_FOUND" || chain["canStillLand"] != true {
		t.Fatalf("chain while stalled: %v", chain)
	}
	// The read-only operators' function lists the same queue and answers a write with a problem.
	status, fnErr, readerList := invoke(t, s, readerFunction, `{"action":"list"}`)
	if items, _ := readerList["items"].([]any); status != 200 || fnErr != "" || len(items) != 1 || items[0].(map[string]any)["storeKey"] != storeKey {
		t.Fatalf("%s list = %d %q %v", readerFunction, status, fnErr, readerList)
	}
	status, fnErr, problem := invoke(t, s, readerFunction, `{"action":"resolve","storeKey":"`+storeKey+`","discard":true,"force":true,"reason":"test","innerHash":"`+item["innerHash"].(string)+`","operator":"test"}`)
	if status != 200 || fnErr != "" || problem["code"] != "ACTION_NOT_ALLOWED" || problem["status"] != float64(403) {
		t.Fatalf("%s forced discard = %d %q %v, want the problem ACTION_NOT_ALLOWED", readerFunction, status, fnErr, problem)
	}

	wrong := strings.Repeat("ab", 32)
	_, fnErr, body := invoke(t, s, reconcileFunction, `{"action":"resolve","storeKey":"`+storeKey+`","transactionHash":"`+wrong+`","operator":"test"}`)
	if fnErr != "" || problemCode(body) != "HASH_MISMATCH" {
		t.Fatalf("resolve with a wrong hash = %q %v", fnErr, body)
	}
	for _, extra := range []string{``, `,"force":true,"reason":"test"`} {
		// Not on the ledger and it can still land or expire: not even a forced "landed".
		_, fnErr, body = invoke(t, s, reconcileFunction, `{"action":"resolve","storeKey":"`+storeKey+`","transactionHash":"`+item["innerHash"].(string)+`","operator":"test"`+extra+`}`)
		if fnErr != "" || problemCode(body) != "STILL_CAN_LAND" {
			t.Fatalf("resolve with an unlanded hash%s = %q %v", extra, fnErr, body)
		}
	}
	for _, extra := range []string{``, `,"force":true,"reason":"test","innerHash":"` + item["innerHash"].(string) + `"`} {
		_, fnErr, body = invoke(t, s, reconcileFunction, `{"action":"resolve","storeKey":"`+storeKey+`","discard":true,"operator":"test"`+extra+`}`)
		if fnErr != "" || problemCode(body) != "STILL_CAN_LAND" {
			t.Fatalf("discard%s while it can still land = %q %v", extra, fnErr, body)
		}
	}
	_, _, got := invoke(t, s, reconcileFunction, `{"action":"get","storeKey":"`+storeKey+`"}`)
	if got["item"].(map[string]any)["status"] != "in_doubt" {
		t.Fatalf("after the refusals: %v", got)
	}
	if _, off := emf.waitLine(t, regexp.MustCompile(`"transfer_orchestration_in_doubt":1[,}]`), 0, 10*time.Second); off == 0 {
		t.Fatal("no gauge at 1")
	}
	// The sweep also writes the vault's balances (wiring.Watch), read from the local network.
	emf.waitLine(t, regexp.MustCompile(`"account":"vault","asset":"USDC".*"transfer_orchestration_balance":[1-9]`), 0, 10*time.Second)

	// The network heals: ledgers close again, the sweep (no operator) settles the transfer.
	s.Network.ClearFaults()
	line, _ = logs.waitLine(t, regexp.MustCompile(`"alert":"transfer-in-doubt-resolved"`), off, 20*time.Second)
	var resolved map[string]any
	_ = json.Unmarshal([]byte(line), &resolved)
	if resolved["storeKey"] != storeKey || (resolved["resolution"] != "released" && resolved["resolution"] != "replayable") {
		t.Fatalf("resolved line %v", resolved)
	}
	if _, has := resolved["audit"]; has {
		t.Fatalf("the sweep's resolution has an operator audit: %v", resolved)
	}
	// GET tells what became of it: a landed transfer from its item, a released one from its
	// lasting record (the item is gone), "released" and outside the replay window.
	req, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+"/wallets/"+wallet+"/transfers/doubtful-0001", nil)
	view := do(t, req)
	switch resolved["resolution"] {
	case "released":
		if view.status != http.StatusOK || view.body["status"] != "released" || view.body["outsideReplayWindow"] != true {
			t.Fatalf("GET of the released transfer = %d %v", view.status, view.body)
		}
	default:
		if view.status != http.StatusOK || view.body["status"] != "success" || view.body["outsideReplayWindow"] != nil {
			t.Fatalf("GET of the landed transfer = %d %v", view.status, view.body)
		}
	}
	emfText := string(emf.bytes())
	last := strings.LastIndex(emfText, `"transfer_orchestration_in_doubt":1`)
	emf.waitLine(t, regexp.MustCompile(`"transfer_orchestration_in_doubt":0[,}]`), last+1, 10*time.Second)
	status, _, list = invoke(t, s, reconcileFunction, `{"action":"list"}`)
	if items, _ := list["items"].([]any); status != 200 || len(items) != 0 {
		t.Fatalf("list after the sweep = %v", list)
	}
	if strings.Contains(string(emf.bytes()), `"transfer_orchestration_total":1`) == false {
		t.Fatalf("the API wrote no transfer metric: %s", emf.bytes())
	}
}

func TestInvokeAPI(t *testing.T) {
	t.Parallel()
	s := startStack(t)
	status, fnErr, body := invoke(t, s, reconcileFunction, `{"action":"sweep"}`)
	if status != 200 || fnErr != "" || body["action"] != "sweep" || body["inDoubtRemaining"] != float64(0) {
		t.Fatalf("sweep = %d %q %v", status, fnErr, body)
	}
	_, fnErr, body = invoke(t, s, "arn:aws:lambda:us-east-1:000000000000:function:"+reconcileFunction, `{"action":"nope"}`)
	if fnErr != "" || problemCode(body) != "UNKNOWN_ACTION" || body["detail"] == "" || body["type"] == "" {
		t.Fatalf("unknown action = %q %v", fnErr, body)
	}
	// The local stack runs with channel accounts, created at start: "channels" lists them.
	status, fnErr, body = invoke(t, s, reconcileFunction, `{"action":"channels"}`)
	if chans, _ := body["channels"].([]any); status != 200 || fnErr != "" || len(chans) != len(s.Info.Channels) || len(chans) == 0 ||
		chans[0].(map[string]any)["created"] != false {
		t.Fatalf("channels = %d %q %v (stack channels %v)", status, fnErr, body, s.Info.Channels)
	}
	// Data after the payload's object is refused by both reconcile functions: the Invoke API hands
	// them every byte (README.md, "Operating it": the payload is one JSON object).
	for _, fn := range []string{reconcileFunction, readerFunction} {
		for _, p := range []string{`{"action":"list","limit":20}{}`, `{"action":"list"} {"action":"sweep"}`} {
			status, fnErr, body = invoke(t, s, fn, p)
			if status != 200 || fnErr != "" || problemCode(body) != "BAD_REQUEST" || body["status"] != float64(400) {
				t.Fatalf("%s %s = %d %q %v, want the problem BAD_REQUEST", fn, p, status, fnErr, body)
			}
		}
	}
	for _, action := range []string{"sweep", "channels"} {
		status, fnErr, body = invoke(t, s, readerFunction, `{"action":"`+action+`"}`)
		if status != 200 || fnErr != "" || body["code"] != "ACTION_NOT_ALLOWED" || body["action"] != action {
			t.Fatalf("%s %s = %d %q %v, want the problem ACTION_NOT_ALLOWED", readerFunction, action, status, fnErr, body)
		}
	}
	status, _, body = invoke(t, s, "NoSuchFunction", `{}`)
	if status != 404 || !strings.Contains(body["message"].(string), "Function not found") {
		t.Fatalf("unknown function = %d %v", status, body)
	}
	// The API function through the Invoke API, with an API Gateway HTTP API event.
	ev := `{"version":"2.0","routeKey":"GET /wallets/{walletAddress}/transfers/{idempotencyKey}","rawPath":"/wallets/` + s.Info.Wallets[0].Account +
		`/transfers/missing-0001","requestContext":{"http":{"method":"GET","path":"/wallets/` + s.Info.Wallets[0].Account + `/transfers/missing-0001"},"requestId":"r1"},"headers":{}}`
	status, fnErr, body = invoke(t, s, apiFunction, ev)
	if status != 200 || fnErr != "" || body["statusCode"] != float64(404) {
		t.Fatalf("ApiFunction = %d %q %v", status, fnErr, body)
	}
	// The alert function with an empty batch.
	status, fnErr, body = invoke(t, s, alertFunction, `{"Records":[]}`)
	if status != 200 || fnErr != "" || body["batchItemFailures"] == nil {
		t.Fatalf("AlertFunction = %d %q %v", status, fnErr, body)
	}
	req, _ := http.NewRequest(http.MethodPost, s.Info.LambdaURL+"/2015-03-31/functions/ReconcileFunction/invocations", strings.NewReader(`{"action":"list"}`))
	req.Header.Set("X-Amz-Invocation-Type", "DryRun")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("DryRun = %v %v", resp, err)
	}
	resp.Body.Close()
}

// problemCode is the code of a refused reconcile action's answer ({"problem":{"code":...}}), or "".
func problemCode(body map[string]any) string {
	code, _ := body["code"].(string)
	return code
}
