package devstack

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// pauseSubmitter stops the submitter's workers, leaving the queue's messages where they are, and
// returns the function that starts them again: a transfer accepted meanwhile stays queued.
func pauseSubmitter(t *testing.T, s *Stack) (resume func()) {
	t.Helper()
	close(s.ops.submit.stop)
	s.ops.submit.wg.Wait()
	return s.ops.submit.start
}

// A cancel end to end on the local stack, as README.md's "Asynchronous transfers", Cancel, walks
// it: a payout accepted with 202 and still queued is cancelled by DELETE (200, the cancelled
// transfer, its caller and time on the item); a DELETE again answers the same cancellation,
// replayed; the same POST answers 409 TRANSFER_CANCELLED, another body IDEMPOTENCY_KEY_CONFLICT;
// the submitter that then receives the message takes nothing, builds nothing and acknowledges it;
// GET and the wallet's history show the cancellation, and the alert function publishes one
// "Transfer Cancelled" event. A transfer the submitter has run is 409 TRANSFER_NOT_CANCELLABLE
// with its state. Bad input is a typed problem and never reaches the store.
func TestCancelAQueuedTransferThroughTheAPI(t *testing.T) {
	s := startStack(t)
	wallet := s.Info.Wallets[0].Account
	const key = "devstack-cancel-0001"
	stream := openEvents(t, s.Info.EventsURL)
	before, err := s.Network.Balance(wallet, s.usdc())
	if err != nil {
		t.Fatal(err)
	}
	request := func(method, path, key, body string, async bool) reply {
		req, _ := http.NewRequest(method, s.Info.APIURL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		if async {
			req.Header.Set("Prefer", "respond-async")
		}
		return do(t, req)
	}
	location := "/wallets/" + wallet + "/transfers/" + key

	resume := pauseSubmitter(t, s)
	if r := request(http.MethodPost, "/transfers", key, withdraw(wallet, "2.5"), true); r.status != http.StatusAccepted {
		t.Fatalf("POST (respond-async) = %d %v", r.status, r.body)
	}
	queued, err := s.Service.Store.Get(context.Background(), transfer.StoreKey(wallet, key))
	if err != nil || queued.Status != transfer.StatusQueued {
		t.Fatalf("item before the cancel %+v, %v", queued, err)
	}

	// Bad input: typed problems, nothing read or written.
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{"/wallets/GABC/transfers/" + key, 422, transfer.CodeInvalidAddress},
		{"/wallets/" + wallet + "/transfers/short", 400, transfer.CodeKeyInvalid},
		{"/wallets/" + wallet + "/transfers/%22" + key + "%22", 400, transfer.CodeKeyInvalid},
		{"/wallets/" + wallet + "/transfers/devstack-cancel-none", 404, transfer.CodeNotFound},
	} {
		if r := request(http.MethodDelete, c.path, "", "", false); r.status != c.status || r.body["code"] != c.code {
			t.Errorf("DELETE %s = %d %v, want %d %s", c.path, r.status, r.body, c.status, c.code)
		}
	}

	// Lower case wallet: the same transfer.
	cancelled := request(http.MethodDelete, "/wallets/"+strings.ToLower(wallet)+"/transfers/"+key, "", "", false)
	at, _ := cancelled.body["cancelledAt"].(string)
	created, _ := cancelled.body["createdAt"].(string)
	if cancelled.status != http.StatusOK || cancelled.header.Get("Idempotent-Replayed") != "" || created == "" ||
		!maps.Equal(cancelled.body, map[string]any{"status": "cancelled", "cancelledAt": at, "cancelledBy": "anonymous", "createdAt": created}) {
		t.Fatalf("DELETE = %d %v %v", cancelled.status, cancelled.header, cancelled.body)
	}
	rec, err := s.Service.Store.Get(context.Background(), transfer.StoreKey(wallet, key))
	if err != nil || rec.Status != transfer.StatusCancelled || rec.Version != queued.Version+1 || rec.ClaimID != queued.ClaimID ||
		rec.Envelope != nil || rec.LeaseOwner != "" || rec.Audit == nil || rec.Audit.Action != transfer.AuditCancel ||
		rec.Audit.Operator != "anonymous" || rec.Audit.At.Format("2006-01-02T15:04:05.000Z07:00") != at || rec.ExpiresAt == 0 {
		t.Fatalf("cancelled item %+v (audit %+v), %v", rec, rec.Audit, err)
	}
	again := request(http.MethodDelete, location, "", "", false)
	if again.status != http.StatusOK || again.header.Get("Idempotent-Replayed") != "true" || !maps.Equal(again.body, cancelled.body) {
		t.Fatalf("DELETE again = %d %v %v", again.status, again.header, again.body)
	}
	for _, async := range []bool{true, false} {
		r := request(http.MethodPost, "/transfers", key, withdraw(wallet, "2.5"), async)
		if r.status != http.StatusConflict || r.body["code"] != transfer.CodeCancelled || r.body["state"] != "cancelled" ||
			r.header.Get("Idempotent-Replayed") != "true" || r.body["classification"] != "terminal" {
			t.Errorf("POST (async %v) of the cancelled key = %d %v %v", async, r.status, r.header, r.body)
		}
	}
	if r := request(http.MethodPost, "/transfers", key, withdraw(wallet, "3"), true); r.status != http.StatusConflict || r.body["code"] != transfer.CodeKeyConflict {
		t.Errorf("POST of another body = %d %v", r.status, r.body)
	}

	// The submitter gets the message now: it does nothing and acknowledges it.
	resume()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := s.ops.submit.waitRuns(ctx, 1); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	after, err := s.Service.Store.Get(context.Background(), transfer.StoreKey(wallet, key))
	if err != nil || after.Version != rec.Version || after.Status != transfer.StatusCancelled || after.Envelope != nil || after.LeaseOwner != "" {
		t.Fatalf("item after the message %+v, %v", after, err)
	}
	s.ops.submit.mu.Lock()
	unacked := len(s.ops.submit.receives)
	s.ops.submit.mu.Unlock()
	if unacked != 0 || len(s.ops.queue.Drain()) != 0 {
		t.Fatalf("%d messages not acknowledged", unacked)
	}
	if view := request(http.MethodGet, location, "", "", false); view.status != http.StatusOK || !maps.Equal(view.body, cancelled.body) {
		t.Fatalf("GET = %d %v", view.status, view.body)
	}
	hist := request(http.MethodGet, "/wallets/"+wallet+"/transfers", "", "", false)
	items, _ := hist.body["items"].([]any)
	var head map[string]any
	if len(items) > 0 {
		head, _ = items[0].(map[string]any)
	}
	if hist.status != http.StatusOK || head["idempotencyKey"] != key || head["status"] != "cancelled" || head["cancelledAt"] != at ||
		head["updatedAt"] != at || head["transactionHash"] != nil {
		t.Fatalf("history = %d %v", hist.status, hist.body)
	}

	// A transfer the submitter ran is past queued.
	const ran = "devstack-cancel-0002"
	if r := request(http.MethodPost, "/transfers", ran, withdraw(wallet, "1"), true); r.status != http.StatusAccepted {
		t.Fatalf("POST (respond-async) = %d %v", r.status, r.body)
	}
	if err := s.ops.submit.waitRuns(ctx, 2); err != nil {
		t.Fatalf("the submitter did not run: %v", err)
	}
	late := request(http.MethodDelete, "/wallets/"+wallet+"/transfers/"+ran, "", "", false)
	hash, _ := late.body["transactionHash"].(string)
	if late.status != http.StatusConflict || late.body["code"] != transfer.CodeNotCancellable || late.body["state"] != "success" || !hash64.MatchString(hash) {
		t.Fatalf("DELETE of a settled transfer = %d %v", late.status, late.body)
	}
	bal, err := s.Network.Balance(wallet, s.usdc())
	if err != nil || bal-before != 10_000_000 {
		t.Fatalf("the wallet gained %d stroops of USDC (%v), want the 1 USDC of the transfer not cancelled", bal-before, err)
	}

	// Events, in order: the cancellation, then the other transfer's settlement.
	var kinds []string
	for len(kinds) < 2 {
		m := stream.next(t)
		var d map[string]any
		if err := json.Unmarshal(m.data.Detail, &d); err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, m.kind+" "+d["idempotencyKey"].(string)+" "+d["status"].(string))
		if d["idempotencyKey"] == key && (d["code"] != transfer.CodeCancelled || d["amount"] != "2.5" || d["transactionHash"] != nil) {
			t.Errorf("cancellation event %v", d)
		}
	}
	if want := []string{"Transfer Cancelled " + key + " cancelled", "Transfer Settled " + ran + " success"}; !slices.Equal(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
}
