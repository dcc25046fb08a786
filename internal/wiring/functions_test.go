package wiring_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/metrics"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/wiring"
)

// reconcileParts are the rig's service as the reconcile function gets it, its metrics in out.
func reconcileParts(r *rig, out *bytes.Buffer) wiring.ReconcileParts {
	return wiring.ReconcileParts{Service: r.svc, Config: r.cfg, Getenv: func(string) string { return "" }, Dynamo: r.db,
		Metrics: metrics.New(out, nil), Keys: r.keys, Clock: r.svc.Orchestrator.Clock}
}

// answerCode invokes the function with payload and returns the problem code it answered ("" for
// an answer that is not a problem).
func answerCode(t *testing.T, s *reconcile.Service, payload string) string {
	t.Helper()
	a, err := s.Answer(context.Background(), []byte(payload))
	if err != nil {
		t.Fatalf("%s: %v", payload, err)
	}
	switch p := a.(type) {
	case reconcile.Problem:
		return p.Code
	case *reconcile.Problem:
		return p.Code
	}
	return ""
}

// The reader (RECONCILE_ACTIONS=read) answers list and get only, whatever it is given.
func TestReconcileReaderAnswersListAndGetOnly(t *testing.T) {
	r := newRig(t)
	var out bytes.Buffer
	p := reconcileParts(r, &out)
	p.ReadOnly = true
	s := wiring.Reconcile(p)
	if code := answerCode(t, s, `{"action":"list"}`); code != "" {
		t.Fatalf("list answered %s", code)
	}
	for _, a := range []string{"sweep", "channels"} {
		if code := answerCode(t, s, `{"action":"`+a+`"}`); code != reconcile.CodeActionNotAllowed {
			t.Fatalf("%s answered %q, want %s", a, code, reconcile.CodeActionNotAllowed)
		}
	}
	if out.Len() != 0 {
		t.Fatalf("the reader wrote metrics: %s", out.String())
	}
}

// A reconcile function without keys (no SIGNING_SECRET_ARN) has no channels action, and its sweep
// still watches the vault's balances.
func TestReconcileWithoutKeysWatchesTheVaultOnly(t *testing.T) {
	r := newRig(t)
	var out bytes.Buffer
	p := reconcileParts(r, &out)
	p.Keys = nil
	s := wiring.Reconcile(p)
	if code := answerCode(t, s, `{"action":"channels"}`); code != reconcile.CodeChannelsNotAvailable {
		t.Fatalf("channels answered %q, want %s", code, reconcile.CodeChannelsNotAvailable)
	}
	if code := answerCode(t, s, `{"action":"sweep"}`); code != "" {
		t.Fatalf("sweep answered %s", code)
	}
	if !strings.Contains(out.String(), `"account":"vault","asset":"USDC"`) {
		t.Fatalf("the sweep's watch wrote no USDC balance of the vault: %s", out.String())
	}
}
