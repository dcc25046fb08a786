package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// BatchRunner runs the queued transfers of one event together (*transfer.Orchestrator.
// RunQueuedBatch): answers[i] is msgs[i]'s, as RunQueued would answer it.
type BatchRunner interface {
	RunQueuedBatch(ctx context.Context, msgs []transfer.QueueMessage) []transfer.Answer
}

// BatchSubmitter returns the SubmitterFunction's handler when BATCH_SIZE is above 1: it decodes
// every message of the event and hands the well-formed ones to r in one call, so that they can be
// paid by shared transactions (transfer doc.go, "Batches"). Each message is then answered exactly
// as Submitter answers it (ReportBatchItemFailures): delivered again when malformed, when its
// Answer is DeliveryRetry (its visibility timeout set by v to Backoff(RetryAfter(err), its
// ApproximateReceiveCount)), or when the run panicked in this goroutine (every message handed
// to r, keeping the queue's timeout); acknowledged when DeliveryDone or DeliveryStale. A run
// that returns fewer answers than messages leaves the unanswered ones to be delivered again. It
// never returns an error: that would redeliver the whole event.
func BatchSubmitter(r BatchRunner, v Visibility, log *slog.Logger) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		retry := make([]bool, len(ev.Records))
		var msgs []transfer.QueueMessage
		var at []int // msgs[j] is ev.Records[at[j]]
		for i, msg := range ev.Records {
			m, err := Decode(msg.Body)
			if err != nil {
				log.ErrorContext(ctx, "submitter: malformed message", "messageId", msg.MessageId, "err", err)
				retry[i] = true
				continue
			}
			msgs = append(msgs, m)
			at = append(at, i)
		}
		answers := runBatch(ctx, r, log, msgs)
		var wg sync.WaitGroup
		for j, i := range at {
			msg := ev.Records[i]
			if j >= len(answers) {
				log.ErrorContext(ctx, "submitter: the batch run gave no answer; the message will be delivered again", "messageId", msg.MessageId)
				retry[i] = true
				continue
			}
			ack, wait := judge(ctx, log, msg, msgs[j], answers[j].Delivery, answers[j].Err)
			retry[i] = !ack
			if !ack && wait > 0 {
				wg.Go(func() { v.Change(ctx, log, "submitter", msg, wait) })
			}
		}
		wg.Wait()
		return itemFailures(ev, retry), nil
	}
}

// runBatch calls r on msgs, turning a panic into no answers (every message delivered again).
func runBatch(ctx context.Context, r BatchRunner, log *slog.Logger, msgs []transfer.QueueMessage) (answers []transfer.Answer) {
	if len(msgs) == 0 {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "submitter: the batch run panicked; its messages will be delivered again", "messages", len(msgs), "panic", fmt.Sprint(v))
			answers = nil
		}
	}()
	return r.RunQueuedBatch(ctx, msgs)
}
