// Package queue carries asynchronous transfers from the API to the submitter (README.md,
// "Asynchronous transfers"): transfer.Queue on Amazon SQS with aws-sdk-go-v2 (SQS), the
// SubmitterFunction's handler of SQS events (Submitter, functions/submitter), and an in-process
// queue for the local stack and tests (Memory).
//
// A message's body is the JSON of transfer.QueueMessage, {"storeKey":"transfer:<16 hex>:<key>",
// "claimId":"<32 hex>"}: the item's key and incarnation, never the request or anything secret;
// the submitter reads the request from the item. Its message attributes are none.
//
// The submitter answers with partial batch responses (events.SQSEventResponse, the event source
// mapping's ReportBatchItemFailures): a message is reported failed, and so delivered again (to the
// dead-letter queue after maxReceiveCount), when its body is malformed, its run panicked, the
// store could not be read, its transfer was queued again because nothing moved, or another
// invocation holds its transfer under a live lease (transfer.DeliveryRetry). A DeliveryRetry's
// message comes back after Backoff (ChangeMessageVisibility before the answer: seconds for a
// transient failure, the lease's remaining time for a live lease, doubling with each receive, at
// most MaxBackoff); any other failed message after the queue's visibility timeout. Every other message is acknowledged,
// whether it ran or was stale: whether a message may run anything is decided by the item alone
// (transfer.RunQueued), so a message delivered twice, late or out of order does nothing.
//
// Visibility.Change and ReceiveCount are the SQS side of any function that times its own retries
// (internal/webhook too, on its own schedule): the ChangeMessageVisibility call and the
// ApproximateReceiveCount attribute.
package queue
