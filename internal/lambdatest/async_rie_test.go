package lambdatest_test

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/lambdatest"
)

// An async transfer through both real bootstraps (README.md, "Asynchronous transfers"):
// ApiFunction answers Prefer: respond-async with 202 and sends the message to (a fake of) SQS;
// SubmitterFunction, invoked with the SQS event that carries it, pays the wallet and acknowledges
// it; the same message again, a stale one and a malformed one pay nothing more, and only the
// malformed one is reported for redelivery; the GET then shows success.
func TestRIESubmitterFunction(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	sqs := &lambdatest.SQS{}
	sqsSrv := httptest.NewServer(sqs)
	t.Cleanup(sqsSrv.Close)
	queueURL := "https://sqs.us-east-1.amazonaws.com/123456789012/transfers"
	api := start(t, "api", s.env(nil, "AWS_ENDPOINT_URL_SQS="+sqsSrv.URL, "QUEUE_URL="+queueURL), 29*time.Second)
	sub := start(t, "submitter", s.env(nil), 60*time.Second)

	key := "rie-async-00000001"
	body := fmt.Sprintf(`{"operationType":"withdraw","walletAddress":%q,"amount":"7.25","asset":"USDC"}`, s.wallet)
	post := apiEvent(t, "apigw-v2-request-post-transfer.json", "POST", "/transfers",
		map[string]string{"idempotency-key": key, "content-type": "application/json", "prefer": "respond-async"}, body)
	resp, got := httpResponse(t, invoke(t, api, post))
	location := "/wallets/" + s.wallet + "/transfers/" + key
	if resp.StatusCode != 202 || got["status"] != "pending" || resp.Headers["Location"] != location || resp.Headers["Preference-Applied"] != "respond-async" {
		t.Fatalf("POST /transfers (respond-async) = %d %v %v", resp.StatusCode, got, resp.Headers)
	}
	sent := sqs.Sent()
	if len(sent) != 1 || !strings.Contains(sent[0], `"claimId"`) || strings.Contains(sent[0], s.wallet) || strings.Contains(sent[0], "7.25") {
		t.Fatalf("sent %q: want one message with the store key and claim ID only", sent)
	}
	if bal, _ := s.net.Balance(s.wallet, s.usdc); bal != 0 {
		t.Fatalf("the wallet holds %d stroops before the submitter ran", bal)
	}

	message := func(id, body string) events.SQSMessage {
		return events.SQSMessage{MessageId: id, Body: body, EventSource: "aws:sqs", AWSRegion: "us-east-1",
			EventSourceARN: "arn:aws:sqs:us-east-1:123456789012:transfers", Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	}
	submit := func(msgs ...events.SQSMessage) []string {
		t.Helper()
		var out events.SQSEventResponse
		decodeAnswer(t, invoke(t, sub, events.SQSEvent{Records: msgs}), &out)
		var ids []string
		for _, f := range out.BatchItemFailures {
			ids = append(ids, f.ItemIdentifier)
		}
		return ids
	}
	if failed := submit(message("m-1", sent[0])); len(failed) != 0 {
		t.Fatalf("the submitter reported %v for redelivery", failed)
	}
	if bal, err := s.net.Balance(s.wallet, s.usdc); err != nil || bal != 72_500_000 {
		t.Fatalf("the wallet holds %d stroops of USDC (%v), want 7.25 USDC", bal, err)
	}
	var stale map[string]string
	if err := json.Unmarshal([]byte(sent[0]), &stale); err != nil {
		t.Fatal(err)
	}
	stale["claimId"] = strings.Repeat("0", 32)
	staleBody, _ := json.Marshal(stale)
	failed := submit(message("m-1-again", sent[0]), message("m-stale", string(staleBody)), message("m-bad", `{"storeKey":1}`))
	if strings.Join(failed, ",") != "m-bad" {
		t.Fatalf("redelivery of %v, want only the malformed m-bad", failed)
	}
	if bal, _ := s.net.Balance(s.wallet, s.usdc); bal != 72_500_000 {
		t.Fatalf("the wallet holds %d stroops after the duplicates, want 7.25 USDC once", bal)
	}
	getEv := apiEvent(t, "apigw-v2-request-get-transfer.json", "GET", location, nil, "")
	resp2, view := httpResponse(t, invoke(t, api, getEv))
	if resp2.StatusCode != 200 || view["status"] != "success" || !hexHash.MatchString(fmt.Sprint(view["transactionHash"])) {
		t.Fatalf("GET = %d %v", resp2.StatusCode, view)
	}
	// The same POST again replays the settled transfer (200), with or without the preference.
	resp3, again := httpResponse(t, invoke(t, api, post))
	if resp3.StatusCode != 200 || again["transactionHash"] != view["transactionHash"] || again["replayed"] != true {
		t.Fatalf("repeat = %d %v", resp3.StatusCode, again)
	}
	if len(sqs.Sent()) != 1 {
		t.Errorf("%d messages sent, want 1", len(sqs.Sent()))
	}
	reportTimes(t, "api", api, 3) // the 202, the GET, the replay
	reportTimes(t, "submitter", sub, 2)
	noSecretsIn(t, s, sub.Log())
	noSecretsIn(t, s, api.Log())
}
