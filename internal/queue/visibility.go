package queue

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// VisibilityChanger is the part of the SQS API that Visibility.Change uses to time a failed
// message's next delivery; *sqs.Client satisfies it.
type VisibilityChanger interface {
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, optFns ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// Visibility is where a function changes a failed message's visibility timeout (Change): Changer
// on the queue at URL, the queue the messages come from (QUEUE_URL: the template's TransferQueue
// for Submitter, the webhook queue for internal/webhook). The zero Visibility (no Changer, or no
// URL) changes nothing: every failed message then waits the queue's visibility timeout.
type Visibility struct {
	Changer VisibilityChanger
	URL     string
}

const (
	// MinBackoff is the shortest wait Backoff answers: SQS counts visibility in whole seconds, and
	// 0 would deliver the message again at once.
	MinBackoff = time.Second
	// MaxBackoff is the longest wait Backoff answers, well under SQS's most (43,200 s, 12 hours):
	// a transfer accepted with a 202 should not wait longer than this once its cause is gone.
	MaxBackoff = 5 * time.Minute
)

// Backoff is the visibility timeout to give a message that is to be delivered again: retryAfter
// (transfer.RetryAfter of the run's error), at least MinBackoff and rounded up to whole seconds,
// doubled for every receive after the first (receiveCount is SQS's ApproximateReceiveCount, 1 on
// the first delivery; below 1 counts as 1), at most MaxBackoff. With retryAfter 5 s (one ledger)
// the waits after receives 1, 2, 3, ... are 5, 10, 20, 40, 80, 160, 300, 300, 300, 300 s: about
// 25 minutes over 10 failed receives (the template's maxReceiveCount is 10: SQS moves the message
// to the dead-letter queue at the receive that would exceed it, once the 10th wait has passed;
// the SQS Developer Guide, "Using dead-letter queues"). This is the pattern of
// AWS's Lambda guide, "Handling errors for an SQS event source in Lambda" (partial batch
// responses), with the SQS API Reference's ChangeMessageVisibility (a timeout in whole seconds,
// 0 to 43,200, counted from the call).
func Backoff(retryAfter time.Duration, receiveCount int) time.Duration {
	d := min(max(retryAfter, MinBackoff), MaxBackoff)
	if r := d % time.Second; r != 0 {
		d += time.Second - r
	}
	for range max(receiveCount, 1) - 1 {
		if d >= MaxBackoff {
			break
		}
		d *= 2
	}
	return min(d, MaxBackoff)
}

// ReceiveCount is a message's ApproximateReceiveCount attribute (as the event source mapping
// requests it: 1 on the first delivery), 1 when absent, malformed or below 1.
func ReceiveCount(attrs map[string]string) int {
	n, err := strconv.Atoi(attrs["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}
