package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/stellar/go-stellar-sdk/keypair"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"

type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }
func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return ctx.Err()
}

// ledger answers Lookup from a table by inner hash; unknown hashes are NOT_FOUND with the
// network's current state.
type ledger struct {
	mu       sync.Mutex
	landed   map[string]transfer.Lookup
	latest   uint32
	closedAt time.Time
	oldest   uint32
	err      error
	done     []string
}

func (l *ledger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return transfer.Lookup{}, l.err
	}
	if lk, ok := l.landed[env.InnerHash]; ok {
		lk.LatestLedger, lk.LatestLedgerCloseTime, lk.OldestLedger = l.latest, l.closedAt, l.oldest
		return lk, nil
	}
	return transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: l.latest, LatestLedgerCloseTime: l.closedAt, OldestLedger: l.oldest}, nil
}

func (l *ledger) Done(_ context.Context, env transfer.Envelope) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = append(l.done, env.InnerHash)
}

func (l *ledger) Prepare(context.Context, transfer.Request, transfer.Terms) (transfer.Envelope, error) {
	return transfer.Envelope{}, errors.New("not used")
}
func (l *ledger) Send(context.Context, transfer.Envelope) (transfer.SendResult, error) {
	return transfer.SendResult{}, errors.New("not used")
}

type gauge struct{ values []int }

func (g *gauge) InDoubtGauge(_ context.Context, n int) { g.values = append(g.values, n) }

type fixture struct {
	store  *dynamo.Store
	ledger *ledger
	clock  *clock
	gauge  *gauge
	svc    *reconcile.Service
	logs   *logtest.Buffer
	orch   *transfer.Orchestrator
	log    *slog.Logger
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	client, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, client)
	l := &ledger{landed: map[string]transfer.Lookup{}, latest: 100, closedAt: t0, oldest: 1}
	c := &clock{now: t0}
	log, logs := logtest.New(t)
	orch := &transfer.Orchestrator{Store: store, Ledger: l, Clock: c, Logger: log}
	g := &gauge{}
	svc := reconcile.New(reconcile.Config{Store: store, Settler: orch, Ledger: l, Gauge: g, Clock: c,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: log})
	return &fixture{store: store, ledger: l, clock: c, gauge: g, svc: svc, logs: logs, orch: orch, log: log}
}

func hashOf(name string, outer bool) string {
	h := strings.Repeat("0", 64-len(name)) + strings.ToLower(strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'f' || r >= '0' && r <= '9' {
			return r
		}
		return 'e'
	}, name))
	if outer {
		return strings.Replace(h, "0", "f", 1)
	}
	return h
}

// put writes a record for key in status (in_flight with a lease until leaseUntil, or in_doubt),
// with an envelope unless bare.
func (f *fixture) put(t *testing.T, key string, status transfer.Status, leaseUntil time.Time, bare bool) transfer.Record {
	t.Helper()
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, key), Status: transfer.StatusInFlight, Fingerprint: "secret-fingerprint",
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "12.5", Asset: "USDC", Stroops: 125_000_000},
		ClaimID: "claim-" + key, ClientKey: key, TraceID: "1-abc", LeaseOwner: "owner", LeaseExpiresAt: leaseUntil, Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
	if _, won, err := f.store.Claim(context.Background(), rec, t0); err != nil || !won {
		t.Fatalf("claim %s: %v %v", key, won, err)
	}
	if !bare {
		next := rec
		next.Envelope = &transfer.Envelope{XDR: "AAAA-signed", InnerHash: hashOf(key, false), OuterHash: hashOf(key, true),
			MaxTime: t0.Unix() + 30, SubmittedLedger: 50}
		next.Version++
		if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
			t.Fatal(err)
		}
		rec = next
	}
	if status == transfer.StatusInDoubt {
		next := transfer.InDoubtRecord(rec, "TRANSFER_TIMEOUT", t0.Add(time.Duration(len(key))*time.Second))
		if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
			t.Fatal(err)
		}
		rec = next
	}
	got, err := f.store.Get(context.Background(), rec.StoreKey)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func (f *fixture) land(rec transfer.Record, status transfer.LookupStatus, ledgerSeq uint32) {
	f.ledger.landed[rec.Envelope.InnerHash] = transfer.Lookup{Status: status, Hash: rec.Envelope.InnerHash, Ledger: ledgerSeq,
		ResultCodes: map[bool][]string{true: {"tx_failed", "op_no_trust"}}[status == transfer.LookupFailed]}
}

// afterMaxTime makes the network close a ledger after every test envelope's maxTime.
func (f *fixture) afterMaxTime() {
	f.ledger.latest, f.ledger.closedAt = 120, t0.Add(time.Minute)
}

func invocation(id string) context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: id})
}

// do invokes the Lambda handler with payload and returns the answer as JSON, or the code of the
// refusal (a Problem answer) or of the failure (the function error's type).
func do(t *testing.T, f *fixture, payload string) (map[string]any, string) {
	t.Helper()
	answer, err := f.svc.Answer(invocation("req-1"), json.RawMessage(payload))
	if r, ok := answer.(*reconcile.Problem); ok {
		if err != nil || r.Code == "" || r.Detail == "" {
			t.Fatalf("%s: refusal %+v with error %v", payload, r, err)
		}
		return nil, r.Code
	}
	if err != nil {
		var ie messages.InvokeResponse_Error
		if !errors.As(err, &ie) {
			t.Fatalf("%s: error %T %v is not a Lambda error", payload, err, err)
		}
		if ie.Message == "" {
			t.Fatalf("%s: error without a message", payload)
		}
		return nil, ie.Type
	}
	b, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret-fingerprint") || strings.Contains(string(b), "AAAA-signed") {
		t.Fatalf("the answer leaks the fingerprint or the XDR: %s", b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m, ""
}

func mustDo(t *testing.T, f *fixture, payload string) map[string]any {
	t.Helper()
	m, code := do(t, f, payload)
	if code != "" {
		t.Fatalf("%s: refused with %s", payload, code)
	}
	return m
}

func refused(t *testing.T, f *fixture, payload, want string) {
	t.Helper()
	if _, code := do(t, f, payload); code != want {
		t.Fatalf("%s: code %q, want %q", payload, code, want)
	}
}

func TestListPagesThroughTheInDoubtQueueWithTheChain(t *testing.T) {
	f := newFixture(t)
	a := f.put(t, "order-a1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.put(t, "order-bb2", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.put(t, "order-ccc3", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.put(t, "order-flight", transfer.StatusInFlight, t0.Add(time.Hour), false)
	f.land(a, transfer.LookupSuccess, 77)

	first := mustDo(t, f, `{"action":"list","limit":2}`)
	items := first["items"].([]any)
	if len(items) != 2 || first["cursor"] == nil {
		t.Fatalf("first page %v", first)
	}
	it := items[0].(map[string]any)
	chain := it["chain"].(map[string]any)
	if it["storeKey"] != a.StoreKey || it["walletAddress"] != wallet || it["idempotencyKey"] != "order-a1" || it["failingCode"] != "TRANSFER_TIMEOUT" ||
		it["innerHash"] != a.Envelope.InnerHash || it["amount"] != "12.5" || chain["status"] != "SUCCESS" || chain["ledger"] != float64(77) {
		t.Fatalf("item %v", it)
	}
	if _, ok := it["fingerprint"]; ok {
		t.Fatal("the fingerprint is shown")
	}
	second := mustDo(t, f, `{"action":"list","limit":2,"cursor":"`+first["cursor"].(string)+`"}`)
	if n := len(second["items"].([]any)); n != 1 || second["cursor"] != nil {
		t.Fatalf("second page %v", second)
	}
	refused(t, f, `{"action":"list","cursor":"!!"}`, reconcile.CodeBadRequest)
	refused(t, f, `{"action":"list","limit":101}`, reconcile.CodeBadRequest)
}

func TestGetShowsTheItemAndWhatTheChainSays(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-get1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	got := mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)["item"].(map[string]any)
	chain := got["chain"].(map[string]any)
	if got["status"] != "in_doubt" || got["outerHash"] != rec.Envelope.OuterHash || got["maxTime"] != float64(rec.Envelope.MaxTime) ||
		chain["status"] != "NOT_FOUND" || chain["canStillLand"] != true || chain["provenDead"] != false || chain["historyCovers"] != true {
		t.Fatalf("get = %v", got)
	}
	f.afterMaxTime()
	chain = mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)["item"].(map[string]any)["chain"].(map[string]any)
	if chain["provenDead"] != true || chain["canStillLand"] != false || chain["maxTimePassed"] != true {
		t.Fatalf("after maxTime: %v", chain)
	}
	f.ledger.err = errors.New("rpc down")
	chain = mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)["item"].(map[string]any)["chain"].(map[string]any)
	if chain["error"] == nil {
		t.Fatalf("a failed lookup is not shown: %v", chain)
	}
	refused(t, f, `{"action":"get","storeKey":"transfer:0000000000000000:nothing-here"}`, reconcile.CodeNotFound)
	refused(t, f, `{"action":"get","storeKey":"channel:GABC"}`, reconcile.CodeBadRequest)
	refused(t, f, `{"action":"get"}`, reconcile.CodeBadRequest)
}

func TestResolveWithAHash(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-res1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	key := rec.StoreKey
	resolve := func(hash, extra string) string {
		return `{"action":"resolve","storeKey":"` + key + `","transactionHash":"` + hash + `","operator":"alice"` + extra + `}`
	}
	refused(t, f, resolve(strings.Repeat("ab", 32), ""), reconcile.CodeHashMismatch)
	refused(t, f, resolve(strings.Repeat("ab", 32), `,"force":true,"reason":"sure"`), reconcile.CodeHashMismatch)
	refused(t, f, resolve("xyz", ""), reconcile.CodeBadRequest)
	// Not found and no ledger closed after maxTime: it can still land or expire, so not even a
	// forced "landed" is accepted (it could record a payment that never happens).
	refused(t, f, resolve(rec.Envelope.InnerHash, ""), reconcile.CodeStillCanLand)
	refused(t, f, resolve(rec.Envelope.InnerHash, `,"force":true,"reason":"I am sure"`), reconcile.CodeStillCanLand)
	refused(t, f, `{"action":"resolve","storeKey":"`+key+`","transactionHash":"`+rec.Envelope.InnerHash+`"}`, reconcile.CodeBadRequest) // no operator
	refused(t, f, resolve(rec.Envelope.InnerHash, `,"discard":true`), reconcile.CodeBadRequest)
	f.land(rec, transfer.LookupFailed, 80)
	refused(t, f, resolve(rec.Envelope.InnerHash, ""), reconcile.CodeTransactionFailed)
	refused(t, f, resolve(rec.Envelope.InnerHash, `,"force":true,"reason":"sure"`), reconcile.CodeTransactionFailed)

	f.land(rec, transfer.LookupSuccess, 81)
	got := mustDo(t, f, resolve(strings.ToUpper(rec.Envelope.OuterHash), ""))
	if got["resolution"] != "replayable" || got["transactionHash"] != rec.Envelope.InnerHash || got["ledger"] != float64(81) || got["forced"] != false {
		t.Fatalf("resolve = %v", got)
	}
	stored, err := f.store.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status != transfer.StatusReplayable || stored.Result.TransactionHash != rec.Envelope.InnerHash || stored.Audit == nil ||
		stored.Audit.Operator != "alice" || stored.Audit.RequestID != "req-1" || stored.Audit.Forced || stored.ExpiresAt != t0.Add(time.Hour).Unix() {
		t.Fatalf("stored %+v audit %+v", stored, stored.Audit)
	}
	if len(f.ledger.done) != 1 {
		t.Fatalf("Done called %d times", len(f.ledger.done))
	}
	refused(t, f, resolve(rec.Envelope.InnerHash, ""), reconcile.CodeNotInDoubt)
}

func TestResolveForcedAndProvenDead(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-force", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	payload := `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + rec.Envelope.InnerHash + `","operator":"bob","force":true`
	refused(t, f, payload+`}`, reconcile.CodeBadRequest) // force needs a reason
	dead := f.put(t, "order-dead", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.afterMaxTime()
	refused(t, f, `{"action":"resolve","storeKey":"`+dead.StoreKey+`","transactionHash":"`+dead.Envelope.InnerHash+`","operator":"bob","force":true,"reason":"x"}`, reconcile.CodeProvenDead)

	f.ledger.oldest = 90 // history no longer reaches the submission: the ledger cannot prove anything
	refused(t, f, `{"action":"resolve","storeKey":"`+rec.StoreKey+`","transactionHash":"`+rec.Envelope.InnerHash+`","operator":"bob"}`, reconcile.CodeNotLanded)
	got := mustDo(t, f, payload+`,"reason":"seen on stellar.expert in ledger 51"}`)
	if got["resolution"] != "replayable" || got["forced"] != true {
		t.Fatalf("forced resolve = %v", got)
	}
	stored, _ := f.store.Get(context.Background(), rec.StoreKey)
	if stored.Status != transfer.StatusReplayable || stored.Audit == nil || !stored.Audit.Forced || stored.Audit.Reason != "seen on stellar.expert in ledger 51" || stored.Audit.Action != "resolve" {
		t.Fatalf("stored %+v audit %+v", stored, stored.Audit)
	}
}

func TestDiscard(t *testing.T) {
	f := newFixture(t)
	live := f.put(t, "order-disc1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	landed := f.put(t, "order-disc2", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	discard := func(rec transfer.Record, extra string) string {
		return `{"action":"resolve","storeKey":"` + rec.StoreKey + `","discard":true,"operator":"carol"` + extra + `}`
	}
	// No ledger has closed after maxTime: the envelope can still land, forced or not.
	refused(t, f, discard(live, ""), reconcile.CodeStillCanLand)
	refused(t, f, discard(live, `,"force":true,"reason":"customer asked","innerHash":"`+live.Envelope.InnerHash+`"`), reconcile.CodeStillCanLand)

	f.land(landed, transfer.LookupSuccess, 90)
	refused(t, f, discard(landed, ""), reconcile.CodeLanded)
	if got, _ := f.store.Get(context.Background(), landed.StoreKey); got.Status != transfer.StatusReplayable {
		t.Fatalf("a landed transfer is %s after a refused discard, want replayable", got.Status)
	}

	f.afterMaxTime()
	got := mustDo(t, f, discard(live, ""))
	if got["resolution"] != "released" || got["forced"] != false {
		t.Fatalf("discard = %v", got)
	}
	if _, err := f.store.Get(context.Background(), live.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the discarded item is still there: %v", err)
	}

	gap := f.put(t, "order-disc3", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.ledger.oldest = 90
	refused(t, f, discard(gap, ""), reconcile.CodeNotProvenDead)
	refused(t, f, discard(gap, `,"force":true`), reconcile.CodeBadRequest)
	// A forced discard names the envelope it checked: none, or another, is refused.
	refused(t, f, discard(gap, `,"force":true,"reason":"RPC history expired; checked Horizon"`), reconcile.CodeBadRequest)
	refused(t, f, discard(gap, `,"force":true,"reason":"RPC history expired; checked Horizon","innerHash":"`+live.Envelope.InnerHash+`"`), reconcile.CodeHashMismatch)
	got = mustDo(t, f, discard(gap, `,"force":true,"reason":"RPC history expired; checked Horizon","innerHash":"`+gap.Envelope.InnerHash+`"`))
	if got["resolution"] != "released" || got["forced"] != true {
		t.Fatalf("forced discard = %v", got)
	}
	if _, err := f.store.Get(context.Background(), gap.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the force-discarded item is still there: %v", err)
	}
	refused(t, f, discard(gap, ""), reconcile.CodeNotFound)
}

func TestSweepSettlesWhatTheLedgerProves(t *testing.T) {
	f := newFixture(t)
	landed := f.put(t, "sweep-landed", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	failed := f.put(t, "sweep-failed", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.put(t, "sweep-dead", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.put(t, "sweep-bare-claim", transfer.StatusInFlight, t0.Add(-time.Minute), true)     // died before building: released
	f.put(t, "sweep-claim-pending", transfer.StatusInFlight, t0.Add(-time.Minute), false) // died after attaching: parked in_doubt
	live := f.put(t, "sweep-live-claim", transfer.StatusInFlight, t0.Add(time.Hour), true)
	f.land(landed, transfer.LookupSuccess, 60)
	f.land(failed, transfer.LookupFailed, 61)

	// Before maxTime: the dead one and the pending claim cannot be judged.
	got := mustDo(t, f, `{"action":"sweep"}`)
	want := map[string]map[string]float64{
		"inDoubt":       {"checked": 3, "landed": 1, "failed": 1, "unresolved": 1},
		"expiredClaims": {"checked": 2, "released": 1, "parkedInDoubt": 1},
	}
	for kind, counts := range want {
		c := got[kind].(map[string]any)
		for k, v := range counts {
			if c[k] != v {
				t.Errorf("%s.%s = %v, want %v (%v)", kind, k, c[k], v, c)
			}
		}
	}
	if got["inDoubtRemaining"] != float64(2) || got["partial"] != false || len(f.gauge.values) != 1 || f.gauge.values[0] != 2 {
		t.Fatalf("remaining %v, gauge %v", got["inDoubtRemaining"], f.gauge.values)
	}
	if rec, _ := f.store.Get(context.Background(), live.StoreKey); rec.Status != transfer.StatusInFlight || rec.Version != live.Version {
		t.Fatalf("the live claim was touched: %+v", rec)
	}

	// After a ledger closes past maxTime with the history covering: both remaining are released.
	f.afterMaxTime()
	got = mustDo(t, f, `{"action":"sweep"}`)
	if c := got["inDoubt"].(map[string]any); c["released"] != float64(2) || got["inDoubtRemaining"] != float64(0) {
		t.Fatalf("second sweep %v", got)
	}
	if f.gauge.values[1] != 0 {
		t.Fatalf("gauge %v, want it back to 0", f.gauge.values)
	}
}

func TestOtherActions(t *testing.T) {
	f := newFixture(t)
	refused(t, f, `{"action":"channels"}`, reconcile.CodeChannelsNotAvailable)
	refused(t, f, `{"action":"explode"}`, reconcile.CodeUnknownAction)

	log, _ := logtest.New(t)
	withChannels := func(fn func(context.Context) (any, error)) *reconcile.Service {
		return reconcile.New(reconcile.Config{Store: f.store, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
			KeyTTL: func() time.Duration { return time.Hour }, Logger: log, Channels: fn})
	}
	svc := withChannels(func(context.Context) (any, error) {
		return []map[string]any{{"account": "GCHANNEL1", "created": true}}, nil
	})
	raw, err := svc.Answer(context.Background(), json.RawMessage(`{"action":"channels"}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(raw); string(b) != `{"action":"channels","channels":[{"account":"GCHANNEL1","created":true}]}` {
		t.Fatalf("channels = %s", b)
	}
	svc = withChannels(func(context.Context) (any, error) { return nil, errors.New("sequence SECRETISH") })
	_, err = svc.Answer(context.Background(), json.RawMessage(`{"action":"channels"}`))
	var ie messages.InvokeResponse_Error
	if !errors.As(err, &ie) || ie.Type != reconcile.CodeChannelsFailed || strings.Contains(ie.Message, "SECRETISH") {
		t.Fatalf("channels failure = %v", err)
	}
	refused(t, f, `{}`, reconcile.CodeBadRequest)
	refused(t, f, `not json`, reconcile.CodeBadRequest)
	refused(t, f, `{"action":"list","colour":"red"}`, reconcile.CodeBadRequest)
	seed := keypair.MustRandom().Seed()
	for _, p := range []string{`{"` + seed + `":1}`, `{"action":"get","storeKey":"transfer:x:` + seed + `"}`} {
		answer, err := f.svc.Answer(context.Background(), json.RawMessage(p))
		r, ok := answer.(*reconcile.Problem)
		if err != nil || !ok || r.Code == "" || strings.Contains(strings.ToUpper(r.Detail), seed) {
			t.Errorf("%s: the refusal echoes the seed, or is not one: %+v, %v", p, answer, err)
		}
	}
}

func TestStoreFailuresAreTyped(t *testing.T) {
	log, _ := logtest.New(t)
	svc := reconcile.New(reconcile.Config{Store: brokenStore{}, Settler: nil, Ledger: &ledger{}, Gauge: &gauge{}, Clock: &clock{now: t0},
		KeyTTL: func() time.Duration { return time.Hour }, Logger: log})
	for _, p := range []string{`{"action":"list"}`, `{"action":"sweep"}`, `{"action":"get","storeKey":"transfer:0123456789abcdef:abcdefgh"}`} {
		_, err := svc.Answer(context.Background(), json.RawMessage(p))
		var ie messages.InvokeResponse_Error
		if !errors.As(err, &ie) || ie.Type != reconcile.CodeStoreUnavailable || strings.Contains(ie.Message, "boom") {
			t.Errorf("%s: %v", p, err)
		}
	}
}

type brokenStore struct{}

var errBoom = errors.New("boom: http://user:secret@dynamodb")

func (brokenStore) Get(context.Context, string) (transfer.Record, error) {
	return transfer.Record{}, errBoom
}
func (brokenStore) Replace(context.Context, transfer.Record, transfer.Condition) error {
	return errBoom
}
func (brokenStore) Delete(context.Context, string, transfer.Condition) error { return errBoom }
func (brokenStore) ListInDoubt(context.Context, int, string) ([]transfer.Record, string, error) {
	return nil, "", errBoom
}
func (brokenStore) ListExpiredClaims(context.Context, time.Time, int, string) ([]transfer.Record, string, error) {
	return nil, "", errBoom
}

// TestMisconfiguredReplayWindowIsSaid: with IDEMPOTENCY_KEY_TTL_MS under an hour, a discard (which
// settles through the orchestrator) answers CONFIGURATION_INVALID, not a ledger failure, and
// changes nothing.
func TestMisconfiguredReplayWindowIsSaid(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-ttl1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.afterMaxTime()
	f.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.KeyTTL = time.Minute
		return s
	}
	refused(t, f, `{"action":"resolve","storeKey":"`+rec.StoreKey+`","discard":true,"operator":"carol"}`, reconcile.CodeConfigurationInvalid)
	if got, err := f.store.Get(context.Background(), rec.StoreKey); err != nil || got.Version != rec.Version {
		t.Fatalf("the item changed: %+v, %v", got, err)
	}
}

// Every sweep runs Watch first, with a deadline, and writes the in-doubt gauge even at 0 (its
// alarm treats a missing gauge as breaching); a sweep that cannot read the index writes no gauge
// and fails (a function error, which the sweep's alarm counts), and still ran Watch.
func TestSweepWatchesAndAlwaysWritesTheGauge(t *testing.T) {
	log, _ := logtest.New(t)
	for _, broken := range []bool{false, true} {
		g := &gauge{}
		watched := 0
		cfg := reconcile.Config{Ledger: &ledger{}, Gauge: g, Clock: &clock{now: t0}, Logger: log,
			KeyTTL: func() time.Duration { return time.Hour },
			Watch: func(ctx context.Context) {
				if dl, ok := ctx.Deadline(); !ok || time.Until(dl) > reconcile.WatchTimeout {
					t.Errorf("Watch ran without its deadline")
				}
				watched++
			}}
		if broken {
			cfg.Store = brokenStore{}
		} else {
			f := newFixture(t)
			cfg.Store, cfg.Settler = f.store, f.orch
		}
		answer, err := reconcile.New(cfg).Answer(context.Background(), json.RawMessage(`{"action":"sweep"}`))
		var ie messages.InvokeResponse_Error
		switch {
		case watched != 1:
			t.Errorf("broken=%v: Watch ran %d times", broken, watched)
		case broken && (!errors.As(err, &ie) || ie.Type != reconcile.CodeStoreUnavailable || len(g.values) != 0):
			t.Errorf("broken store: %v, %v, gauge %v; want a STORE_UNAVAILABLE function error and no gauge", answer, err, g.values)
		case !broken && (err != nil || len(g.values) != 1 || g.values[0] != 0):
			t.Errorf("empty queue: %v, gauge %v; want the gauge at 0", err, g.values)
		}
	}
}

type strandedGauge struct{ values []int }

func (g *strandedGauge) QueuedStrandedGauge(_ context.Context, n int) { g.values = append(g.values, n) }

type sentQueue struct{ sent []transfer.QueueMessage }

func (q *sentQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	q.sent = append(q.sent, m)
	return nil
}

// A sweep with no queue (QUEUE_URL empty; README.md, "Configuration") leaves queued items alone
// but reports those older than the grace, which nothing will send: counted in the answer, one
// ERROR line per sweep with the count, and the count to the stranded gauge; none older, nothing
// said. Without Queued nothing is read; with a queue they are sent, none stranded.
func TestSweepWithoutAQueueReportsStrandedQueuedItems(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	var queued []transfer.Record
	for i, at := range []time.Time{t0, t0.Add(time.Second), t0.Add(9 * time.Minute)} {
		key := fmt.Sprintf("queued-%04d", i)
		rec := transfer.Record{
			StoreKey: transfer.StoreKey(wallet, key), Status: transfer.StatusQueued, Fingerprint: "secret-fingerprint", Async: true,
			Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000},
			ClaimID: "claim-" + key, ClientKey: key, TraceID: "1-abc", Version: 1, CreatedAt: at, UpdatedAt: at,
		}
		if _, won, err := f.store.Claim(ctx, rec, at); err != nil || !won {
			t.Fatalf("claim %s: %v %v", key, won, err)
		}
		queued = append(queued, rec)
	}
	log, logs := logtest.New(t)
	stranded := &strandedGauge{}
	cfg := reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: &gauge{}, Clock: f.clock, Logger: log,
		KeyTTL: func() time.Duration { return time.Hour }, Queued: f.store, Stranded: stranded}
	sweep := func(cfg reconcile.Config) reconcile.QueuedCounts {
		t.Helper()
		out, err := reconcile.New(cfg).Sweep(ctx)
		if err != nil || out.Partial {
			t.Fatalf("sweep: %+v, %v", out, err)
		}
		return out.Queued
	}
	errorLines := func() int {
		n := 0
		for line := range strings.SplitSeq(string(logs.Bytes()), "\n") {
			if strings.Contains(line, `"msg":"sweep: queued transfers stranded`) {
				if !strings.Contains(line, `"level":"ERROR"`) {
					t.Errorf("not at ERROR: %s", line)
				}
				n++
			}
		}
		return n
	}

	// Nine minutes on: nothing is older than the grace (10 minutes).
	f.clock.now = t0.Add(9 * time.Minute)
	if got := sweep(cfg); got != (reconcile.QueuedCounts{}) || errorLines() != 0 || len(stranded.values) != 0 {
		t.Fatalf("within the grace: %+v, %d ERROR lines, gauge %v; want nothing", got, errorLines(), stranded.values)
	}
	// Ten minutes and a half on: the first two are stranded, the third is not yet.
	f.clock.now = t0.Add(10*time.Minute + 30*time.Second)
	if got := sweep(cfg); got != (reconcile.QueuedCounts{Stranded: 2}) {
		t.Fatalf("answer %+v, want 2 stranded", got)
	}
	if n := errorLines(); n != 1 || !strings.Contains(string(logs.Bytes()), `"stranded":2`) {
		t.Errorf("%d ERROR lines, want one with the count 2", n)
	}
	if len(stranded.values) != 1 || stranded.values[0] != 2 {
		t.Errorf("gauge %v, want [2]", stranded.values)
	}
	for _, rec := range queued {
		if got, err := f.store.Get(ctx, rec.StoreKey); err != nil || got.Status != transfer.StatusQueued || got.Version != 1 || !got.UpdatedAt.Equal(rec.UpdatedAt) {
			t.Errorf("%s changed: %+v, %v", rec.ClientKey, got, err)
		}
	}
	// Each sweep reports afresh: one more ERROR line, the gauge written again.
	if got := sweep(cfg); got.Stranded != 2 || errorLines() != 2 || len(stranded.values) != 2 {
		t.Errorf("second sweep: %+v, %d ERROR lines, gauge %v", got, errorLines(), stranded.values)
	}

	// Without Queued (the read-only reader): queued items are not read.
	noIndex := cfg
	noIndex.Queued = nil
	if got := sweep(noIndex); got != (reconcile.QueuedCounts{}) || errorLines() != 2 || len(stranded.values) != 2 {
		t.Errorf("without Queued: %+v, %d ERROR lines, gauge %v", got, errorLines(), stranded.values)
	}

	// With a queue: the sweep sends them as before, nothing is stranded.
	q := &sentQueue{}
	withQueue := cfg
	withQueue.Queue = q
	if got := sweep(withQueue); got != (reconcile.QueuedCounts{Sent: 2}) || len(q.sent) != 2 || errorLines() != 2 || len(stranded.values) != 2 {
		t.Errorf("with a queue: %+v, sent %v, %d ERROR lines, gauge %v", got, q.sent, errorLines(), stranded.values)
	}
}

type deadlineQueue struct {
	deadline time.Time
	ok       bool
}

func (q *deadlineQueue) Send(ctx context.Context, _ transfer.QueueMessage) error {
	q.deadline, q.ok = ctx.Deadline()
	return nil
}

// The sweep's queued phase runs first (an in-doubt backlog the ledger cannot judge cannot starve
// it) and gets at most half of the invocation's time left (a queue that hangs cannot starve the
// in-doubt items either): its Send sees a deadline half-way to the sweep's.
func TestSweepQueuedPhaseGetsHalfTheTime(t *testing.T) {
	f := newFixture(t)
	key := "queued-half"
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, key), Status: transfer.StatusQueued, Fingerprint: "fp", Async: true,
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1", Asset: "USDC", Stroops: 10_000_000},
		ClaimID: "claim-" + key, ClientKey: key, Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
	if _, won, err := f.store.Claim(context.Background(), rec, t0); err != nil || !won {
		t.Fatalf("claim: %v %v", won, err)
	}
	f.clock.now = t0.Add(11 * time.Minute)
	q := &deadlineQueue{}
	log, _ := logtest.New(t)
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: &gauge{}, Clock: f.clock, Logger: log,
		KeyTTL: func() time.Duration { return time.Hour }, Queued: f.store, Queue: q})
	dl := time.Now().Add(50 * time.Second)
	ctx, cancel := context.WithDeadline(context.Background(), dl)
	defer cancel()
	out, err := svc.Sweep(ctx)
	if err != nil || out.Partial || out.Queued.Sent != 1 {
		t.Fatalf("sweep = %+v, %v; want the queued item sent, not partial", out, err)
	}
	if !q.ok || q.deadline.After(dl.Add(-24*time.Second)) {
		t.Fatalf("Send's deadline %v (set %v), want at most half of the 50 s left (%v)", q.deadline, q.ok, dl.Add(-25*time.Second))
	}
}
