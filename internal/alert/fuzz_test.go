package alert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging"
)

// FuzzStreamRecord: whatever a stream record holds (decoded from its JSON, as the Lambda runtime
// decodes it), the handler neither panics nor fails the batch (only a failed SNS publish or
// PutEvents does, and publishing never fails here), and no seed reaches the SNS message, its
// subject, a settlement event or the log; an event's detail is always a JSON
// object with a known status. The checked-in corpus
// (testdata/fuzz/FuzzStreamRecord) holds records built from real items, with seeds in the trace ID
// and the key, and malformed images.
func FuzzStreamRecord(f *testing.F) {
	t0 := inDoubt("order-0001")
	flight := inFlight("order-0001")
	for _, r := range []events.DynamoDBEventRecord{
		streamRecord(f, "1", "MODIFY", &flight, &t0),
		streamRecord(f, "2", "REMOVE", &t0, nil),
	} {
		b, err := json.Marshal(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"eventName":"INSERT","dynamodb":{"Keys":{"pk":{"S":"transfer:x:y"}},"NewImage":{"pk":{"N":"x"}}}}`))
	f.Add([]byte(`{"eventName":"MODIFY","dynamodb":{"NewImage":{"status":{"B":""}},"OldImage":{"pk":{"NULL":false}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var r events.DynamoDBEventRecord
		if json.Unmarshal(data, &r) != nil {
			return
		}
		// The functions' logger (logging.New: JSON, seeds redacted), one per input.
		var buf bytes.Buffer
		pub, b := &publisher{}, &bridge{}
		h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts",
			Events: b, EventBus: bus, Logger: logging.New(&buf, slog.LevelDebug)})
		resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}})
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle = %+v, %v", resp, err)
		}
		for _, in := range pub.in {
			if logging.ContainsSeed(*in.Message) || logging.ContainsSeed(*in.Subject) {
				t.Fatalf("the SNS message holds a seed: %s / %s", *in.Subject, *in.Message)
			}
		}
		for _, e := range b.ok {
			var d alert.EventDetail
			if err := json.Unmarshal([]byte(*e.Detail), &d); err != nil || logging.ContainsSeed(*e.Detail) ||
				(d.Status != alert.EventSuccess && d.Status != alert.EventError && d.Status != alert.EventInDoubt && d.Status != alert.EventReleased) {
				t.Fatalf("event %s: %s (%v)", *e.DetailType, *e.Detail, err)
			}
		}
		if logging.ContainsSeed(buf.String()) {
			t.Fatalf("the log holds a seed: %s", buf.String())
		}
	})
}
