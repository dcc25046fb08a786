package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/stellar-transfer/orchestrator/internal/queue"
)

// received is one request a test receiver got.
type received struct {
	header http.Header
	body   []byte
}

// receiver is an endpoint on 127.0.0.1 answering status (and Retry-After, when set) and keeping
// what it got.
type receiver struct {
	mu         sync.Mutex
	got        []received
	status     int
	retryAfter string
	srv        *httptest.Server
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{status: status}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{req.Header.Clone(), b})
		status, ra := r.status, r.retryAfter
		r.mu.Unlock()
		if ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		if status == http.StatusFound {
			w.Header().Set("Location", "/elsewhere")
		}
		w.WriteHeader(status)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// fixedSecrets serves one Signer, or an error.
type fixedSecrets struct {
	sg  Signer
	err error
}

func (f fixedSecrets) Signer(context.Context) (Signer, error) { return f.sg, f.err }

// visibilities records ChangeMessageVisibility calls.
type visibilities struct {
	mu  sync.Mutex
	got map[string]int32
}

func (v *visibilities) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.got == nil {
		v.got = map[string]int32{}
	}
	v.got[aws.ToString(in.ReceiptHandle)] = in.VisibilityTimeout
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// eventBody is a settlement event as the rule puts it on the queue.
func eventBody(id string) string {
	return `{"version":"0","id":"6f0c8e0e-3b1a-4c55-9a43-2d1b7f0e9c11","detail-type":"Transfer Settled","source":"stellar-transfer-orchestrator",` +
		`"detail":{"schemaVersion":1,"eventId":"` + id + `","status":"success","amount":"12.5"}}`
}

func record(id, body string, receive int) events.SQSMessage {
	return events.SQSMessage{MessageId: "m-" + id, ReceiptHandle: "rh-" + id, Body: body,
		Attributes: map[string]string{"ApproximateReceiveCount": fmt.Sprint(receive)}}
}

func newHandler(t *testing.T, endpoint string, secrets interface {
	Signer(context.Context) (Signer, error)
}, v queue.VisibilityChanger) *Handler {
	return New(Config{Endpoint: endpoint, Secrets: secrets, Visibility: queue.Visibility{Changer: v, URL: "http://127.0.0.1/queue/webhook"},
		Now: func() time.Time { return signedAt }})
}

func TestDeliveryPostsTheEventUnchangedSignedUnderItsEventID(t *testing.T) {
	rcv := newReceiver(t, http.StatusNoContent)
	sg, _ := ParseSecrets(secretA)
	h := newHandler(t, rcv.srv.URL+"/hooks/stellar", fixedSecrets{sg: sg}, nil)
	body := eventBody(eventID)
	resp, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("1", body, 1)}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v; want every record delivered", resp, err)
	}
	got := rcv.requests()
	if len(got) != 1 {
		t.Fatalf("the receiver got %d requests, want 1", len(got))
	}
	if string(got[0].body) != body {
		t.Errorf("body = %s, want the event as queued, byte for byte", got[0].body)
	}
	if id := got[0].header.Get(HeaderID); id != eventID {
		t.Errorf("webhook-id = %q, want the event's eventId %q", id, eventID)
	}
	if ts := got[0].header.Get(HeaderTimestamp); ts != fmt.Sprint(signedAt.Unix()) {
		t.Errorf("webhook-timestamp = %q, want the attempt's Unix seconds %d", ts, signedAt.Unix())
	}
	if ct := got[0].header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	wh, _ := standardwebhooks.NewWebhook(secretA)
	if err := wh.VerifyIgnoringTimestamp(got[0].body, got[0].header); err != nil {
		t.Errorf("the specification's library refused the delivery: %v", err)
	}
}

func TestRefusedDeliveryComesBackOnTheSpecificationsSchedule(t *testing.T) {
	for _, c := range []struct {
		name       string
		status     int
		retryAfter string
		receive    int
		min, max   time.Duration
	}{
		{"500 at the first attempt", http.StatusInternalServerError, "", 1, 5 * time.Second, 5500 * time.Millisecond},
		{"404 at the third", http.StatusNotFound, "", 3, 30 * time.Minute, 33 * time.Minute},
		{"a redirect is a failure, not followed", http.StatusFound, "", 2, 5 * time.Minute, 330 * time.Second},
		{"410 Gone is retried until the dead-letter queue pages", http.StatusGone, "", 9, maxVisibility, maxVisibility},
		{"the receiver's longer Retry-After wins", http.StatusServiceUnavailable, "3600", 1, time.Hour, time.Hour},
		{"a shorter Retry-After does not", http.StatusTooManyRequests, "1", 2, 5 * time.Minute, 330 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			rcv := newReceiver(t, c.status)
			rcv.retryAfter = c.retryAfter
			sg, _ := ParseSecrets(secretA)
			vis := &visibilities{}
			h := newHandler(t, rcv.srv.URL, fixedSecrets{sg: sg}, vis)
			resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				record("bad", eventBody(eventID), c.receive), record("good", eventBody(strings.Repeat("0", 32)), 1)}})
			if len(resp.BatchItemFailures) != 2 || resp.BatchItemFailures[0].ItemIdentifier != "m-bad" {
				t.Fatalf("failures = %+v, want both records (the receiver refuses all)", resp.BatchItemFailures)
			}
			wait := time.Duration(vis.got["rh-bad"]) * time.Second
			if wait < c.min || wait > c.max {
				t.Errorf("visibility = %s, want %s to %s", wait, c.min, c.max)
			}
			if c.status == http.StatusFound && len(rcv.requests()) != 2 {
				t.Errorf("the receiver got %d requests: the redirect was followed", len(rcv.requests()))
			}
		})
	}
}

func TestUnansweredDeliveryIsRetriedAndItsErrorHidesTheEndpointsQuery(t *testing.T) {
	block := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-block:
		}
	}))
	defer srv.Close()
	defer close(block)
	sg, _ := ParseSecrets(secretA)
	h := New(Config{Endpoint: srv.URL + "/hook?token=receivers-secret-token", Secrets: fixedSecrets{sg: sg},
		Client: &http.Client{Timeout: 50 * time.Millisecond}, Now: func() time.Time { return signedAt }})
	_, err := h.deliver(context.Background(), record("1", eventBody(eventID), 1))
	var de *DeliveryError
	if !errors.As(err, &de) || de.Status != 0 {
		t.Fatalf("err = %v, want a DeliveryError with no status", err)
	}
	if strings.Contains(err.Error(), "receivers-secret-token") {
		t.Errorf("the error %q shows the endpoint's query", err)
	}
}

func TestMessageThatIsNotOurEventIsRetriedToTheDeadLetterQueueNotPosted(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	sg, _ := ParseSecrets(secretA)
	h := newHandler(t, rcv.srv.URL, fixedSecrets{sg: sg}, nil)
	var recs []events.SQSMessage
	for i, b := range []string{"not json", `{"detail":{}}`, eventBody("ABCDEF0123456789ABCDEF0123456789"), eventBody("a.b")} {
		recs = append(recs, record(fmt.Sprint(i), b, 1))
	}
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: recs})
	if len(resp.BatchItemFailures) != len(recs) {
		t.Errorf("failures = %d, want every one of %d", len(resp.BatchItemFailures), len(recs))
	}
	if n := len(rcv.requests()); n != 0 {
		t.Errorf("the receiver got %d requests, want none", n)
	}
}

func TestDeliveryWithoutASigningSecretIsRetriedNotSentUnsigned(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	h := newHandler(t, rcv.srv.URL, fixedSecrets{err: errors.New("secrets manager: throttled")}, nil)
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{record("1", eventBody(eventID), 1)}})
	if len(resp.BatchItemFailures) != 1 || len(rcv.requests()) != 0 {
		t.Errorf("failures %d, requests %d: want the record retried and nothing sent", len(resp.BatchItemFailures), len(rcv.requests()))
	}
}

func TestRetryScheduleIsTheSpecificationsWithBoundedJitter(t *testing.T) {
	want := []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour, 10 * time.Hour, maxVisibility, maxVisibility, maxVisibility, maxVisibility}
	var total time.Duration
	for i, w := range want {
		d := RetryAfter("m-1", i+1, 0)
		if d < w || d > min(w+w/10, maxVisibility) || d%time.Second != 0 {
			t.Errorf("attempt %d: %s, want %s plus at most a tenth, whole seconds", i+1, d, w)
		}
		if d != RetryAfter("m-1", i+1, 0) {
			t.Errorf("attempt %d: the jitter is not a function of the message and the attempt", i+1)
		}
		if i < MaxAttempts-1 {
			total += d
		}
	}
	if total < 53*time.Hour || total > 60*time.Hour {
		t.Errorf("a delivery is retried for %s before the dead-letter queue, want about 54 hours", total)
	}
	if MaxAttempts != 10 {
		t.Errorf("MaxAttempts = %d; the template's maxReceiveCount must follow it", MaxAttempts)
	}
	if d := RetryAfter("m-1", 1, 48*time.Hour); d != maxVisibility {
		t.Errorf("a Retry-After of two days gave %s, want the most SQS accepts after the receive, %s", d, maxVisibility)
	}
}

// secretsAPI serves a SecretString that a test can change, counting reads.
type secretsAPI struct {
	mu    sync.Mutex
	value string
	err   error
	reads int
}

func (s *secretsAPI) GetSecretValue(_ context.Context, _ *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	if s.err != nil {
		return nil, s.err
	}
	return &secretsmanager.GetSecretValueOutput{SecretString: aws.String(s.value)}, nil
}

func TestRotatedSecretReachesTheSignerWithinItsTTLAndABadOneKeepsTheLast(t *testing.T) {
	api := &secretsAPI{value: secretA}
	now := signedAt
	src := &SecretSource{API: api, ID: "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook", Now: func() time.Time { return now }}
	sign := func() string {
		t.Helper()
		sg, err := src.Signer(context.Background())
		if sg.Keys() == 0 {
			t.Fatalf("no signer: %v", err)
		}
		_, sig, _ := sg.Sign(eventID, signedAt, []byte("{}"))
		return sig
	}
	first := sign()
	api.value = secretB + " " + secretA
	now = now.Add(SecretTTL - time.Second)
	if sign() != first || api.reads != 1 {
		t.Fatalf("within the TTL: %d reads, want the first read served", api.reads)
	}
	now = now.Add(2 * time.Second)
	if got := sign(); len(strings.Fields(got)) != 2 || api.reads != 2 {
		t.Fatalf("after the TTL: signature %q after %d reads, want both secrets of the rotation", got, api.reads)
	}
	api.value = "whsec_typo"
	now = now.Add(SecretTTL)
	sg, err := src.Signer(context.Background())
	if !errors.Is(err, ErrInvalidSecret) || sg.Keys() != 2 {
		t.Fatalf("a malformed rotation: %d keys, err %v; want the last good signer and the error", sg.Keys(), err)
	}
	if strings.Contains(err.Error(), "typo") {
		t.Errorf("the error %q shows the secret's value", err)
	}
	fresh := &SecretSource{API: &secretsAPI{err: errors.New("AccessDeniedException")}, ID: "webhook"}
	if sg, err := fresh.Signer(context.Background()); err == nil || sg.Keys() != 0 {
		t.Errorf("no secret ever read: %d keys, err %v; want an error", sg.Keys(), err)
	}
}
