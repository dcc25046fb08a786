package reconcile_test

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// readStore is a Store that only reads: any write or sweep listing fails the test, as the
// reader's IAM role (GetItem and Query only) would refuse it.
type readStore struct {
	reconcile.Store
	t *testing.T
}

func (s readStore) Replace(context.Context, transfer.Record, transfer.Condition) error {
	s.t.Error("a read-only service wrote an item (Replace)")
	return transfer.ErrConditionFailed
}

func (s readStore) Delete(context.Context, string, transfer.Condition) error {
	s.t.Error("a read-only service deleted an item")
	return transfer.ErrConditionFailed
}

func (s readStore) ListExpiredClaims(context.Context, time.Time, int, string) ([]transfer.Record, string, error) {
	s.t.Error("a read-only service listed expired claims (the sweep)")
	return nil, "", nil
}

// The read-only service (InDoubtReaderFunction) answers list and get as the full one does, and
// every action that writes with the problem ACTION_NOT_ALLOWED as its result (not a function
// error), having read and written nothing; even an action the full service would carry out.
func TestReadOnlyAnswersListGetAndReportOnly(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-ro01", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.land(rec, transfer.LookupSuccess, 77) // resolve with this hash would be accepted
	log, logs := logtest.New(t)
	g := &gauge{}
	channelsCalled := false
	f.svc = reconcile.New(reconcile.Config{Store: readStore{Store: f.store, t: t}, Ledger: f.ledger, Gauge: g, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: log, ReadOnly: true,
		Channels: func(context.Context) (any, error) { channelsCalled = true; return nil, nil }})

	list := mustDo(t, f, `{"action":"list"}`)
	if items := list["items"].([]any); len(items) != 1 || items[0].(map[string]any)["storeKey"] != rec.StoreKey {
		t.Fatalf("list = %v, want %s", list, rec.StoreKey)
	}
	got := mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)
	if item := got["item"].(map[string]any); item["innerHash"] != rec.Envelope.InnerHash || item["chain"].(map[string]any)["status"] != "SUCCESS" {
		t.Fatalf("get = %v", got)
	}

	for action, payload := range map[string]string{
		"resolve":  `{"action":"resolve","storeKey":"` + rec.StoreKey + `","transactionHash":"` + rec.Envelope.InnerHash + `","operator":"alice"}`,
		"discard":  `{"action":"resolve","storeKey":"` + rec.StoreKey + `","discard":true,"force":true,"reason":"checked","innerHash":"` + rec.Envelope.InnerHash + `","operator":"alice"}`,
		"sweep":    `{"action":"sweep"}`,
		"channels": `{"action":"channels"}`,
		"daily":    `{"action":"daily","day":"2026-01-01"}`,
	} {
		answer, err := f.svc.Answer(invocation("req-1"), json.RawMessage(payload))
		if err != nil {
			t.Fatalf("%s: a function error %v, want a problem as the result", action, err)
		}
		var p map[string]any
		if b, err := json.Marshal(answer); err != nil || json.Unmarshal(b, &p) != nil {
			t.Fatalf("%s: answer %v", action, answer)
		}
		want := map[string]any{
			"type":   "tag:stellar-transfer-orchestrator,2026:reconcile:action-not-allowed",
			"title":  "Action not allowed on this function",
			"status": float64(403), "code": reconcile.CodeActionNotAllowed, "action": strings.Split(strings.Split(payload, `"action":"`)[1], `"`)[0],
		}
		for k, v := range want {
			if p[k] != v {
				t.Errorf("%s: %s = %v, want %v (%v)", action, k, p[k], v, p)
			}
		}
		if d, _ := p["detail"].(string); !strings.Contains(d, "ReconcileFunction") {
			t.Errorf("%s: detail %q does not say where the action is served", action, d)
		}
		if d, _ := p["detail"].(string); !strings.Contains(d, "list, get and report") {
			t.Errorf("%s: detail %q does not name every action this function serves", action, d)
		}
	}
	if after, err := f.store.Get(context.Background(), rec.StoreKey); err != nil || after.Version != rec.Version || after.Status != transfer.StatusInDoubt {
		t.Fatalf("the item changed: %+v, %v", after, err)
	}
	if len(g.values) != 0 || channelsCalled || len(f.ledger.done) != 0 {
		t.Errorf("a refused action ran: gauge %v, channels %v, released %v", g.values, channelsCalled, f.ledger.done)
	}
	if !strings.Contains(string(logs.Bytes()), `"code":"ACTION_NOT_ALLOWED"`) {
		t.Errorf("the refusal is not logged:\n%s", string(logs.Bytes()))
	}
	// What is neither read nor write keeps its typed function error.
	refused(t, f, `{"action":"explode"}`, reconcile.CodeUnknownAction)
	refused(t, f, `{"action":""}`, reconcile.CodeBadRequest)
	refused(t, f, `{"action":"resolve","colour":"red"}`, reconcile.CodeBadRequest)
}

// The full service never answers ACTION_NOT_ALLOWED.
func TestFullServiceServesEveryAction(t *testing.T) {
	f := newFixture(t)
	rec := f.put(t, "order-rw01", transfer.StatusInDoubt, t0.Add(time.Hour), false)
	f.land(rec, transfer.LookupSuccess, 77)
	got := mustDo(t, f, `{"action":"resolve","storeKey":"`+rec.StoreKey+`","transactionHash":"`+rec.Envelope.InnerHash+`","operator":"alice"}`)
	if got["resolution"] != string(transfer.StatusReplayable) {
		t.Fatalf("resolve = %v", got)
	}
}

// The problem's type URI names an anchor of README.md, once: reconcile-<the kebab case it ends in>.
func TestProblemTypeIsAReadmeAnchor(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	log, _ := logtest.New(t)
	f.svc = reconcile.New(reconcile.Config{Store: f.store, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, ReadOnly: true, Logger: log})
	raw, err := f.svc.Answer(context.Background(), json.RawMessage(`{"action":"sweep"}`))
	if err != nil {
		t.Fatal(err)
	}
	p := raw.(*reconcile.Problem)
	kebab, ok := strings.CutPrefix(p.Type, "tag:stellar-transfer-orchestrator,2026:reconcile:")
	if !ok || !strings.HasPrefix(p.Type, reconcile.ProblemTypeBase) {
		t.Fatalf("type %q is not a tag URI naming a README.md row", p.Type)
	}
	frag := "reconcile-" + kebab
	if n := strings.Count(string(readme), `<a id="`+frag+`"></a>`); n != 1 {
		t.Errorf(`README.md has <a id="%s"></a> %d times, want once`, frag, n)
	}
}

// Every refusal code's problem type is an anchor of README.md, once: the refusal table in
// "Operating it" (and "Operator roles" for ACTION_NOT_ALLOWED).
func TestEveryRefusalCodeHasAReadmeAnchor(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, code := range []string{
		reconcile.CodeBadRequest, reconcile.CodeUnknownAction, reconcile.CodeActionNotAllowed, reconcile.CodeSecretInPayload,
		reconcile.CodeNotFound, reconcile.CodeNotInDoubt, reconcile.CodeConflict, reconcile.CodeHashMismatch,
		reconcile.CodeNotLanded, reconcile.CodeTransactionFailed, reconcile.CodeProvenDead, reconcile.CodeLanded,
		reconcile.CodeStillCanLand, reconcile.CodeNotProvenDead, reconcile.CodeChannelsNotAvailable,
	} {
		frag := "reconcile-" + strings.ToLower(strings.ReplaceAll(code, "_", "-"))
		if n := strings.Count(string(readme), `<a id="`+frag+`"></a>`); n != 1 {
			t.Errorf(`README.md has <a id="%s"></a> %d times, want once`, frag, n)
		}
	}
}
