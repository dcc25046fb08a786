package devstack

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// WebhookOptions sends the settlement events to URL as the deployed WebhookFunction does: each
// event, as the rule delivers it, through webhook.Handler (the same code), signed with Secret.
// The template's queue is modelled by one goroutine per event that retries a failed delivery
// after webhook.RetryAfter, the visibility the function would set, up to webhook.MaxAttempts.
type WebhookOptions struct {
	// URL is the receiver (WEBHOOK_URL for `make run`): https, or http to a loopback address.
	URL string
	// Secret is one or more "whsec_" secrets (WEBHOOK_SECRET); empty: one is generated
	// (GenerateWebhookSecret) and shown in Info.WebhookSecret only (a local secret protecting
	// nothing, as a receiver under development needs it).
	Secret string
	// Sleep waits between attempts; nil: the real clock (a virtual one would jump hours of
	// ledgers for the schedule's waits).
	Sleep func(ctx context.Context, d time.Duration) error
}

// GenerateWebhookSecret is a new "whsec_" secret of 32 random bytes.
func GenerateWebhookSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// localWebhook delivers the local bus's events to one receiver.
type localWebhook struct {
	h     *webhook.Handler
	log   *slog.Logger
	sleep func(context.Context, time.Duration) error
	ctx   context.Context
	stop  context.CancelFunc
	wg    sync.WaitGroup
}

// newLocalWebhook checks o's URL and secret as the function's configuration would.
func newLocalWebhook(o WebhookOptions, log *slog.Logger, sleep func(context.Context, time.Duration) error) (*localWebhook, error) {
	if err := webhook.CheckEndpoint(o.URL); err != nil {
		return nil, fmt.Errorf("devstack: WEBHOOK_URL: %w", err)
	}
	sg, err := webhook.ParseSecrets(o.Secret)
	if err != nil {
		return nil, fmt.Errorf("devstack: WEBHOOK_SECRET: %w", err)
	}
	ctx, stop := context.WithCancel(context.Background())
	return &localWebhook{h: webhook.New(webhook.Config{Endpoint: o.URL, Secrets: webhook.Fixed(sg), Logger: log}),
		log: log, sleep: sleep, ctx: ctx, stop: stop}, nil
}

// send delivers one event (its JSON as the rule puts it on the queue), retrying in the background.
func (w *localWebhook) send(id string, body []byte) {
	w.wg.Go(func() {
		for attempt := 1; attempt <= webhook.MaxAttempts; attempt++ {
			msg := events.SQSMessage{MessageId: id, Body: string(body),
				Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(attempt)}}
			resp, _ := w.h.Handle(w.ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
			if len(resp.BatchItemFailures) == 0 {
				return
			}
			if attempt == webhook.MaxAttempts {
				break // deployed: the dead-letter queue at the next receive, no further wait
			}
			if w.sleep(w.ctx, webhook.RetryAfter(id, attempt, 0)) != nil {
				return
			}
		}
		w.log.Error("local webhook: the event was not delivered after every attempt (deployed: the dead-letter queue)", "id", id)
	})
}

func (w *localWebhook) close() {
	w.stop()
	w.wg.Wait()
}
