package wiring_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// An address is read one way only, through the service as the Lambda assembles it (the real
// address parser, the orchestrator, minidyn, the local network): a wallet with line breaks inside decoded to the same
// account under another spelling (another store key: a second transfer under one
// Idempotency-Key) and failed untyped (503) on the classic path, opening the circuit breaker for
// every client after five; "AAA\nA" made strkey panic (500), in the body and in the GET path.
// Now each is 422 INVALID_ADDRESS: nothing stored, nothing sent, the breaker untouched.
func TestMalformedWalletsAreRefusedBeforeAnythingHappens(t *testing.T) {
	r := newRig(t)
	h := r.svc.Handler
	// Eight characters of line breaks keep the decoded length a whole number of bytes, so
	// strkey's canonical-form check (leftover bits) does not catch them: this one decoded.
	broken := r.wallet[:20] + "\r\n\r\n\r\n\r\n" + r.wallet[20:]
	do := func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", "order-0001")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var problem map[string]any
		_ = json.Unmarshal(rec.Body.Bytes(), &problem)
		return rec.Code, problem
	}
	withdraw := func(wallet string) string {
		b, _ := json.Marshal(map[string]string{"operationType": "withdraw", "walletAddress": wallet, "amount": "1", "asset": "USDC"})
		return string(b)
	}
	wallets := []string{broken, "AAA\nA", "AAA\r\nA", r.wallet + "\n" + r.wallet[:4]}
	for _, at := range []int{1, 10, 30, 40, 55} { // five or more would open the breaker, were they failures
		wallets = append(wallets, r.wallet[:at]+strings.Repeat("\n", 8)+r.wallet[at:])
	}
	for _, wallet := range wallets {
		status, p := do(http.MethodPost, "/transfers", withdraw(wallet))
		if status != http.StatusUnprocessableEntity || p["code"] != "INVALID_ADDRESS" {
			t.Errorf("POST with wallet %q: %d %v, want 422 INVALID_ADDRESS", wallet, status, p)
		}
	}
	for _, path := range []string{"/wallets/AAA%0AA/transfers/order-0001", "/wallets/AAA%0D%0AA/transfers/order-0001",
		"/wallets/" + r.wallet[:20] + strings.Repeat("%0D%0A", 4) + r.wallet[20:] + "/transfers/order-0001"} {
		status, p := do(http.MethodGet, path, "")
		if status < 400 || status > 499 || p["code"] == nil || p["code"] == "" {
			t.Errorf("GET %s: %d %v, want a 4xx with a code", path, status, p)
		}
	}
	if n := r.db.Total(); n != 0 {
		t.Errorf("malformed wallets made %d DynamoDB requests (%v), want none", n, r.db.Counts())
	}
	if n := len(r.net.Envelopes()); n != 0 {
		t.Errorf("malformed wallets sent %d envelopes, want none", n)
	}
	if open, _ := r.svc.Orchestrator.Breaker.Open(); open {
		t.Error("malformed wallets opened the circuit breaker")
	}
	// The same key with the wallet spelled properly is a fresh transfer that lands.
	if status, p := do(http.MethodPost, "/transfers", withdraw(r.wallet)); status != http.StatusOK {
		t.Fatalf("a good transfer after them: %d %v", status, p)
	}
}
