package queue

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type batchFunc func(ctx context.Context, msgs []transfer.QueueMessage) []transfer.Answer

func (f batchFunc) RunQueuedBatch(ctx context.Context, msgs []transfer.QueueMessage) []transfer.Answer {
	return f(ctx, msgs)
}

// visibilityRecorder records each message's new visibility timeout; BatchSubmitter changes
// several at once, one goroutine each.
type visibilityRecorder struct {
	mu  sync.Mutex
	got map[string]int32
}

func (v *visibilityRecorder) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.got[*in.ReceiptHandle] = in.VisibilityTimeout
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// The well-formed messages go to one RunQueuedBatch call, in order; each answer maps to its own
// message's failure as Submitter maps RunQueued's.
func TestBatchSubmitterMapsEachAnswer(t *testing.T) {
	var calls int
	var keys []string
	r := batchFunc(func(_ context.Context, msgs []transfer.QueueMessage) []transfer.Answer {
		calls++
		out := make([]transfer.Answer, len(msgs))
		for i, m := range msgs {
			keys = append(keys, m.StoreKey[strings.LastIndex(m.StoreKey, ":")+1:])
			switch {
			case strings.HasSuffix(m.StoreKey, ":done"):
				out[i] = transfer.Answer{Delivery: transfer.DeliveryDone}
			case strings.HasSuffix(m.StoreKey, ":stale"):
				out[i] = transfer.Answer{Delivery: transfer.DeliveryStale}
			default:
				out[i] = transfer.Answer{Delivery: transfer.DeliveryRetry, Err: errors.New("store down")}
			}
		}
		return out
	})
	ev := sqsEvent(body(t, "done", "c"), body(t, "stale", "c"), body(t, "retry", "c"), `{"not":"a message"}`)
	for i := range ev.Records {
		ev.Records[i].ReceiptHandle = ev.Records[i].MessageId
		ev.Records[i].Attributes = map[string]string{"ApproximateReceiveCount": "1"}
	}
	vis := &visibilityRecorder{got: map[string]int32{}}
	resp, err := BatchSubmitter(r, Visibility{Changer: vis, URL: "https://sqs.invalid/q"}, nil)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if strings.Join(got, ",") != "c,d" {
		t.Fatalf("failures = %v, want c,d (retry, malformed)", got)
	}
	if calls != 1 || strings.Join(keys, ",") != "done,stale,retry" {
		t.Fatalf("RunQueuedBatch called %d times with %v, want once with done,stale,retry", calls, keys)
	}
	want := int32(Backoff(transfer.RetryAfter(errors.New("store down")), 1) / time.Second)
	if len(vis.got) != 1 || vis.got["c"] != want {
		t.Fatalf("visibility changes = %v, want only c: %d", vis.got, want)
	}
}

// A panicking run, or one that answers fewer messages than it was given, leaves the unanswered
// messages to be delivered again.
func TestBatchSubmitterPanicAndShortAnswers(t *testing.T) {
	ev := sqsEvent(body(t, "a", "c"), body(t, "b", "c"))
	panics := batchFunc(func(context.Context, []transfer.QueueMessage) []transfer.Answer { panic("boom") })
	resp, err := BatchSubmitter(panics, Visibility{}, nil)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 2 {
		t.Fatalf("panic: resp = %+v, %v; want both failed", resp, err)
	}
	short := batchFunc(func(context.Context, []transfer.QueueMessage) []transfer.Answer {
		return []transfer.Answer{{Delivery: transfer.DeliveryDone}}
	})
	resp, err = BatchSubmitter(short, Visibility{}, nil)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "b" {
		t.Fatalf("short: resp = %+v, %v; want b failed", resp, err)
	}
	none := batchFunc(func(context.Context, []transfer.QueueMessage) []transfer.Answer {
		t.Fatal("called with no well-formed message")
		return nil
	})
	resp, err = BatchSubmitter(none, Visibility{}, nil)(context.Background(), events.SQSEvent{Records: []events.SQSMessage{{MessageId: "x", Body: "{}"}}})
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("malformed only: resp = %+v, %v", resp, err)
	}
}
