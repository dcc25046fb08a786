package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestPayloadsReadOneWay: a payload that encoding/json would read one way and a person (or a
// proxy, or a log reader) another is refused before anything is done, as POST /transfers refuses
// it. Read leniently, each of these would act: a forced discard of the second storeKey,
// a force-discard spelled in capitals, a discard turned into a resolution.
func TestPayloadsReadOneWay(t *testing.T) {
	f := newFixture(t)
	a := f.put(t, "order-dup-a", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	b := f.put(t, "order-dup-b", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.afterMaxTime()
	f.ledger.oldest = 90 // the ledger cannot prove anything: only force would release
	f.land(b, transfer.LookupSuccess, 60)
	force := `,"discard":true,"force":true,"operator":"dave","reason":"customer asked","innerHash":"` + a.Envelope.InnerHash + `"}`
	for _, p := range []string{
		`{"action":"resolve","storeKey":"` + a.StoreKey + `","storeKey":"` + b.StoreKey + `"` + force,
		`{"ACTION":"resolve","storeKey":"` + a.StoreKey + `","Discard":true,"FORCE":true,"operator":"dave","reason":"customer asked"}`,
		`{"action":"resolve","storeKey":"` + b.StoreKey + `","discard":true,"discard":false,"transactionHash":"` + b.Envelope.InnerHash + `","operator":"dave"}`,
		`{"action":"resolve","storeKey":"` + a.StoreKey + `"` + force + `{"action":"list"}`,
		`{"action":"resolve","storeKey":"` + a.StoreKey + `"` + force + `]`,
	} {
		refused(t, f, p, reconcile.CodeBadRequest)
	}
	for _, rec := range []transfer.Record{a, b} {
		got, err := f.store.Get(context.Background(), rec.StoreKey)
		if err != nil || got.Status != transfer.StatusInDoubt || got.Version != rec.Version || got.Audit != nil {
			t.Errorf("%s changed: %+v, %v", rec.StoreKey, got, err)
		}
	}
	if len(f.ledger.done) != 0 {
		t.Errorf("a channel was released: %v", f.ledger.done)
	}
	// The same actions, spelled one way, act.
	if got := mustDo(t, f, `{"action":"resolve","storeKey":"`+a.StoreKey+`"`+force); got["resolution"] != "released" || got["forced"] != true {
		t.Errorf("forced discard = %v", got)
	}
}

// leaksSeed reports whether s holds 16 or more consecutive characters of seed, in any case.
func leaksSeed(s, seed string) bool {
	s, seed = strings.ToUpper(s), strings.ToUpper(seed)
	for i := 0; i+16 <= len(seed); i++ {
		if strings.Contains(s, seed[i:i+16]) {
			return true
		}
	}
	return false
}

// TestSeedsNeverReachTheAuditOrTheAnswer: operator and reason are written into the item's audit,
// logged and sent with the stream's record: a seed in either is refused with a typed error and
// nothing is written. An error quoting the payload is redacted before it is clipped
// (clipping first, clip(action, 32) would keep 32 characters of a seed).
func TestSeedsNeverReachTheAuditOrTheAnswer(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-seed1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.land(rec, transfer.LookupSuccess, 60)
	seed := keypair.MustRandom().Seed()
	resolve := `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + rec.Envelope.InnerHash + `"`
	for _, p := range []string{
		resolve + `,"operator":"` + seed + `"}`,
		resolve + `,"operator":"alice ` + strings.ToLower(seed) + `"}`,
		resolve + `,"operator":"alice","reason":"key was ` + seed + `"}`,
		resolve + `,"operator":"alice","force":true,"reason":"` + seed + `"}`,
	} {
		refused(t, f, p, reconcile.CodeSecretInPayload)
	}
	if got, err := f.store.Get(context.Background(), rec.StoreKey); err != nil || got.Status != transfer.StatusInDoubt || got.Audit != nil {
		t.Fatalf("the item changed: %+v, %v", got, err)
	}
	for _, p := range []string{
		`{"action":"` + seed + `"}`,
		`{"action":"` + strings.Repeat("x", 20) + seed + `"}`,
		`{"` + strings.Repeat("x", 170) + seed + `":1}`,
		`{"` + strings.Repeat("x", 40) + seed + `":1}`,
		`{"action":"get","storeKey":"transfer:0000000000000000:` + strings.Repeat("k", 230) + seed + `"}`,
	} {
		answer, err := f.svc.Answer(context.Background(), json.RawMessage(p))
		r, ok := answer.(*reconcile.Problem)
		if err != nil || !ok || leaksSeed(r.Detail, seed) {
			t.Errorf("%.50s...: the refusal holds part of the seed, or is not one: %+v, %v", p, answer, err)
		}
	}
	if got := mustDo(t, f, resolve+`,"operator":"alice","reason":"seen on chain"}`); got["resolution"] != "replayable" {
		t.Fatalf("resolve = %v", got)
	}
}

// TestGetRedactsItemsStoredEarlier: an item written before the API replaced trace IDs that are not
// in X-Ray's format may hold a seed; get and list show it redacted.
func TestGetRedactsItemsStoredEarlier(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-old1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	seed := keypair.MustRandom().Seed()
	next := rec
	next.TraceID, next.Version = "Root="+seed, rec.Version+1
	next.Audit = &transfer.Audit{Action: "resolve", Operator: "op " + seed, Reason: seed}
	if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`{"action":"get","storeKey":"` + rec.StoreKey + `"}`, `{"action":"list"}`} {
		b, err := json.Marshal(mustDo(t, f, p))
		if err != nil {
			t.Fatal(err)
		}
		if leaksSeed(string(b), seed) || !strings.Contains(string(b), `"traceId":"Root=[redacted]"`) {
			t.Errorf("%s: %s", p, b)
		}
	}
}

// TestInvokeReadsEveryByte: the function's handler is given the payload's bytes, so data after the
// object is refused BAD_REQUEST (README.md, "Operating it"). Through a typed argument
// (json.RawMessage) aws-lambda-go's reflective handler decoded the first value only, and
// `{"action":"list","limit":20}{}` was answered as a list. It is checked both on Invoke and as
// aws-lambda-go's runtime calls it (lambda.NewHandler keeps a lambda.Handler as it is).
func TestInvokeReadsEveryByte(t *testing.T) {
	f := newFixture(t)
	f.put(t, "order-trail1", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	for name, h := range map[string]lambda.Handler{"Invoke": f.svc, "lambda.NewHandler": lambda.NewHandler(f.svc)} {
		for _, p := range []string{
			`{"action":"list","limit":20}{}`,
			`{"action":"list"} {"action":"sweep"}`,
			`{"action":"list"}x`,
			`{"action":"list"}]`,
		} {
			out, err := h.Invoke(invocation("req-trail"), []byte(p))
			var pr reconcile.Problem
			if err != nil || json.Unmarshal(out, &pr) != nil || pr.Code != reconcile.CodeBadRequest || pr.Status != 400 ||
				!strings.Contains(pr.Detail, "after") {
				t.Errorf("%s(%s) = %s, %v; want a BAD_REQUEST problem about the data after the object", name, p, out, err)
			}
		}
		out, err := h.Invoke(invocation("req-list"), []byte(`{"action":"list","limit":20}`+"\n"))
		var list struct {
			Action string           `json:"action"`
			Items  []map[string]any `json:"items"`
		}
		if err != nil || json.Unmarshal(out, &list) != nil || list.Action != "list" || len(list.Items) != 1 {
			t.Errorf("%s(list) = %s, %v; want the one in-doubt item", name, out, err)
		}
		if strings.HasSuffix(string(out), "\n") || strings.Contains(string(out), `\u003c`) {
			t.Errorf("%s(list) = %q: not encoded as the runtime's reflective handler encodes", name, out)
		}
	}
	// A failure stays the function error {"errorType": CODE, ...}.
	log, _ := logtest.New(t)
	broken := reconcile.New(reconcile.Config{Store: brokenStore{}, Ledger: &ledger{}, Gauge: &gauge{}, Clock: &clock{now: t0},
		KeyTTL: func() time.Duration { return time.Hour }, Logger: log})
	out, err := broken.Invoke(context.Background(), []byte(`{"action":"list"}`))
	var ie messages.InvokeResponse_Error
	if out != nil || !errors.As(err, &ie) || ie.Type != reconcile.CodeStoreUnavailable {
		t.Errorf("a failed list = %s, %v; want the function error STORE_UNAVAILABLE", out, err)
	}
}
