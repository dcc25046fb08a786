package queue

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var msg = transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:order-0001", ClaimID: strings.Repeat("ab", 16)}

func TestEncodeDecode(t *testing.T) {
	body, err := Encode(msg)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"storeKey":"transfer:0123456789abcdef:order-0001","claimId":"` + msg.ClaimID + `"}`; body != want {
		t.Fatalf("body = %s, want %s", body, want)
	}
	got, err := Decode(body + "\n")
	if err != nil || got != msg {
		t.Fatalf("Decode = %+v, %v", got, err)
	}
	if _, err := Encode(transfer.QueueMessage{StoreKey: msg.StoreKey}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("Encode without a claim ID: %v", err)
	}
}

func TestDecodeRefuses(t *testing.T) {
	for _, body := range []string{
		"", "null", "[]", `{}`, `{"storeKey":"transfer:x"}`, `{"claimId":"c"}`,
		`{"storeKey":"channel:G","claimId":"c"}`,
		`{"storeKey":"transfer:x","claimId":"c","request":{}}`,
		`{"storeKey":"transfer:x","claimId":"c"} {}`,
		`{"storeKey":"transfer:x","claimId":7}`,
		`{"storeKey":"transfer:x","claimId":"` + strings.Repeat("c", MaxBodyBytes) + `"}`,
	} {
		if m, err := Decode(body); !errors.Is(err, ErrMalformed) {
			t.Errorf("Decode(%.40q) = %+v, %v; want ErrMalformed", body, m, err)
		} else if strings.Contains(err.Error(), "transfer:x") {
			t.Errorf("the error quotes the body: %v", err)
		}
	}
}

type sendRecorder struct{ in *sqs.SendMessageInput }

func (s *sendRecorder) SendMessage(_ context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	s.in = in
	return &sqs.SendMessageOutput{}, nil
}

func TestSQSSend(t *testing.T) {
	rec := &sendRecorder{}
	q := SQS{Client: rec, URL: "https://sqs.eu-west-1.amazonaws.com/123456789012/transfers"}
	if err := q.Send(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if *rec.in.QueueUrl != q.URL || rec.in.MessageAttributes != nil || rec.in.DelaySeconds != 0 {
		t.Fatalf("input = %+v", rec.in)
	}
	if got, err := Decode(*rec.in.MessageBody); err != nil || got != msg {
		t.Fatalf("body %q: %+v, %v", *rec.in.MessageBody, got, err)
	}
}

type runnerFunc func(ctx context.Context, m transfer.QueueMessage) (transfer.Delivery, error)

func (f runnerFunc) RunQueued(ctx context.Context, m transfer.QueueMessage) (transfer.Delivery, error) {
	return f(ctx, m)
}

func sqsEvent(bodies ...string) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: string(rune('a' + i)), Body: b})
	}
	return ev
}

func body(t *testing.T, key, claim string) string {
	t.Helper()
	b, err := Encode(transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:" + key, ClaimID: claim})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The batch's messages run at once: each run waits until all of them have started.
func TestSubmitterRunsTheBatchConcurrently(t *testing.T) {
	const n = 10
	var started atomic.Int32
	all := make(chan struct{})
	r := runnerFunc(func(ctx context.Context, _ transfer.QueueMessage) (transfer.Delivery, error) {
		if started.Add(1) == n {
			close(all)
		}
		select {
		case <-all:
			return transfer.DeliveryDone, nil
		case <-ctx.Done():
			return transfer.DeliveryRetry, ctx.Err()
		}
	})
	var bodies []string
	for i := range n {
		bodies = append(bodies, body(t, "k"+string(rune('0'+i)), "c"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := Submitter(r, Visibility{}, nil)(ctx, sqsEvent(bodies...))
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp = %+v, %v: the runs did not overlap", resp, err)
	}
}

func TestSubmitterReportsWhatToDeliverAgain(t *testing.T) {
	r := runnerFunc(func(_ context.Context, m transfer.QueueMessage) (transfer.Delivery, error) {
		switch {
		case strings.HasSuffix(m.StoreKey, ":done"):
			return transfer.DeliveryDone, nil
		case strings.HasSuffix(m.StoreKey, ":stale"):
			return transfer.DeliveryStale, nil
		case strings.HasSuffix(m.StoreKey, ":retry"):
			return transfer.DeliveryRetry, errors.New("store down")
		}
		panic("boom")
	})
	resp, err := Submitter(r, Visibility{}, nil)(context.Background(), sqsEvent(
		body(t, "done", "c"), body(t, "stale", "c"), body(t, "retry", "c"), `{"not":"a message"}`, body(t, "panic", "c")))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range resp.BatchItemFailures {
		got = append(got, f.ItemIdentifier)
	}
	if strings.Join(got, ",") != "c,d,e" {
		t.Fatalf("failures = %v, want c,d,e (retry, malformed, panic)", got)
	}
}

func TestMemory(t *testing.T) {
	q := NewMemory()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got := make(chan transfer.QueueMessage)
	go func() {
		m, _ := q.Receive(ctx)
		got <- m
	}()
	if err := q.Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != msg {
		t.Fatalf("received %+v", m)
	}
	q.Close()
	if _, err := q.Receive(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Receive after Close: %v", err)
	}
	if err := q.Send(ctx, msg); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after Close: %v", err)
	}
}
