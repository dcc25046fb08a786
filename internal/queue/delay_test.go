package queue

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var (
	_ transfer.DelayQueue = SQS{}
	_ transfer.DelayQueue = (*Memory)(nil)
)

// A requeue that must wait a failure's Retry-After (transfer.RequeueDelay) is held back by SQS
// itself: DelaySeconds, in whole seconds rounded up, at most SQS's 900.
func TestRequeueDelayIsSQSDelaySeconds(t *testing.T) {
	for _, c := range []struct {
		delay time.Duration
		want  int32
	}{
		{0, 0}, {-time.Second, 0}, {time.Minute, 60}, {1500 * time.Millisecond, 2}, {time.Hour, 900},
	} {
		rec := &sendRecorder{}
		q := SQS{Client: rec, URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/transfers"}
		if err := q.SendAfter(context.Background(), msg, c.delay); err != nil {
			t.Fatal(err)
		}
		if rec.in.DelaySeconds != c.want || *rec.in.QueueUrl != q.URL {
			t.Errorf("SendAfter(%v): DelaySeconds %d, want %d", c.delay, rec.in.DelaySeconds, c.want)
		}
		if got, err := Decode(*rec.in.MessageBody); err != nil || got != msg {
			t.Errorf("body %q: %+v, %v", *rec.in.MessageBody, got, err)
		}
	}
}

// The in-process queue holds a delayed message back until its After fires.
func TestMemorySendAfterHoldsTheMessageBack(t *testing.T) {
	q := NewMemory()
	var waits []time.Duration
	var fire []func()
	q.After = func(d time.Duration, f func()) { waits = append(waits, d); fire = append(fire, f) }
	if err := q.SendAfter(context.Background(), msg, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := q.Drain(); len(got) != 0 || len(waits) != 1 || waits[0] != time.Minute {
		t.Fatalf("before the delay: queued %v, waits %v; want nothing queued, one wait of 1m0s", got, waits)
	}
	fire[0]()
	if got := q.Drain(); len(got) != 1 || got[0] != msg {
		t.Fatalf("after the delay: %v, want the message", got)
	}
	if err := q.SendAfter(context.Background(), msg, 0); err != nil || len(waits) != 1 {
		t.Fatalf("no delay: %v, waits %v", err, waits)
	}
	if got := q.Drain(); len(got) != 1 {
		t.Fatalf("no delay: %v, want it queued at once", got)
	}
	if err := q.SendAfter(context.Background(), transfer.QueueMessage{StoreKey: msg.StoreKey}, time.Minute); err == nil || len(waits) != 1 {
		t.Fatalf("a malformed message: %v, waits %v; want refused at once", err, waits)
	}
}
