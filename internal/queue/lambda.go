package queue

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Runner runs one queued transfer (*transfer.Orchestrator.RunQueued).
type Runner interface {
	RunQueued(ctx context.Context, m transfer.QueueMessage) (transfer.Delivery, error)
}

// Submitter returns the SubmitterFunction's handler: every message of the batch runs at once, each
// in its own goroutine, so their ledger waits overlap (a batch is at most the event source
// mapping's BatchSize). It answers with the messages to deliver again (ReportBatchItemFailures):
// malformed bodies, store failures, requeued transfers and transfers another invocation holds
// under a live lease (transfer.DeliveryRetry), and any message whose run panicked. It never returns an error: that would redeliver the whole batch.
//
// Before it answers a DeliveryRetry as failed, it sets that message's visibility timeout with v
// (ChangeMessageVisibility of its receipt handle) to Backoff(transfer.RetryAfter(err), its
// ApproximateReceiveCount), so that a transient failure costs seconds rather than the queue's
// visibility timeout. A failed change is logged and changes nothing else: the message then waits
// the queue's visibility timeout. A malformed message or a panicked run keeps the queue's timeout:
// waiting less would not mend it. The zero Visibility changes no timeout.
func Submitter(r Runner, v Visibility, log *slog.Logger) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		retry := make([]bool, len(ev.Records))
		var wg sync.WaitGroup
		for i, msg := range ev.Records {
			wg.Go(func() {
				ack, wait := deliver(ctx, r, log, msg)
				retry[i] = !ack
				if !ack && wait > 0 {
					v.Change(ctx, log, "submitter", msg, wait)
				}
			})
		}
		wg.Wait()
		return itemFailures(ev, retry), nil
	}
}

// deliver runs one message and reports whether it may be acknowledged, and when it may not, the
// visibility timeout to give it (0: the queue's).
func deliver(ctx context.Context, r Runner, log *slog.Logger, msg events.SQSMessage) (ack bool, wait time.Duration) {
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "submitter: the run panicked; the message will be delivered again", "messageId", msg.MessageId, "panic", fmt.Sprint(v))
			ack, wait = false, 0
		}
	}()
	m, err := Decode(msg.Body)
	if err != nil {
		log.ErrorContext(ctx, "submitter: malformed message", "messageId", msg.MessageId, "err", err)
		return false, 0
	}
	d, err := r.RunQueued(ctx, m)
	return judge(ctx, log, msg, m, d, err)
}

// judge logs the run of msg (decoded as m) that answered d, err and reports whether msg may be
// acknowledged (DeliveryDone, DeliveryStale), and when it may not, the visibility timeout to give
// it: Backoff(RetryAfter(err), its ApproximateReceiveCount) for a DeliveryRetry, else 0 (the
// queue's).
func judge(ctx context.Context, log *slog.Logger, msg events.SQSMessage, m transfer.QueueMessage, d transfer.Delivery, err error) (ack bool, wait time.Duration) {
	level := slog.LevelInfo
	if err != nil {
		level = slog.LevelWarn
	}
	attrs := []any{"messageId", msg.MessageId, "storeKey", m.StoreKey, "delivery", string(d),
		"receiveCount", msg.Attributes["ApproximateReceiveCount"]}
	if d == transfer.DeliveryRetry {
		wait = Backoff(transfer.RetryAfter(err), ReceiveCount(msg.Attributes))
		attrs = append(attrs, "retryInSeconds", int(wait/time.Second))
	}
	if err != nil {
		attrs = append(attrs, "err", err.Error())
	}
	log.Log(ctx, level, "submitter: message", attrs...)
	return d == transfer.DeliveryDone || d == transfer.DeliveryStale, wait
}

// Change sets msg's visibility timeout to wait (whole seconds; the SQS API Reference,
// ChangeMessageVisibility: 0 to 43,200, counted from the call) on v's queue. A Visibility without
// a Changer or a URL changes nothing. A failed change is logged on log, with what (the function's
// name, "submitter" or "webhook") before the message, and changes nothing else: the message then
// waits the queue's visibility timeout.
func (v Visibility) Change(ctx context.Context, log *slog.Logger, what string, msg events.SQSMessage, wait time.Duration) {
	if v.Changer == nil || v.URL == "" {
		return
	}
	secs := int32(wait / time.Second)
	_, err := v.Changer.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(v.URL), ReceiptHandle: aws.String(msg.ReceiptHandle), VisibilityTimeout: secs})
	if err != nil {
		log.WarnContext(ctx, what+": changing the message's visibility failed; it waits the queue's visibility timeout",
			"messageId", msg.MessageId, "visibilityTimeout", secs, "err", err)
	}
}

// itemFailures is the partial batch response (ReportBatchItemFailures) that has SQS deliver again
// each message of ev whose retry is true, and delete the others.
func itemFailures(ev events.SQSEvent, retry []bool) events.SQSEventResponse {
	var resp events.SQSEventResponse
	for i, msg := range ev.Records {
		if retry[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
		}
	}
	return resp
}
