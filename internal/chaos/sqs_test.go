package chaos

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// The campaign's SQS model keeps the receipt-handle rules of the SQS API Reference: a message
// received again gets a new handle and its count goes up; ChangeMessageVisibility with the older
// handle fails, with the newer one it hides the message for the new timeout counted from the
// call; DeleteMessage with the newest handle deletes it although the older receive still holds it.
func TestSQSModelReceiptHandles(t *testing.T) {
	start := time.Unix(2_000_000_000, 0)
	clock := vclock.New(start)
	var ev counter
	q := newSQSQueue(clock, rand.New(rand.NewPCG(1, 2)), nil, &ev)
	if err := q.Send(context.Background(), transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:k", ClaimID: "c"}); err != nil {
		t.Fatal(err)
	}
	first := q.receive(4)
	if len(first.Records) != 1 || len(q.receive(4).Records) != 0 {
		t.Fatalf("first receive %+v; a received message must be hidden for the visibility timeout", first)
	}
	clock.Advance(visibilityInCampaign) // the first receiver is still at work: its timeout passes
	second := q.receive(4)
	if len(second.Records) != 1 || second.Records[0].MessageId != first.Records[0].MessageId ||
		second.Records[0].ReceiptHandle == first.Records[0].ReceiptHandle || second.Records[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("second receive %+v after %+v: want the same message, a new handle, count 2", second, first)
	}
	if ev.snapshot()["queue_received_while_held"] != 1 {
		t.Errorf("events %v: want the re-receipt counted", ev.snapshot())
	}
	change := func(rec events.SQSMessage, secs int32) error {
		_, err := q.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{ReceiptHandle: &rec.ReceiptHandle, VisibilityTimeout: secs})
		return err
	}
	if err := change(first.Records[0], 5); err == nil {
		t.Error("ChangeMessageVisibility with the stale handle succeeded")
	}
	clock.Advance(10 * time.Second)
	if err := change(second.Records[0], 5); err != nil {
		t.Fatalf("ChangeMessageVisibility with the newest handle: %v", err)
	}
	clock.Advance(4 * time.Second)
	if got := len(q.receive(4).Records); got != 0 {
		t.Fatalf("received %d messages 4 s into a 5 s visibility counted from the change", got)
	}
	// The older receive still holds the message; the newer one acknowledges it.
	q.answer(second, events.SQSEventResponse{}, false)
	if q.alive() != 0 {
		t.Fatalf("%d messages left after DeleteMessage with the newest handle, want 0", q.alive())
	}
	if err := change(first.Records[0], 5); err == nil {
		t.Error("ChangeMessageVisibility of a deleted message succeeded")
	}
	q.answer(first, events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: first.Records[0].MessageId}}}, false)
	clock.Advance(time.Hour)
	if got := len(q.receive(4).Records); got != 0 {
		t.Errorf("a deleted message was received again (%d records) without faults", got)
	}
}

// A message that no invocation acknowledges (it died) waits the visibility timeout from its
// receive, however late the invocation's end.
func TestSQSModelDeadInvocationDeletesNothing(t *testing.T) {
	clock := vclock.New(time.Unix(2_000_000_000, 0))
	q := newSQSQueue(clock, rand.New(rand.NewPCG(1, 2)), nil, nil)
	for _, k := range []string{"a", "b"} {
		if err := q.Send(context.Background(), transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:" + k, ClaimID: "c"}); err != nil {
			t.Fatal(err)
		}
	}
	ev := q.receive(4)
	if len(ev.Records) != 2 {
		t.Fatalf("received %d records, want 2", len(ev.Records))
	}
	q.answer(ev, events.SQSEventResponse{}, true)
	if q.alive() != 2 {
		t.Fatalf("%d messages left after a dead invocation, want 2", q.alive())
	}
	clock.Advance(visibilityInCampaign - time.Second)
	if got := len(q.receive(4).Records); got != 0 {
		t.Fatalf("received %d records before the visibility timeout", got)
	}
	clock.Advance(time.Second)
	if got := len(q.receive(4).Records); got != 2 {
		t.Fatalf("received %d records once the visibility timeout passed, want 2", got)
	}
}

// TestSQSModelDeadLettersWhenSQSWould: the campaign's queue moves a message to the dead-letter
// queue when SQS would: when its ReceiveCount would exceed maxReceiveCount (the SQS Developer
// Guide, "Using dead-letter queues"; CloudFormation's RedrivePolicy). A message whose transfer is
// requeued every ledger (nothing moved, Retry-After 5 s) on every receive is delivered 10 times,
// and the 10th failure's backoff (ChangeMessageVisibility) is still waited before the 11th receive
// moves it: 5+10+20+40+80+160+300+300+300+300 = 1,515 s (about 25 minutes) after the first
// receive. README.md and template.yaml give operators these figures (and 10 x 360 s for a message
// whose invocation dies).
func TestSQSModelDeadLettersWhenSQSWould(t *testing.T) {
	start := time.Unix(2_000_000_000, 0)
	clock := vclock.New(start)
	var faults counter
	q := newSQSQueue(clock, rand.New(rand.NewPCG(1, 2)), &faults, nil)
	if err := q.Send(context.Background(), transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:k", ClaimID: "c"}); err != nil {
		t.Fatal(err)
	}
	receives := 0
	var deadAt time.Duration
	for step := 0; step < 10_000 && deadAt == 0; step++ {
		if ev := q.receive(4); len(ev.Records) > 0 {
			receives++
			rec := ev.Records[0]
			if got := rec.Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(receives) {
				t.Fatalf("receive %d counted as %s", receives, got)
			}
			// SubmitterFunction's answer to a requeued transfer: backoff, then failed.
			wait := queue.Backoff(transfer.DefaultLedgerInterval, receives)
			if _, err := q.ChangeMessageVisibility(context.Background(), &sqs.ChangeMessageVisibilityInput{
				ReceiptHandle: &rec.ReceiptHandle, VisibilityTimeout: int32(wait / time.Second)}); err != nil {
				t.Fatal(err)
			}
			q.answer(ev, events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{{ItemIdentifier: rec.MessageId}}}, false)
		}
		if faults.snapshot()["queue_dead_lettered"] > 0 {
			deadAt = clock.Now().Sub(start)
			break
		}
		clock.Advance(time.Second)
	}
	if receives != 10 {
		t.Errorf("%d receives before the dead-letter queue, want maxReceiveCount (10)", receives)
	}
	if deadAt != 1515*time.Second {
		t.Errorf("dead-lettered %v after the first receive, want 1,515 s (the 10th backoff waited, then the 11th receive)", deadAt)
	}
}
