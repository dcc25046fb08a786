// Package webhook delivers the settlement events (README.md, "Settlement events") to one HTTPS
// endpoint, signed as the Standard Webhooks specification signs (standardwebhooks.com,
// "Signature scheme"; https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md),
// so that a receiver can check that a body came from this service, unchanged, and recently.
//
// What the signature proves is that the event passed through this stack's bus and webhook queue:
// the function signs what the queue holds. A principal of the AWS account allowed
// events:PutEvents on the bus (an event's source is not reserved) or sqs:SendMessage on the queue
// is inside that boundary, as an operator is. A receiver that moves money on an event confirms it
// first with GET /wallets/{walletAddress}/transfers/{idempotencyKey} (README.md, "Signed webhooks").
//
// The path: an EventBridge rule on the settlement bus sends every event to an SQS queue
// (the template's SettlementWebhookQueue), and WebhookFunction (functions/webhook, Handler)
// posts each message's body, the EventBridge event exactly as the rule delivered it, with three
// headers:
//
//	webhook-id:        the event's detail.eventId (32 hex): the same for every delivery and every
//	                   retry of one transition, so the receiver deduplicates on it
//	webhook-timestamp: the attempt's time, integer seconds since the Unix epoch
//	webhook-signature: "v1,<base64 HMAC-SHA256>" for each signing secret, space separated
//
// The signed content is "<webhook-id>.<webhook-timestamp>.<body>", keyed with the secret's bytes
// (the base64 after "whsec_"). A receiver recomputes it, compares in constant time, and refuses a
// timestamp more than five minutes from its clock (replay protection: a captured delivery cannot
// be sent again later) and an id it has already processed (a retry within the five minutes).
// README.md, "Signed webhooks", shows it in Go, JavaScript and Python; testdata/ holds those
// receivers and the tests run each against this package's signatures.
//
// Signing uses the specification's own Go library (github.com/standard-webhooks/standard-webhooks/libraries)
// rather than code of ours, so a receiver using any of its libraries agrees with us by
// construction; this package adds only what the library leaves to the sender: the secrets and
// their rotation, the delivery, and the retries.
//
// Rotation: the Secrets Manager secret (WEBHOOK_SECRET_ARN) holds one or more "whsec_" secrets
// separated by spaces, and every delivery is signed with each (the specification's multiple
// signatures). To rotate, put "<new> <old>", move the receiver to the new one, then put "<new>".
// The function reads the secret again at most SecretTTL after its last read, so a rotation
// reaches every environment within that time without a deployment.
//
// Retries: a delivery answered other than 2xx (a redirect too: redirects are not followed), or
// not answered within the request timeout, is reported failed in the batch response and comes
// back after RetryAfter, the specification's suggested schedule (5 s, 5 min, 30 min, 2 h, 5 h,
// 10 h, then 11 h 55 min three times: about 54 hours in all), or the receiver's Retry-After when
// that is longer, set with ChangeMessageVisibility (queue.Visibility.Change). The queue's
// maxReceiveCount (10) then moves the message to the dead-letter queue, which pages
// (settlement-webhook-dead-letters). Deliveries are at least once and unordered, as the events
// are.
package webhook
