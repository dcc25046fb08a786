package devstack

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// TestSettlementWebhookOnTheLocalStackIsSignedAndRetried: with a webhook, a transfer's settlement
// event reaches the receiver signed under the event's eventId, verified by the specification's
// library; a receiver that refuses the first attempt gets the same event, same webhook-id, again.
func TestSettlementWebhookOnTheLocalStackIsSignedAndRetried(t *testing.T) {
	secret := GenerateWebhookSecret()
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	type delivery struct {
		id, body string
		verified error
	}
	got := make(chan delivery, 8)
	refused := false
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- delivery{r.Header.Get(webhook.HeaderID), string(b), wh.Verify(b, r.Header)}
		if !refused {
			refused = true
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	var mu sync.Mutex
	var waits []time.Duration
	sleep := func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		defer mu.Unlock()
		waits = append(waits, d)
		return ctx.Err()
	}
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second,
		Ops: OpsOptions{Webhook: &WebhookOptions{URL: rcv.URL + "/hooks/stellar", Secret: secret, Sleep: sleep}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if s.Info.WebhookURL != rcv.URL+"/hooks/stellar" {
		t.Errorf("Info.WebhookURL = %q", s.Info.WebhookURL)
	}
	reply := post(t, s, "webhook-00000001", withdraw(s.Info.Wallets[0].Account, "2"))
	if reply.status != http.StatusOK {
		t.Fatalf("POST: %d %v", reply.status, reply.body)
	}
	first, second := <-got, <-got
	for _, d := range []delivery{first, second} {
		if d.verified != nil {
			t.Errorf("the receiver's check refused a delivery: %v", d.verified)
		}
		var ev struct {
			DetailType string `json:"detail-type"`
			Detail     struct {
				EventID, IdempotencyKey, TransactionHash string
			}
		}
		if err := json.Unmarshal([]byte(d.body), &ev); err != nil {
			t.Fatalf("body %s: %v", d.body, err)
		}
		if ev.DetailType != "Transfer Settled" || ev.Detail.IdempotencyKey != "webhook-00000001" ||
			ev.Detail.TransactionHash != reply.body["transactionHash"] || d.id != ev.Detail.EventID {
			t.Errorf("delivery %s (webhook-id %s): want the transfer's Transfer Settled under its eventId", d.body, d.id)
		}
	}
	if first.id != second.id || first.body != second.body {
		t.Errorf("the retry differs from the first attempt: %q/%q", first.id, second.id)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(waits) != 1 || waits[0] < 5*time.Second || waits[0] > 5500*time.Millisecond {
		t.Errorf("the retry waited %v, want the schedule's first wait, 5 s and its jitter", waits)
	}
}
