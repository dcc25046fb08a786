package alert_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An envelope replaced by fee goes in doubt: the page (the log line and the SNS message) names
// every outer hash, oldest first, so the operator searches for each; a page of an envelope never
// replaced keeps its one outerHash and no list.
func TestInDoubtAlertNamesEveryOuterHash(t *testing.T) {
	log, buf := logtest.New(t)
	pub := &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log})
	flight := inFlight("order-rbf")
	env := *flight.Envelope
	outers := []string{env.OuterHash, strings.Repeat("c3", 32), strings.Repeat("d4", 32)}
	env.OuterHashes, env.OuterHash = outers, outers[2]
	flight.Envelope = &env
	doubt := transfer.InDoubtRecord(flight, "TRANSFER_TIMEOUT", t0)
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "200", "MODIFY", &flight, &doubt),
	}}); err != nil {
		t.Fatal(err)
	}
	got := lines(t, buf)
	if len(got) != 1 {
		t.Fatalf("%d log lines", len(got))
	}
	list, _ := got[0]["outerHashes"].([]any)
	if len(list) != 3 || list[0] != outers[0] || list[2] != outers[2] || got[0]["outerHash"] != outers[2] {
		t.Fatalf("log line outerHash %v outerHashes %v, want all three", got[0]["outerHash"], got[0]["outerHashes"])
	}
	var msg alert.Details
	if err := json.Unmarshal([]byte(*pub.in[0].Message), &msg); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(msg.OuterHashes, outers) {
		t.Fatalf("SNS message outer hashes %v", msg.OuterHashes)
	}
	if d := alert.DetailsOf(inDoubt("order-plain")); d.OuterHashes != nil || d.OuterHash == "" {
		t.Fatalf("a plain envelope's details %+v", d)
	}
}
