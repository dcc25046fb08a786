package devstack

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
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
