package devstack

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// An async payout end to end on the local stack, as README.md's "Asynchronous transfers" walks it
// with `make run`: subscribed to the settlement events first, the client posts with Prefer:
// respond-async and is answered 202 with Location at once; the in-process queue hands the message
// to SubmitterFunction's handler, which pays the wallet; the Location's GET then shows success, the
// alert function publishes exactly one "Transfer Settled" event for it (README.md, "Settlement
// events", the detail's fields), the wallet's history (README.md, "A wallet's history") lists it
// first, and a repeat of the POST replays it (200) without another event.
func TestAsyncTransferSettlesThroughTheQueue(t *testing.T) {
	s := startStack(t)
	wallet := s.Info.Wallets[0].Account
	key := "devstack-async-0001"
	// An earlier synchronous transfer of the wallet: the history must list the async one before it.
	if earlier := post(t, s, "devstack-sync-0001", withdraw(wallet, "1")); earlier.status != http.StatusOK {
		t.Fatalf("POST (sync) = %d %v", earlier.status, earlier.body)
	}
	before, err := s.Network.Balance(wallet, s.usdc())
	if err != nil {
		t.Fatal(err)
	}
	stream := openEvents(t, s.Info.EventsURL) // subscribed before the POST: its event cannot be missed
	postAsync := func() reply {
		req, _ := http.NewRequest(http.MethodPost, s.Info.APIURL+"/transfers", strings.NewReader(withdraw(wallet, "3.5")))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Prefer", "respond-async")
		return do(t, req)
	}
	accepted := postAsync()
	location := "/wallets/" + wallet + "/transfers/" + key
	if accepted.status != http.StatusAccepted || accepted.header.Get("Location") != location ||
		accepted.header.Get("Preference-Applied") != "respond-async" || !maps.Equal(accepted.body, map[string]any{"status": "pending"}) {
		t.Fatalf("POST (respond-async) = %d %v %v", accepted.status, accepted.header, accepted.body)
	}
	getLocation := func() reply {
		req, _ := http.NewRequest(http.MethodGet, s.Info.APIURL+location, nil)
		return do(t, req)
	}
	// At once: still queued or running (exactly {"status":"pending"} and its createdAt), or, on a
	// fast machine, already settled (checked against the final view below).
	early := getLocation()
	if early.status != http.StatusOK || (early.body["status"] != "pending" && early.body["status"] != "success") ||
		(early.body["status"] == "pending" && (len(early.body) != 2 || early.body["createdAt"] == nil)) {
		t.Fatalf("GET %s at once = %d %v, want pending or success", location, early.status, early.body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.ops.submit.waitRuns(ctx, 1); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	view := getLocation()
	hash, _ := view.body["transactionHash"].(string)
	ledger, _ := view.body["ledger"].(float64)
	created, _ := view.body["createdAt"].(string)
	if view.status != http.StatusOK || !hash64.MatchString(hash) || ledger < 1 || created == "" ||
		!maps.Equal(view.body, map[string]any{"status": "success", "transactionHash": hash, "ledger": ledger, "createdAt": created}) {
		t.Fatalf("GET %s = %d %v", location, view.status, view.body)
	}
	if early.body["status"] == "success" && !maps.Equal(early.body, view.body) {
		t.Fatalf("GET at once %v, later %v", early.body, view.body)
	}
	bal, err := s.Network.Balance(wallet, s.usdc())
	if err != nil || bal-before != 35_000_000 {
		t.Fatalf("the wallet gained %d stroops of USDC (%v), want 3.5 USDC", bal-before, err)
	}

	// Its event: the only other one the stream may carry first is the earlier transfer's.
	var ev sseMessage
	var d map[string]any
	for {
		m := stream.next(t)
		d = nil
		if err := json.Unmarshal(m.data.Detail, &d); err != nil {
			t.Fatalf("detail %s: %v", m.data.Detail, err)
		}
		if d["idempotencyKey"] == key {
			ev = m
			break
		}
		if d["idempotencyKey"] != "devstack-sync-0001" {
			t.Fatalf("an unexpected event before the transfer's: %s %s", m.kind, m.data.Detail)
		}
	}
	if ev.kind != "Transfer Settled" || ev.data.DetailType != "Transfer Settled" || ev.data.Source != "stellar-transfer-orchestrator" ||
		ev.data.Version != "0" || len(ev.data.ID) != 36 {
		t.Errorf("event %s %+v", ev.kind, ev.data)
	}
	documented := []string{"schemaVersion", "eventId", "walletAddress", "idempotencyKey", "status", "operationType", "amount", "asset",
		"transactionHash", "ledger", "code", "failingCode", "resultCodes", "feeCharged", "resolvedBy", "forced", "createdAt", "occurredAt", "memo", "muxedAccount"}
	for k := range d {
		if !slices.Contains(documented, k) {
			t.Errorf("detail field %q is not in README.md's schema", k)
		}
	}
	for _, k := range []string{"code", "failingCode", "resultCodes", "resolvedBy", "forced"} {
		if v, ok := d[k]; ok {
			t.Errorf("a success's detail carries %s = %v", k, v)
		}
	}
	for k, v := range map[string]any{
		"schemaVersion": float64(1), "walletAddress": wallet, "idempotencyKey": key, "status": "success", "operationType": "withdraw",
		"amount": "3.5", "asset": "USDC", "transactionHash": hash, "ledger": ledger,
	} {
		if d[k] != v {
			t.Errorf("detail %s = %v, want %v", k, d[k], v)
		}
	}
	if id, _ := d["eventId"].(string); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("detail eventId %q", id)
	}
	if fee, _ := d["feeCharged"].(float64); fee < 100 {
		t.Errorf("detail feeCharged %v, want the stroops charged (at least the base fee)", d["feeCharged"])
	}
	createdAt, occurredAt := detailTime(t, d, "createdAt"), detailTime(t, d, "occurredAt")
	if !createdAt.Before(occurredAt) || ev.data.Time != occurredAt.Truncate(time.Second).Format(time.RFC3339) {
		t.Errorf("createdAt %v, occurredAt %v, time %s", createdAt, occurredAt, ev.data.Time)
	}

	// The wallet's history: newest claim first, the same transfer as the GET and the event.
	hist := do(t, mustRequest(t, http.MethodGet, s.Info.APIURL+"/wallets/"+wallet+"/transfers?limit=20"))
	items, _ := hist.body["items"].([]any)
	if hist.status != http.StatusOK || len(items) != 2 || hist.body["nextCursor"] != nil {
		t.Fatalf("history = %d %v, want 2 items", hist.status, hist.body)
	}
	head, _ := items[0].(map[string]any)
	want := map[string]any{"idempotencyKey": key, "status": "success", "transactionHash": hash, "ledger": ledger,
		"operationType": "withdraw", "amount": "3.5", "asset": "USDC", "createdAt": head["createdAt"], "updatedAt": head["updatedAt"]}
	if !maps.Equal(head, want) || !detailTime(t, head, "createdAt").Equal(createdAt) || !detailTime(t, head, "updatedAt").Equal(occurredAt) {
		t.Errorf("history head %v, want %v (createdAt %v, updatedAt %v)", head, want, createdAt, occurredAt)
	}
	if second, _ := items[1].(map[string]any); second["idempotencyKey"] != "devstack-sync-0001" {
		t.Errorf("history second %v, want the earlier transfer", second)
	}

	again := postAsync()
	if again.status != 200 || again.body["replayed"] != true || again.body["transactionHash"] != hash {
		t.Fatalf("repeat = %d %v, want the replay", again.status, again.body)
	}
	if n := len(s.ops.queue.Drain()); n != 0 {
		t.Fatalf("%d messages left in the queue", n)
	}
	// The replay publishes nothing: the stream is in order, so any second event of the transfer
	// would come before the next transfer's.
	if next := post(t, s, "devstack-sync-0002", withdraw(wallet, "1")); next.status != http.StatusOK {
		t.Fatalf("POST (sync) = %d %v", next.status, next.body)
	}
	for {
		m := stream.next(t)
		var d struct{ IdempotencyKey string }
		_ = json.Unmarshal(m.data.Detail, &d)
		if d.IdempotencyKey == "devstack-sync-0002" {
			break
		}
		t.Errorf("another event before the next transfer's: %s %s", m.kind, m.data.Detail)
	}
}

// detailTime parses m[k] as RFC 3339 in UTC.
func detailTime(t *testing.T, m map[string]any, k string) time.Time {
	t.Helper()
	s, _ := m[k].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || !strings.HasSuffix(s, "Z") {
		t.Errorf("%s %q is not RFC 3339 UTC: %v", k, s, err)
	}
	return at
}
