package alert_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"

func inFlight(key string) transfer.Record {
	return transfer.Record{
		StoreKey: "transfer:0123456789abcdef:" + key, Status: transfer.StatusInFlight, Fingerprint: "f1f2f3-secret-fingerprint",
		Request:   transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "12.5", Asset: "USDC", Stroops: 125_000_000},
		ClientKey: key, TraceID: "1-abc-def", LeaseOwner: "owner", LeaseExpiresAt: t0.Add(time.Minute), Version: 2,
		CreatedAt: t0, UpdatedAt: t0,
		Envelope: &transfer.Envelope{XDR: "AAAA-signed-xdr", InnerHash: strings.Repeat("a1", 32), OuterHash: strings.Repeat("b2", 32),
			MaxTime: t0.Unix() + 40, SubmittedLedger: 77},
	}
}

func inDoubt(key string) transfer.Record {
	r := transfer.InDoubtRecord(inFlight(key), "TRANSFER_TIMEOUT", t0.Add(45*time.Second))
	return r
}

func image(t testing.TB, rec *transfer.Record) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	if rec == nil {
		return nil
	}
	av, err := dynamo.EncodeItem(*rec)
	if err != nil {
		t.Fatal(err)
	}
	img, err := alert.FromSDK(av)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func streamRecord(t testing.TB, seq, name string, old, new *transfer.Record) events.DynamoDBEventRecord {
	key := ""
	if old != nil {
		key = old.StoreKey
	} else if new != nil {
		key = new.StoreKey
	}
	return events.DynamoDBEventRecord{
		EventID: "ev-" + seq, EventName: name, EventSource: "aws:dynamodb", AWSRegion: "us-east-1",
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(key)},
			OldImage:       image(t, old),
			NewImage:       image(t, new),
			SequenceNumber: seq,
			StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
}

type fakeIndex struct{ n int }

func (f fakeIndex) ListInDoubt(_ context.Context, limit int, cursor string) ([]transfer.Record, string, error) {
	// Pages of limit items; the cursor is the offset.
	off := 0
	if cursor != "" {
		off = len(cursor)
	}
	end := min(off+limit, f.n)
	recs := make([]transfer.Record, end-off)
	next := ""
	if end < f.n {
		next = strings.Repeat("x", end)
	}
	return recs, next, nil
}

type gauge struct {
	mu     sync.Mutex
	values []int
}

func (g *gauge) InDoubtGauge(_ context.Context, n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.values = append(g.values, n)
}

type publisher struct {
	in  []*sns.PublishInput
	err error
}

func (p *publisher) Publish(_ context.Context, in *sns.PublishInput, _ ...func(*sns.Options)) (*sns.PublishOutput, error) {
	p.in = append(p.in, in)
	return &sns.PublishOutput{}, p.err
}

func lines(t *testing.T, buf *logtest.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, l := range bytes.Split(bytes.TrimSpace(buf.Bytes()), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

func TestEnteringInDoubtAlertsWithTheOperatorFields(t *testing.T) {
	log, buf := logtest.New(t)
	g, pub := &gauge{}, &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 250}, Gauge: g, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log})
	flight, doubt, direct := inFlight("order-0001"), inDoubt("order-0001"), inDoubt("order-0002")
	resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "100", "MODIFY", &flight, &doubt),
		streamRecord(t, "101", "INSERT", nil, &direct),
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v, err %v", resp, err)
	}
	got := lines(t, buf)
	if len(got) != 2 {
		t.Fatalf("%d log lines, want 2", len(got))
	}
	want := map[string]any{
		"level": "ERROR", "alert": "transfer-in-doubt", "storeKey": doubt.StoreKey, "walletAddress": wallet,
		"operationType": "withdraw", "amount": "12.5", "asset": "USDC", "failingCode": "TRANSFER_TIMEOUT",
		"idempotencyKey": "order-0001", "traceId": "1-abc-def", "innerHash": strings.Repeat("a1", 32),
		"outerHash": strings.Repeat("b2", 32), "maxTime": float64(t0.Unix() + 40), "submittedLedger": float64(77),
	}
	for k, v := range want {
		if got[0][k] != v {
			t.Errorf("%s = %v, want %v", k, got[0][k], v)
		}
	}
	raw := string(buf.Bytes())
	for _, secret := range []string{"f1f2f3-secret-fingerprint", "AAAA-signed-xdr", "owner"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the log contains %q", secret)
		}
	}
	if len(pub.in) != 2 || *pub.in[0].TopicArn != "arn:aws:sns:us-east-1:1:alerts" {
		t.Fatalf("published %+v", pub.in)
	}
	var msg alert.Details
	if err := json.Unmarshal([]byte(*pub.in[0].Message), &msg); err != nil {
		t.Fatal(err)
	}
	if want := alert.DetailsOf(doubt); !reflect.DeepEqual(msg, want) {
		t.Fatalf("SNS message %+v, want %+v", msg, want)
	}
	if strings.Contains(*pub.in[0].Message, "fingerprint") || strings.Contains(*pub.in[0].Message, "AAAA-signed-xdr") {
		t.Fatalf("the SNS message leaks: %s", *pub.in[0].Message)
	}
	if !reflect.DeepEqual(g.values, []int{250}) {
		t.Fatalf("gauge %v, want one 250 (counted over pages)", g.values)
	}
}

func TestLeavingInDoubtIsLoggedAsResolved(t *testing.T) {
	log, buf := logtest.New(t)
	g := &gauge{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 0}, Gauge: g, Logger: log})
	doubt := inDoubt("order-0003")
	landed := transfer.SettledRecord(doubt, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 99}, t0.Add(time.Minute), time.Hour)
	audited := inDoubt("order-0004")
	audited.Audit = &transfer.Audit{Action: "discard", Operator: "alice", RequestID: "req-9", Reason: "history gone", Forced: true, At: t0}
	bumped := doubt
	bumped.Version++
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "1", "MODIFY", &doubt, &bumped), // in_doubt -> in_doubt: nothing
		streamRecord(t, "2", "MODIFY", &doubt, &landed),
		streamRecord(t, "3", "REMOVE", &audited, nil),
	}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	got := lines(t, buf)
	if len(got) != 2 {
		t.Fatalf("%d lines, want 2: %v", len(got), got)
	}
	if got[0]["level"] != "INFO" || got[0]["alert"] != "transfer-in-doubt-resolved" || got[0]["resolution"] != "replayable" ||
		got[0]["transactionHash"] != strings.Repeat("a1", 32) || got[0]["ledger"] != float64(99) {
		t.Errorf("landed: %v", got[0])
	}
	a, _ := got[1]["audit"].(map[string]any)
	if got[1]["resolution"] != "released" || a["operator"] != "alice" || a["requestId"] != "req-9" || a["forced"] != true || a["reason"] != "history gone" {
		t.Errorf("released: %v", got[1])
	}
	if !reflect.DeepEqual(g.values, []int{0}) {
		t.Fatalf("gauge %v, want [0]", g.values)
	}
}

func TestOtherChangesAreIgnored(t *testing.T) {
	log, buf := logtest.New(t)
	g := &gauge{}
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: g, Logger: log})
	flight := inFlight("order-0005")
	landed := transfer.SettledRecord(flight, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 5}, t0, time.Hour)
	channel := events.DynamoDBEventRecord{EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "9",
		Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("channel:GABC")},
		OldImage:       map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("channel:GABC"), "status": events.NewStringAttribute("leased")},
		NewImage:       map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("channel:GABC"), "status": events.NewStringAttribute("free")},
	}}
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "1", "INSERT", nil, &flight),
		streamRecord(t, "2", "MODIFY", &flight, &landed),
		streamRecord(t, "3", "REMOVE", &flight, nil),
		channel,
	}})
	if len(resp.BatchItemFailures) != 0 || len(buf.Bytes()) != 0 || len(g.values) != 0 {
		t.Fatalf("failures %v, log %q, gauge %v: want nothing", resp.BatchItemFailures, buf.Bytes(), g.values)
	}
}

func TestMalformedRecordsAreReportedAndSkipped(t *testing.T) {
	log, buf := logtest.New(t)
	h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Logger: log})
	doubt := inDoubt("order-0006")
	badStatus := streamRecord(t, "1", "INSERT", nil, &doubt)
	badStatus.Change.NewImage["status"] = events.NewNumberAttribute("7")
	noImage := streamRecord(t, "2", "MODIFY", &doubt, nil)
	unknown := streamRecord(t, "3", "TRUNCATE", nil, &doubt)
	resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		badStatus, noImage, unknown, streamRecord(t, "4", "INSERT", nil, &doubt),
	}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resp %+v err %v: malformed records must not fail the batch", resp, err)
	}
	got := lines(t, buf)
	if len(got) != 4 {
		t.Fatalf("%d lines, want 3 reports and 1 alert: %v", len(got), got)
	}
	for i, l := range got[:3] {
		if l["level"] != "ERROR" || l["msg"] != "malformed stream record skipped" || l["sequenceNumber"] != []string{"1", "2", "3"}[i] {
			t.Errorf("report %d: %v", i, l)
		}
	}
	if got[3]["alert"] != "transfer-in-doubt" {
		t.Errorf("the record after the malformed ones was not alerted: %v", got[3])
	}
}

func TestAPublishFailureRetriesTheBatchFromThatRecord(t *testing.T) {
	log, _ := logtest.New(t)
	pub := &publisher{err: errors.New("throttled")}
	g := &gauge{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 2}, Gauge: g, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:t", Logger: log})
	flight, doubt := inFlight("order-0007"), inDoubt("order-0007")
	other := inDoubt("order-0008")
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "10", "INSERT", nil, &flight),
		streamRecord(t, "11", "MODIFY", &flight, &doubt),
		streamRecord(t, "12", "INSERT", nil, &other),
	}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "11" {
		t.Fatalf("failures %+v, want only sequence number 11", resp.BatchItemFailures)
	}
	if len(pub.in) != 1 {
		t.Fatalf("published %d times, want 1 (records after the failure wait for the retry)", len(pub.in))
	}
	if !reflect.DeepEqual(g.values, []int{2}) {
		t.Fatalf("gauge %v", g.values)
	}
}

func TestImageConversionRoundTrips(t *testing.T) {
	item := map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberS{Value: "x"}, "n": &types.AttributeValueMemberN{Value: "12.5"},
		"b": &types.AttributeValueMemberB{Value: []byte{1, 2}}, "bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true}, "ss": &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns": &types.AttributeValueMemberNS{Value: []string{"1", "2"}}, "bs": &types.AttributeValueMemberBS{Value: [][]byte{{3}}},
		"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberS{Value: "y"}}},
		"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"k": &types.AttributeValueMemberN{Value: "1"}}},
	}
	img, err := alert.FromSDK(item)
	if err != nil {
		t.Fatal(err)
	}
	// Through JSON, as the Lambda runtime delivers it.
	b, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	got, err := alert.ToSDK(back)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, item) {
		t.Fatalf("round trip:\n got %#v\nwant %#v", got, item)
	}
	if _, err := alert.ToSDK(map[string]events.DynamoDBAttributeValue{"zero": {}}); err == nil {
		t.Fatal("a value of no type converted")
	}
}
