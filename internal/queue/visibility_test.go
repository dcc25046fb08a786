package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		retryAfter time.Duration
		receives   int
		want       time.Duration
	}{
		// One ledger (a requeue with no error): 5, 10, 20, ... s, then MaxBackoff.
		{5 * time.Second, 1, 5 * time.Second},
		{5 * time.Second, 2, 10 * time.Second},
		{5 * time.Second, 3, 20 * time.Second},
		{5 * time.Second, 6, 160 * time.Second},
		{5 * time.Second, 7, 300 * time.Second},
		{5 * time.Second, 10, 300 * time.Second},
		{5 * time.Second, 1 << 30, MaxBackoff},
		// Receive counts below 1 (absent) count as the first.
		{5 * time.Second, 0, 5 * time.Second},
		{5 * time.Second, -3, 5 * time.Second},
		// At least 1 s; fractions round up to whole seconds before doubling.
		{0, 1, time.Second},
		{-time.Minute, 2, 2 * time.Second},
		{time.Millisecond, 1, time.Second},
		{1500 * time.Millisecond, 1, 2 * time.Second},
		{1500 * time.Millisecond, 3, 8 * time.Second},
		// At most MaxBackoff, whatever retryAfter says.
		{time.Minute, 3, 240 * time.Second},
		{time.Minute, 4, MaxBackoff},
		{time.Hour, 1, MaxBackoff},
		{time.Duration(1<<63 - 1), 5, MaxBackoff},
	} {
		if got := Backoff(c.retryAfter, c.receives); got != c.want {
			t.Errorf("Backoff(%v, %d) = %v, want %v", c.retryAfter, c.receives, got, c.want)
		}
	}
}

// The schedule's sum over the 10 waits before the template's maxReceiveCount (10) moves a message
// that fails on every receive to the dead-letter queue (SQS moves it at the 11th receive, after
// the 10th failure's wait): README.md, "Asynchronous transfers".
func TestBackoffLife(t *testing.T) {
	for _, c := range []struct {
		retryAfter time.Duration
		want       time.Duration
	}{
		{transfer.DefaultLedgerInterval, 1515 * time.Second}, // about 25 minutes
		{time.Second, 811 * time.Second},                     // about 13.5 minutes
	} {
		var life time.Duration
		for n := 1; n <= 10; n++ {
			life += Backoff(c.retryAfter, n)
		}
		if life != c.want {
			t.Errorf("a message retried every %v lives %v before the dead-letter queue, want %v", c.retryAfter, life, c.want)
		}
	}
}

type visibilityCall struct {
	url, receipt string
	timeout      int32
}

type fakeChanger struct {
	mu    sync.Mutex
	calls []visibilityCall
	err   error
}

func (f *fakeChanger) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, visibilityCall{url: *in.QueueUrl, receipt: *in.ReceiptHandle, timeout: in.VisibilityTimeout})
	return &sqs.ChangeMessageVisibilityOutput{}, f.err
}

func (f *fakeChanger) byReceipt() map[string]visibilityCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]visibilityCall{}
	for _, c := range f.calls {
		out[c.receipt] = c
	}
	return out
}

const queueURL = "https://sqs.eu-west-1.amazonaws.com/123456789012/transfers"

// Each DeliveryRetry's message gets a visibility timeout backed off from its problem's
// RetryAfter and its receive count, by its own receipt handle, before the answer; an acknowledged,
// malformed or panicked message gets none.
func TestSubmitterBacksOffRetries(t *testing.T) {
	r := runnerFunc(func(_ context.Context, m transfer.QueueMessage) (transfer.Delivery, error) {
		switch m.StoreKey[strings.LastIndex(m.StoreKey, ":")+1:] {
		case "done":
			return transfer.DeliveryDone, nil
		case "stale":
			return transfer.DeliveryStale, nil
		case "requeued":
			return transfer.DeliveryRetry, nil
		case "busy":
			return transfer.DeliveryRetry, &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 2300 * time.Millisecond}
		case "open":
			return transfer.DeliveryRetry, fmt.Errorf("wrapped: %w", &transfer.UnavailableError{Code: transfer.CodeCircuitOpen, RetryAfter: 40 * time.Second})
		case "store":
			return transfer.DeliveryRetry, &transfer.UnavailableError{Code: transfer.CodeStoreUnavailable, Err: errors.New("throttled")}
		}
		panic("boom")
	})
	rec := func(id, key, receives string) events.SQSMessage {
		m := events.SQSMessage{MessageId: id, ReceiptHandle: "rh-" + id, Body: body(t, key, "c")}
		if receives != "" {
			m.Attributes = map[string]string{"ApproximateReceiveCount": receives}
		}
		return m
	}
	ev := events.SQSEvent{Records: []events.SQSMessage{
		rec("m1", "done", "1"),
		rec("m2", "stale", "3"),
		rec("m3", "requeued", "1"),  // 5 s
		rec("m4", "requeued", "4"),  // 5 s x 8
		rec("m5", "busy", "2"),      // 3 s x 2
		rec("m6", "open", "4"),      // 40 s x 8, capped at 300 s
		rec("m7", "store", ""),      // absent count: the first, one ledger
		rec("m8", "requeued", "x"),  // malformed count: the first
		rec("m9", "requeued", "99"), // capped
		{MessageId: "m10", ReceiptHandle: "rh-m10", Body: "{"},
		rec("m11", "panic", "1"),
	}}
	ch := &fakeChanger{}
	resp, err := Submitter(r, Visibility{Changer: ch, URL: queueURL}, nil)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if got, want := strings.Join(failed, ","), "m3,m4,m5,m6,m7,m8,m9,m10,m11"; got != want {
		t.Fatalf("failures = %s, want %s", got, want)
	}
	want := map[string]int32{"rh-m3": 5, "rh-m4": 40, "rh-m5": 6, "rh-m6": 300, "rh-m7": 5, "rh-m8": 5, "rh-m9": 300}
	got := ch.byReceipt()
	if len(ch.calls) != len(want) {
		t.Errorf("%d ChangeMessageVisibility calls, want %d: %+v", len(ch.calls), len(want), ch.calls)
	}
	for receipt, timeout := range want {
		c, ok := got[receipt]
		switch {
		case !ok:
			t.Errorf("no ChangeMessageVisibility for %s", receipt)
		case c.timeout != timeout || c.url != queueURL:
			t.Errorf("%s: ChangeMessageVisibility(%s, %d s), want (%s, %d s)", receipt, c.url, c.timeout, queueURL, timeout)
		}
	}
}

// A failed ChangeMessageVisibility changes nothing else: the message is still reported failed
// (it then waits the queue's visibility timeout), and the others are answered as before.
func TestSubmitterVisibilityFailureChangesNothingElse(t *testing.T) {
	r := runnerFunc(func(_ context.Context, m transfer.QueueMessage) (transfer.Delivery, error) {
		if strings.HasSuffix(m.StoreKey, ":done") {
			return transfer.DeliveryDone, nil
		}
		return transfer.DeliveryRetry, nil
	})
	ch := &fakeChanger{err: errors.New("AccessDenied")}
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ev := sqsEvent(body(t, "retry", "c"), body(t, "done", "c"))
	ev.Records[0].ReceiptHandle = "rh-a"
	resp, err := Submitter(r, Visibility{Changer: ch, URL: queueURL}, log)(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "a" {
		t.Fatalf("resp = %+v, %v; want only a failed", resp, err)
	}
	if len(ch.calls) != 1 || ch.calls[0] != (visibilityCall{url: queueURL, receipt: "rh-a", timeout: 5}) {
		t.Fatalf("calls = %+v", ch.calls)
	}
	if !strings.Contains(logged.String(), "changing the message's visibility failed") || !strings.Contains(logged.String(), "AccessDenied") {
		t.Fatalf("the failure is not logged:\n%s", logged.String())
	}
}

var _ VisibilityChanger = (*sqs.Client)(nil)

// The SDK's own client, against a fake SQS on 127.0.0.1: Submitter's change is the AWS JSON
// protocol's ChangeMessageVisibility with the queue URL, the receipt handle and whole seconds.
func TestSubmitterChangesVisibilityWithTheSDK(t *testing.T) {
	var mu sync.Mutex
	var target string
	var got struct {
		QueueUrl          string
		ReceiptHandle     string
		VisibilityTimeout int
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		target = r.Header.Get("X-Amz-Target")
		_ = json.NewDecoder(r.Body).Decode(&got)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte("{}"))
	}))
	defer srv.Close()
	client := sqs.New(sqs.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")})
	r := runnerFunc(func(context.Context, transfer.QueueMessage) (transfer.Delivery, error) {
		return transfer.DeliveryRetry, &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 3 * time.Second}
	})
	ev := sqsEvent(body(t, "busy", "c"))
	ev.Records[0].ReceiptHandle = "AQEB-receipt"
	ev.Records[0].Attributes = map[string]string{"ApproximateReceiveCount": "3"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := Submitter(r, Visibility{Changer: client, URL: queueURL}, nil)(ctx, ev)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("resp = %+v, %v", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if target != "AmazonSQS.ChangeMessageVisibility" || got.QueueUrl != queueURL || got.ReceiptHandle != "AQEB-receipt" || got.VisibilityTimeout != 12 {
		t.Fatalf("SQS got %s %+v, want ChangeMessageVisibility of AQEB-receipt to 12 s", target, got)
	}
}

// Change calls ChangeMessageVisibility on v's queue with the wait in whole seconds and the
// message's receipt handle; a Visibility that names no queue, or has no Changer, calls nothing
// (a function deployed without QUEUE_URL leaves its messages the queue's visibility timeout). A
// failure is logged under the caller's name.
func TestVisibilityChangeNeedsAQueue(t *testing.T) {
	msg := events.SQSMessage{MessageId: "m-1", ReceiptHandle: "rh-1"}
	ch := &fakeChanger{}
	Visibility{Changer: ch}.Change(context.Background(), slog.New(slog.DiscardHandler), "webhook", msg, 90*time.Second)
	Visibility{URL: queueURL}.Change(context.Background(), slog.New(slog.DiscardHandler), "webhook", msg, 90*time.Second)
	if len(ch.calls) != 0 {
		t.Fatalf("a Visibility without a queue URL changed %+v", ch.calls)
	}
	ch.err = errors.New("AccessDenied")
	var logged strings.Builder
	Visibility{Changer: ch, URL: queueURL}.Change(context.Background(), slog.New(slog.NewTextHandler(&logged, nil)), "webhook", msg, 90500*time.Millisecond)
	if len(ch.calls) != 1 || ch.calls[0] != (visibilityCall{url: queueURL, receipt: "rh-1", timeout: 90}) {
		t.Fatalf("calls = %+v, want one of 90 s for rh-1", ch.calls)
	}
	if !strings.Contains(logged.String(), `msg="webhook: changing the message's visibility failed`) {
		t.Fatalf("the failure is not logged under the caller's name:\n%s", logged.String())
	}
}

// ReceiveCount reads ApproximateReceiveCount, 1 when it is absent, malformed or below 1.
func TestReceiveCount(t *testing.T) {
	for v, want := range map[string]int{"": 1, "1": 1, "7": 7, "x": 1, "0": 1, "-3": 1} {
		attrs := map[string]string{}
		if v != "" {
			attrs["ApproximateReceiveCount"] = v
		}
		if got := ReceiveCount(attrs); got != want {
			t.Errorf("ReceiveCount(%q) = %d, want %d", v, got, want)
		}
	}
}
