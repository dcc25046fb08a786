package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// DELETE through the Lambda adapter cancels as the IAM principal API Gateway authenticated, with
// its request ID; the wallet is canonical; the answer is the cancelled transfer.
func TestLambdaDeleteRecordsTheCaller(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 3, 1, 12, 0, 0, 250_000_000, time.UTC)
	f.svc.cancel = func(_ context.Context, _, _ string, by transfer.Canceller) (transfer.Cancellation, error) {
		return transfer.Cancellation{View: transfer.View{Status: "cancelled", CancelledAt: at, CancelledBy: by.Caller}}, nil
	}
	ev := loadEvent(t, "apigw-v2-request-get-transfer.json")
	ev.RequestContext.HTTP.Method = http.MethodDelete
	ev.RawPath = strings.Replace(ev.RawPath, fixtureWallet, strings.ToLower(fixtureWallet), 1)
	// A header can never name the caller: only the authorizer's identity counts.
	ev.Headers["x-caller"] = "arn:aws:iam::999999999999:user/Mallory"
	resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"status":"cancelled","cancelledAt":"2026-03-01T12:00:00.250Z","cancelledBy":"arn:aws:iam::1234567890:user/Admin"}`
	if resp.StatusCode != 200 || strings.TrimSpace(resp.Body) != want || resp.Headers[ReplayedHeader] != "" {
		t.Fatalf("response %d %v %s", resp.StatusCode, resp.Headers, resp.Body)
	}
	if len(f.svc.cancels) != 1 || f.svc.cancels[0] != (cancelCall{fixtureWallet, "order-2020-04-21.0001",
		transfer.Canceller{Caller: "arn:aws:iam::1234567890:user/Admin", RequestID: "JKJaXmPLvHcESHA="}}) {
		t.Fatalf("cancel calls %+v", f.svc.cancels)
	}

	// Without an IAM authorizer (ApiAuthorization NONE): anonymous.
	ev.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{}
	if _, err := NewLambdaHandler(f.h)(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	if got := f.svc.cancels[1].by.Caller; got != transfer.AnonymousCaller {
		t.Fatalf("caller without an authorizer %q", got)
	}
}

// What DELETE answers for each answer of the cancel, and that bad input never reaches it.
func TestDeleteTransferAnswers(t *testing.T) {
	path := "/wallets/" + wallet + "/transfers/" + goodKey
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	cancelled := transfer.View{Status: "cancelled", CancelledAt: at, CancelledBy: transfer.AnonymousCaller}

	f := newFixture(t)
	f.svc.cancel = func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error) {
		return transfer.Cancellation{View: cancelled, Replayed: true}, nil
	}
	rec := f.do(req{"DELETE", path, "", nil})
	if rec.Code != 200 || rec.Header().Get(ReplayedHeader) != "true" ||
		strings.TrimSpace(rec.Body.String()) != `{"status":"cancelled","cancelledAt":"2026-03-01T12:00:00.000Z","cancelledBy":"anonymous"}` {
		t.Fatalf("replayed cancel: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}

	for _, st := range []string{"in_flight", "in_doubt", "success", "error"} {
		f := newFixture(t)
		f.svc.cancel = func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error) {
			return transfer.Cancellation{}, &transfer.NotCancellableError{State: st}
		}
		pd := problem(t, f.do(req{"DELETE", path, "", nil}), 409, transfer.CodeNotCancellable)
		if pd.State != st || pd.Classification != transfer.Terminal {
			t.Errorf("%s: problem %+v", st, pd)
		}
	}

	for _, c := range []struct {
		name, path string
		status     int
		code       string
	}{
		{"bad wallet", "/wallets/GABC/transfers/" + goodKey, 422, transfer.CodeInvalidAddress},
		{"seed as wallet", "/wallets/SBZVMB74Z76QZ3ZOY7UTDFYKMEGKW5XFJEB6PFKBF4UYSSWHG4EDH7PY/transfers/" + goodKey, 422, transfer.CodeInvalidAddress},
		{"short key", "/wallets/" + wallet + "/transfers/short", 400, transfer.CodeKeyInvalid},
		{"quoted key", "/wallets/" + wallet + "/transfers/%22order-0001%22", 400, transfer.CodeKeyInvalid},
		{"key with a space", "/wallets/" + wallet + "/transfers/order%200001", 400, transfer.CodeKeyInvalid},
		{"no key", "/wallets/" + wallet + "/transfers/", 404, CodeRouteNotFound},
		{"extra segment", path + "/x", 404, CodeRouteNotFound},
		{"unknown", path, 404, transfer.CodeNotFound},
	} {
		f := newFixture(t)
		pd := problem(t, f.do(req{"DELETE", c.path, "", nil}), c.status, c.code)
		if strings.Contains(pd.Detail+pd.Instance, "SBZVMB74") {
			t.Errorf("%s: a seed echoed: %+v", c.name, pd)
		}
		if c.code != transfer.CodeNotFound && len(f.svc.cancels) != 0 {
			t.Errorf("%s: the cancel was called: %+v", c.name, f.svc.cancels)
		}
	}

	// Without WithCancel, DELETE is a method the route does not take.
	f = newFixture(t, WithCancel(nil))
	rec = f.do(req{"DELETE", path, "", nil})
	problem(t, rec, 405, CodeMethodNotAllowed)
	if rec.Header().Get("Allow") != "GET, HEAD" {
		t.Fatalf("Allow %q", rec.Header().Get("Allow"))
	}
}

// A POST that finds its key cancelled answers 409 TRANSFER_CANCELLED, replayed, with its state.
func TestPostOfACancelledKey(t *testing.T) {
	f := newFixture(t)
	f.svc.transfer = func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return transfer.Outcome{}, &transfer.CancelledError{CancelledAt: time.Unix(1_800_000_000, 0)}
	}
	rec := f.do(post(goodBody(wallet), nil))
	pd := problem(t, rec, 409, transfer.CodeCancelled)
	if rec.Header().Get(ReplayedHeader) != "true" || pd.State != "cancelled" || pd.Classification != transfer.Terminal {
		t.Fatalf("%v %+v", rec.Header(), pd)
	}
}
