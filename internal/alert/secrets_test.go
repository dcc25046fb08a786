package alert_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
)

// TestSNSMessageIsRedacted: the SNS message, which no logger redacts, carries no seed even from
// an item written before the API refused and replaced them (a trace ID "Root=S...", a key): the
// message was the item's fields verbatim, so a seed in them reached SNS.
func TestSNSMessageIsRedacted(t *testing.T) {
	seed := keypair.MustRandom().Seed()
	log, buf := logtest.New(t)
	pub := &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log})
	flight, doubt := inFlight("order-"+seed), inDoubt("order-"+seed)
	doubt.TraceID = seed
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "100", "MODIFY", &flight, &doubt),
	}}); err != nil {
		t.Fatal(err)
	}
	if len(pub.in) != 1 {
		t.Fatalf("published %d messages", len(pub.in))
	}
	for what, s := range map[string]string{"message": *pub.in[0].Message, "subject": *pub.in[0].Subject, "log": string(buf.Bytes())} {
		if strings.Contains(s, seed) || logging.ContainsSeed(s) {
			t.Errorf("the %s holds the seed: %s", what, s)
		}
	}
	if !strings.Contains(*pub.in[0].Message, `"traceId":"[redacted]"`) {
		t.Errorf("message %s", *pub.in[0].Message)
	}
}
