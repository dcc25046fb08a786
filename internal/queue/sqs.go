package queue

import (
	"context"
	"fmt"

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

// Send sends m's message (SendMessage). Errors wrap the SDK's; the item stays queued and the
// sweep sends it again.
func (q SQS) Send(ctx context.Context, m transfer.QueueMessage) error {
	body, err := Encode(m)
	if err != nil {
		return err
	}
	if _, err := q.Client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(body)}); err != nil {
		return fmt.Errorf("queue: send %q: %w", m.StoreKey, err)
	}
	return nil
}
