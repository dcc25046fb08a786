// Command webhook is the WebhookFunction Lambda: the settlement events on the webhook queue ->
// internal/webhook, posted signed to the receiver (README.md, "Signed webhooks"). It only wires
// (wiring.Init.WebhookHandler). Environment: WEBHOOK_URL, WEBHOOK_SECRET_ARN, QUEUE_URL.
package main

import "github.com/stellar-transfer/orchestrator/internal/wiring"

func main() {
	in := wiring.Begin()
	in.Start(in.WebhookHandler().Handle)
}
