package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// A wallet's history over the real store (internal/dynamo on minidyn, behind a request counter):
// a cursor the service did not write is the client's mistake, 400 CURSOR_INVALID, and costs no
// DynamoDB request; it is never the 503 STORE_UNAVAILABLE that DynamoDB's refusal of an oversized
// key would have become.

type historyRig struct {
	h       http.Handler
	counter *dynamotest.CountingClient
	next    string // the cursor the first page of one item issued
}

func newHistoryRig(t *testing.T) *historyRig {
	t.Helper()
	client, _ := dynamotest.Minidyn(t)
	counter := dynamotest.NewCountingClient(client)
	store := dynamotest.NewStore(t, counter)
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	// Keys of 9 characters: the issued cursor ends in a partial base64 group (unused bits).
	for i, key := range []string{"order-001", "order-002"} {
		created := at.Add(time.Duration(i) * time.Second)
		rec := transfer.Record{
			StoreKey: transfer.StoreKey(wallet, key), Status: transfer.StatusInFlight, Fingerprint: "fp", ClaimID: "claim-" + key,
			Request:   transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000},
			ClientKey: key, LeaseOwner: "owner", LeaseExpiresAt: created.Add(time.Minute), Version: 1, CreatedAt: created, UpdatedAt: created,
		}
		if _, won, err := store.Claim(context.Background(), rec, created); err != nil || !won {
			t.Fatalf("claim %s: %v %v", key, won, err)
		}
	}
	orch := &transfer.Orchestrator{Store: store, WalletHistory: store, Clock: vclock.New(at)}
	r := &historyRig{h: NewHandler(orch, StaticRules(testRules)), counter: counter}
	rec := r.get("/wallets/" + wallet + "/transfers?limit=1")
	var page HistoryResponse
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &page) != nil || page.NextCursor == "" {
		t.Fatalf("first page: %d %s", rec.Code, rec.Body)
	}
	r.next = page.NextCursor
	return r
}

func (r *historyRig) get(path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	r.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec
}

// forgedHistoryCursor is a cursor in the store's format naming wallet's key clientKey.
func forgedHistoryCursor(clientKey string) string {
	pk := transfer.StoreKey(wallet, clientKey)
	return base64.RawURLEncoding.EncodeToString([]byte(`{"gsi2sk":"2026-03-01T12:00:00.000Z#` + pk + `","pk":"` + pk + `"}`))
}

// cursorRefused asserts that GET with cursor is 400 CURSOR_INVALID and made no DynamoDB request.
func (r *historyRig) cursorRefused(t *testing.T, name, cursor string) {
	t.Helper()
	r.counter.Reset()
	rec := r.get("/wallets/" + wallet + "/transfers?limit=1&cursor=" + cursor)
	if rec.Code != http.StatusBadRequest {
		t.Errorf("%s: status %d %s, want 400 CURSOR_INVALID", name, rec.Code, rec.Body)
		return
	}
	var pd ProblemDetails
	if err := json.Unmarshal(rec.Body.Bytes(), &pd); err != nil || pd.Code != transfer.CodeCursorInvalid || pd.Classification != transfer.Terminal {
		t.Errorf("%s: %s, want CURSOR_INVALID, terminal", name, rec.Body)
	}
	if n := r.counter.Total(); n != 0 {
		t.Errorf("%s: %d DynamoDB requests, want 0", name, n)
	}
}

func TestHistoryCursorWithAThousandCharacterKeyIs400Not503(t *testing.T) {
	r := newHistoryRig(t)
	c := forgedHistoryCursor(strings.Repeat("k", 1000))
	if len(c) != 2798 {
		t.Fatalf("the forged cursor is %d characters, want 2,798", len(c))
	}
	r.cursorRefused(t, "a 1,000-character key", c)
}

func TestHistoryCursorKeyWithASpaceOrAccentIs400(t *testing.T) {
	r := newHistoryRig(t)
	r.cursorRefused(t, "a space", forgedHistoryCursor("order 0001"))
	r.cursorRefused(t, "é", forgedHistoryCursor("order-é001"))
}

func TestHistoryCursorEditedInItsUnusedLowBitsIs400(t *testing.T) {
	r := newHistoryRig(t)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	unused := map[int]int{2: 4, 3: 2}[len(r.next)%4]
	if unused == 0 {
		t.Fatalf("the issued cursor %q has no unused bits", r.next)
	}
	i := strings.IndexByte(alphabet, r.next[len(r.next)-1])
	edited := r.next[:len(r.next)-1] + string(alphabet[i^(1<<unused-1)])
	a, _ := base64.RawURLEncoding.DecodeString(r.next)
	if b, err := base64.RawURLEncoding.DecodeString(edited); err != nil || string(a) != string(b) {
		t.Fatalf("the edit changed the data a lenient decoder reads")
	}
	r.cursorRefused(t, "edited in its unused low bits", edited)
	// The cursor as issued pages on.
	r.counter.Reset()
	if rec := r.get("/wallets/" + wallet + "/transfers?limit=1&cursor=" + r.next); rec.Code != http.StatusOK {
		t.Fatalf("the issued cursor: %d %s", rec.Code, rec.Body)
	}
	if n := r.counter.Count("Query"); n != 1 {
		t.Errorf("the issued cursor made %d queries, want 1", n)
	}
}
