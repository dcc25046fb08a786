package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/webhook"
)

// Webhook is what WebhookFunction reads at init (README.md, "Signed webhooks").
type Webhook struct {
	// URL is the receiver (WEBHOOK_URL): https (http to a loopback address only).
	URL string
	// SecretARN is the Secrets Manager secret whose SecretString holds the "whsec_" signing
	// secrets, space separated during a rotation (WEBHOOK_SECRET_ARN).
	SecretARN string
	// QueueURL is the queue the deliveries come from (QUEUE_URL), whose failed messages' visibility
	// the function sets to the retry schedule; empty: the queue's visibility timeout.
	QueueURL string
}

// LoadWebhook reads and validates the webhook function's configuration. Its errors show the
// URL's scheme and host only.
func LoadWebhook(getenv Getenv) (Webhook, error) {
	w := Webhook{URL: strings.TrimSpace(getenv("WEBHOOK_URL")), SecretARN: strings.TrimSpace(getenv("WEBHOOK_SECRET_ARN")),
		QueueURL: strings.TrimSpace(getenv("QUEUE_URL"))}
	var errs []error
	if w.URL == "" {
		errs = append(errs, errors.New("WEBHOOK_URL is required"))
	} else if err := webhook.CheckEndpoint(w.URL); err != nil {
		errs = append(errs, fmt.Errorf("WEBHOOK_URL: %w", err))
	}
	if w.SecretARN == "" {
		errs = append(errs, errors.New("WEBHOOK_SECRET_ARN is required (the signing secret: README.md, \"Signed webhooks\")"))
	}
	if len(errs) > 0 {
		return Webhook{}, fmt.Errorf("config: %w", errors.Join(errs...))
	}
	return w, nil
}
