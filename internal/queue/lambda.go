package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Runner runs one queued transfer (*transfer.Orchestrator.RunQueued).
type Runner interface {
	RunQueued(ctx context.Context, m transfer.QueueMessage) (transfer.Delivery, error)
}

// Submitter returns the SubmitterFunction's handler: every message of the batch runs at once, each
// in its own goroutine, so their ledger waits overlap (a batch is at most the event source
// mapping's BatchSize). It answers with the messages to deliver again (ReportBatchItemFailures):
// malformed bodies, store failures and requeued transfers (transfer.DeliveryRetry), and any
// message whose run panicked. It never returns an error: that would redeliver the whole batch.
func Submitter(r Runner, log *slog.Logger) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		retry := make([]bool, len(ev.Records))
		var wg sync.WaitGroup
		for i, msg := range ev.Records {
			wg.Go(func() {
				retry[i] = !deliver(ctx, r, log, msg)
			})
		}
		wg.Wait()
		var resp events.SQSEventResponse
		for i, msg := range ev.Records {
			if retry[i] {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
			}
		}
		return resp, nil
	}
}

// deliver runs one message and reports whether it may be acknowledged.
func deliver(ctx context.Context, r Runner, log *slog.Logger, msg events.SQSMessage) (ack bool) {
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "submitter: the run panicked; the message will be delivered again", "messageId", msg.MessageId, "panic", fmt.Sprint(v))
			ack = false
		}
	}()
	m, err := Decode(msg.Body)
	if err != nil {
		log.ErrorContext(ctx, "submitter: malformed message", "messageId", msg.MessageId, "err", err)
		return false
	}
	d, err := r.RunQueued(ctx, m)
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	attrs := []any{"messageId", msg.MessageId, "storeKey", m.StoreKey, "delivery", string(d),
		"receiveCount", msg.Attributes["ApproximateReceiveCount"]}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	log.Log(ctx, level, "submitter: message", attrs...)
	return d == transfer.DeliveryDone || d == transfer.DeliveryStale
}
