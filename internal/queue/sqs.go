package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// SendClient is the part of the SQS API that SQS uses; *sqs.Client satisfies it.
type SendClient interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
}

// SQS is transfer.Queue on an Amazon SQS standard queue (at-least-once, unordered delivery: the
// submitter tolerates both).
type SQS struct {
	Client SendClient
	// URL is the queue's URL (the template's TransferQueue, QUEUE_URL).
	URL string
}

// MaxDelay is the longest SendAfter holds a message back: SQS's DelaySeconds is 0 to 900 (the SQS
// API Reference, SendMessage).
const MaxDelay = 15 * time.Minute

// Send sends m's message (SendMessage). Errors wrap the SDK's; the item stays queued and the
// sweep sends it again.
func (q SQS) Send(ctx context.Context, m transfer.QueueMessage) error {
	return q.SendAfter(ctx, m, 0)
}

// SendAfter sends m's message held back for delay (transfer.DelayQueue): SendMessage with
// DelaySeconds, delay rounded up to whole seconds, at most MaxDelay (0 or less: at once). Errors
// wrap the SDK's, as Send's.
func (q SQS) SendAfter(ctx context.Context, m transfer.QueueMessage, delay time.Duration) error {
	body, err := Encode(m)
	if err != nil {
		return err
	}
	in := &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body), DelaySeconds: delaySeconds(delay)}
	if _, err := q.Client.SendMessage(ctx, in); err != nil {
		return fmt.Errorf("queue: send %q: %w", m.StoreKey, err)
	}
	return nil
}

// delaySeconds is d as SQS's DelaySeconds: whole seconds rounded up, within 0..MaxDelay.
func delaySeconds(d time.Duration) int32 {
	d = min(max(d, 0), MaxDelay)
	return int32((d + time.Second - 1) / time.Second)
}
