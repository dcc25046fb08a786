package devstack

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// The receiver's URL may carry its token in the query (README.md, "Signed webhooks": the
// deployed function's errors show the URL's scheme and host only). The local stack must keep it
// out of what it shows to anyone who asks: Info (the banner prints Info.WebhookURL) and
// GET /_sim/stack, which any process on the machine can read.
func TestLocalStackNeverShowsTheWebhookURLsQuery(t *testing.T) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer rcv.Close()
	const token = "receivers-secret-t0k3n"
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second,
		Ops: OpsOptions{Webhook: &WebhookOptions{URL: rcv.URL + "/hooks/stellar?token=" + token, Secret: GenerateWebhookSecret(),
			Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if strings.Contains(s.Info.WebhookURL, token) {
		t.Errorf("Info.WebhookURL = %q shows the receiver's token (the banner prints it)", s.Info.WebhookURL)
	}
	resp, err := http.Get(s.Info.HorizonURL + "/_sim/stack")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /_sim/stack = %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), token) {
		t.Errorf("GET /_sim/stack shows the receiver's token: %s", body)
	}
}

// With a virtual clock (Options.Clock), the local webhook's waits between attempts must not be
// taken on it: vclock.Sleep outside a schedule moves the clock on at once, so a receiver that
// refuses a delivery would get its ten attempts within milliseconds of real time (no time to come
// back), and every wait (5 s, 5 min, 30 min, ... 12 h) would move the service's and the
// network's time on with it, closing the ledgers due and running the transfers' deadlines out.
func TestLocalWebhookRetriesNeverMoveTheStacksVirtualClock(t *testing.T) {
	attempts := make(chan struct{}, 64)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		attempts <- struct{}{}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer rcv.Close()
	clock := vclock.New(time.Unix(1_900_000_000, 0))
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Clock: clock,
		Ops: OpsOptions{Webhook: &WebhookOptions{URL: rcv.URL + "/hook", Secret: GenerateWebhookSecret()}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	reply := post(t, s, "webhook-vclock-01", withdraw(s.Info.Wallets[0].Account, "2"))
	if reply.status != http.StatusOK {
		t.Fatalf("POST: %d %v", reply.status, reply.body)
	}
	settled := clock.Now()
	first := time.NewTimer(30 * time.Second)
	defer first.Stop()
	select {
	case <-attempts:
	case <-first.C:
		t.Fatal("the receiver got no attempt")
	}
	// The next attempt is due 5 s of real time after the first: none may come within 2 s.
	window := time.NewTimer(2 * time.Second)
	defer window.Stop()
	more := 0
	for done := false; !done; {
		select {
		case <-attempts:
			more++
		case <-window.C:
			done = true
		}
	}
	if more > 0 {
		t.Errorf("%d more attempts within 2 s of real time after the first refusal, want none before 5 s", more)
	}
	if moved := clock.Now().Sub(settled); moved >= 5*time.Second {
		t.Errorf("the refused attempts moved the stack's virtual clock %s: the webhook's waits are taken on it", moved)
	}
}

// Without WebhookOptions.Secret the stack generates one for the run: Info.WebhookSecret holds it
// for the banner, the deliveries are signed with it (the specification's library verifies them),
// and neither GET /_sim/stack, Info's JSON nor any log line, a refused delivery's included,
// carries it.
func TestGeneratedWebhookSecretIsShownInInfoOnly(t *testing.T) {
	var mu sync.Mutex
	var wh *standardwebhooks.Webhook
	verified := make(chan error, 8)
	attempt := 0
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		attempt++
		verified <- wh.Verify(b, r.Header)
		if attempt == 1 {
			w.WriteHeader(http.StatusServiceUnavailable) // a refusal the handler logs
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	logs := newWatched()
	s, err := Start(context.Background(), Options{LedgerInterval: time.Second, Logger: logging.New(logs, slog.LevelDebug),
		Ops: OpsOptions{Webhook: &WebhookOptions{URL: rcv.URL + "/hook", Sleep: func(ctx context.Context, _ time.Duration) error { return ctx.Err() }}}})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	secret := s.Info.WebhookSecret
	if !strings.HasPrefix(secret, webhook.SecretPrefix) {
		t.Fatalf("Info.WebhookSecret = %q, want a generated %s secret", secret, webhook.SecretPrefix)
	}
	mu.Lock()
	wh, err = standardwebhooks.NewWebhook(secret)
	mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	if r := post(t, s, "webhook-secret-01", withdraw(s.Info.Wallets[0].Account, "1")); r.status != http.StatusOK {
		t.Fatalf("POST: %d %v", r.status, r.body)
	}
	for range 2 { // the refused attempt, then the accepted one
		if err := <-verified; err != nil {
			t.Fatalf("a delivery is not signed with Info.WebhookSecret: %v", err)
		}
	}
	info, _ := json.Marshal(s.Info)
	resp, err := http.Get(s.Info.AdminURL + "stack")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	stack, _ := io.ReadAll(resp.Body)
	key := strings.TrimPrefix(secret, webhook.SecretPrefix)
	for what, b := range map[string][]byte{"Info's JSON": info, "GET /_sim/stack": stack, "the log": logs.bytes()} {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s carries the generated webhook secret:\n%s", what, b)
		}
	}
	if !bytes.Contains(logs.bytes(), []byte("webhook: delivery failed")) {
		t.Errorf("the refused delivery logged nothing, so the log was not checked where the secret could leak:\n%s", logs.bytes())
	}
}
