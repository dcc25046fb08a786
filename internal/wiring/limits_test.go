package wiring_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stellar-transfer/orchestrator/internal/devstack"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// limitRig is newRig's API function with LIMITS set, its clock kept for concurrent callers.
type limitRig struct {
	*rig
	clock *vclock.Clock
	st    *devstack.Stack
}

func newLimitRig(tb testing.TB, limits string, channels string) *limitRig {
	tb.Helper()
	var counting *dynamotest.CountingClient
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	env := map[string]string{"CHANNEL_COUNT": channels, "LIMITS": limits}
	st, err := devstack.Start(context.Background(), devstack.Options{
		Clock: clock, APIOnly: true, DemoWallets: 2,
		Getenv: func(k string) string { return env[k] },
		WrapDynamo: func(c *dynamodb.Client) dynamo.Client {
			counting = dynamotest.NewCountingClient(c)
			return counting
		},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	counting.Reset()
	return &limitRig{rig: &rig{svc: st.Service, cfg: st.Config, keys: st.Keys, db: counting, net: st.Network, wallet: st.Info.Wallets[0].Account},
		clock: clock, st: st}
}

// post sends POST /transfers of amount USDC to wallet under key through h, as API Gateway would.
func post(h http.Handler, wallet, key, amount string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/transfers", strings.NewReader(
		`{"operationType":"withdraw","walletAddress":"`+wallet+`","amount":"`+amount+`","asset":"USDC"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

type problemBody struct {
	Code     string `json:"code"`
	Limit    string `json:"limit"`
	LimitCap string `json:"limitCap"`
	Detail   string `json:"detail"`
}

func problemOf(t *testing.T, rec *httptest.ResponseRecorder) problemBody {
	t.Helper()
	var p problemBody
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	return p
}

// TestLimitsThroughTheAPI: on the local stack's API function with LIMITS, a transfer above the
// per-transfer maximum is 422 AMOUNT_ABOVE_LIMIT with no request to DynamoDB's writes; the claim
// that would pass the wallet's daily cap is 429 DAILY_LIMIT_EXCEEDED naming the wallet's limit, its
// cap and the next UTC midnight, with its key left free; another wallet still pays; a replay of a
// charged key at the cap still replays.
func TestLimitsThroughTheAPI(t *testing.T) {
	r := newLimitRig(t, `{"USDC":{"perTransfer":"50","walletDaily":"100","assetDaily":"120"}}`, "0")
	h := r.svc.Handler
	rec := post(h, r.wallet, "limit-api-above", "50.0000001")
	if p := problemOf(t, rec); rec.Code != 422 || p.Code != transfer.CodeAmountAboveLimit || p.Limit != "per-transfer" || p.LimitCap != "50" {
		t.Fatalf("above the maximum: %d %s", rec.Code, rec.Body)
	}
	if w := r.db.Writes(); w != 0 {
		t.Fatalf("a refused amount wrote %d items (%v)", w, r.db.Counts())
	}
	for i, amount := range []string{"50", "40"} {
		if rec := post(h, r.wallet, fmt.Sprintf("limit-api-%d", i), amount); rec.Code != 200 {
			t.Fatalf("transfer %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	rec = post(h, r.wallet, "limit-api-over", "10.0000001")
	p := problemOf(t, rec)
	now := r.clock.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if rec.Code != 429 || p.Code != transfer.CodeDailyLimitExceeded || p.Limit != "wallet" || p.LimitCap != "100" ||
		rec.Header().Get("Retry-After") != fmt.Sprint(int64((midnight.Sub(r.clock.Now())+time.Second-1)/time.Second)) ||
		!strings.Contains(p.Detail, midnight.Format(time.RFC3339)) {
		t.Fatalf("over the wallet's cap: %d %s Retry-After %q, want 429 naming the wallet's cap of 100 freeing at %v",
			rec.Code, rec.Body, rec.Header().Get("Retry-After"), midnight)
	}
	if _, err := r.svc.Store.Get(context.Background(), transfer.StoreKey(r.wallet, "limit-api-over")); err == nil {
		t.Fatal("the refused claim left an item on its key")
	}
	// The asset's cap is 120: 90 paid, so another wallet may pay 30 but not 30.0000001.
	other := r.st.Info.Wallets[1].Account
	if rec := post(h, other, "limit-api-other-1", "30.0000001"); rec.Code != 429 || problemOf(t, rec).Limit != "asset" {
		t.Fatalf("over the asset's cap: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, other, "limit-api-other-2", "30"); rec.Code != 200 {
		t.Fatalf("under the asset's cap: %d %s", rec.Code, rec.Body)
	}
	if rec := post(h, r.wallet, "limit-api-0", "50"); rec.Code != 200 || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("a replay at the cap: %d %s", rec.Code, rec.Body)
	}
}

// TestRequestsPerTransferWithLimits pins what the limits cost (README.md, "Configuration",
// LIMITS): the claim becomes one TransactWriteItems of the claim and its two counters (the
// wallet's and the asset's) instead of one PutItem, so a fresh transfer is still three write
// requests but five item writes, and a replay one request of three items.
func TestRequestsPerTransferWithLimits(t *testing.T) {
	r := newLimitRig(t, `{"USDC":{"walletDaily":"1000","assetDaily":"100000"}}`, "0")
	ctx := context.Background()
	in := r.input("count-limits-0001")
	if _, err := r.svc.Orchestrator.Transfer(ctx, in); err != nil {
		t.Fatal(err)
	}
	c := r.db.Counts()
	if c["TransactWriteItems"] != 1 || c[dynamotest.TransactItems] != 3 || c["PutItem"] != 2 || r.db.Writes() != 5 || r.db.WriteUnits() != 8 {
		t.Fatalf("a fresh transfer with limits made %v (%d item writes, %d write units), want one transaction of 3 items and 2 PutItem: 5 writes, 8 units",
			c, r.db.Writes(), r.db.WriteUnits())
	}
	t.Logf("fresh transfer with limits: %d requests %v, %d item writes, %d write units", r.db.Total(), c, r.db.Writes(), r.db.WriteUnits())
	r.db.Reset()
	if out, err := r.svc.Orchestrator.Transfer(ctx, in); err != nil || !out.Replayed {
		t.Fatal(out, err)
	}
	if c := r.db.Counts(); c["TransactWriteItems"] != 1 || c[dynamotest.TransactItems] != 3 || c["PutItem"] != 0 {
		t.Fatalf("a replay with limits made %v, want the one cancelled transaction (and minidyn's read back)", c)
	}
	t.Logf("replay with limits: %d requests %v, %d write units", r.db.Total(), r.db.Counts(), r.db.WriteUnits())
}

// TestLimitsHoldAcrossLambdas: callers that share nothing but the table, each through its own
// wiring.Build (one per caller, as Lambda runs them), post at the same instant; the asset's daily
// cap fits three of them. Exactly three claims are charged, whatever the ledger then does with them;
// a claim released busy (nothing sent) gives its charge back at once, a transfer that landed keeps
// it; every other caller is answered 429 DAILY_LIMIT_EXCEEDED with nothing left on its key, and
// what landed never passes the cap.
func TestLimitsHoldAcrossLambdas(t *testing.T) {
	const callers, fit = 8, 3
	r := newLimitRig(t, `{"USDC":{"assetDaily":"30"}}`, "0")
	var wg sync.WaitGroup
	var mu sync.Mutex
	answers := map[string]int{}
	release := r.clock.Hold()
	for i := range callers {
		svc, err := wiring.Build(wiring.Deps{Config: r.cfg, Getenv: func(string) string { return "" }, Dynamo: r.db,
			Keys: r.keys, Clock: r.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		r.clock.Go(&wg, func() {
			key := fmt.Sprintf("limit-lambda-%02d", i)
			rec := post(svc.Handler, r.st.Info.Wallets[i%2].Account, key, "10")
			code := fmt.Sprint(rec.Code)
			if rec.Code != 200 {
				code += " " + problemOf(t, rec).Code
			}
			if rec.Code == 429 {
				if _, err := svc.Store.Get(context.Background(), transfer.StoreKey(r.st.Info.Wallets[i%2].Account, key)); err == nil {
					t.Errorf("%s: refused, but its claim holds the key", key)
				}
			}
			mu.Lock()
			answers[code]++
			mu.Unlock()
		})
	}
	release()
	wg.Wait()
	charged := callers - answers["429 "+transfer.CodeDailyLimitExceeded]
	if charged != fit || answers["200"] < 1 || answers["200"]+answers["503 "+transfer.CodeChannelsBusy] != fit {
		t.Fatalf("answers %v: want exactly %d claims charged (landed or released busy), the rest 429", answers, fit)
	}
	day := r.clock.Now().UTC().Format(time.DateOnly)
	n, err := r.svc.Store.Counter(context.Background(), transfer.CounterPrefix+"asset:USDC:"+day)
	if landed := int64(answers["200"]); err != nil || n != landed*10*transfer.StroopsPerUnit {
		t.Fatalf("asset counter = %d, %v; want the %d landed charges of 10 (the released ones given back)", n, err, landed)
	}
	t.Logf("answers: %v", answers)
}
