package webhook_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// A receiver in Go checks a delivery with the specification's library: the signature under its
// secret and the timestamp within five minutes of its clock; then it deduplicates on webhook-id.
func Example_receiver() {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // 24 bytes: the receiver's copy of the secret
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		panic(err)
	}
	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err := wh.Verify(body, r.Header); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Skip it if r.Header.Get("webhook-id") was processed already; then act on body.
		w.WriteHeader(http.StatusNoContent)
	})

	// What WebhookFunction sends (Signer.Sign), here with the same secret.
	sg, _ := webhook.ParseSecrets(secret)
	body := []byte(`{"detail-type":"Transfer Settled","detail":{"eventId":"9b1d4c2f0a7e4f3c8d2b6a1e5f0c3d7a","status":"success"}}`)
	for _, b := range [][]byte{body, bytes.Replace(body, []byte("success"), []byte("error"), 1)} {
		ts, sig, _ := sg.Sign("9b1d4c2f0a7e4f3c8d2b6a1e5f0c3d7a", time.Now(), body)
		req := httptest.NewRequest(http.MethodPost, "/hooks/stellar", bytes.NewReader(b))
		req.Header.Set(webhook.HeaderID, "9b1d4c2f0a7e4f3c8d2b6a1e5f0c3d7a")
		req.Header.Set(webhook.HeaderTimestamp, ts)
		req.Header.Set(webhook.HeaderSignature, sig)
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 204
	// 401
}
