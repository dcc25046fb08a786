package webhook

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// queueVisibilityTimeout is the template's SettlementWebhookQueue VisibilityTimeout: how long a
// failed message waits when its ChangeMessageVisibility is refused.
const queueVisibilityTimeout = 180 * time.Second

// sqsVisibility holds ChangeMessageVisibility to SQS's rule: a message's visibility, counted from
// the ReceiveMessage that delivered it, ends at most 12 hours after that receive, and a longer one
// is refused, not shortened (the SQS API Reference, ChangeMessageVisibility: "If you attempt to
// set the VisibilityTimeout to an amount more than the maximum time left, Amazon SQS returns an
// error"; the error is InvalidParameterValue, "Total VisibilityTimeout for the message is beyond
// the limit [43200 seconds]"). elapsed is the time from the receive to the call: the event
// source mapping's poll and the delivery itself, never zero.
type sqsVisibility struct {
	elapsed time.Duration

	mu      sync.Mutex
	set     map[string]int32
	refused map[string]int32
}

func (s *sqsVisibility) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.set == nil {
		s.set, s.refused = map[string]int32{}, map[string]int32{}
	}
	rh := aws.ToString(in.ReceiptHandle)
	if s.elapsed+time.Duration(in.VisibilityTimeout)*time.Second > 12*time.Hour {
		s.refused[rh] = in.VisibilityTimeout
		return nil, fmt.Errorf("InvalidParameterValue: Value %d for parameter VisibilityTimeout is invalid. Reason: Total VisibilityTimeout for the message is beyond the limit [43200 seconds]", in.VisibilityTimeout)
	}
	s.set[rh] = in.VisibilityTimeout
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// Every wait the handler asks of SQS must be one SQS accepts at the moment it is asked, a second
// after the receive at the earliest: a refused one leaves the message on the queue's 180 s
// visibility, so the 12-hour waits of the schedule (attempts 7 to 9) and a receiver's long
// Retry-After become three minutes, and the ten attempts end 18 to 19 hours after the first (the
// six shorter waits and their jitter), not the 54 README.md promises.
func TestRetryVisibilityNeverExceedsWhatSQSAcceptsAfterTheReceive(t *testing.T) {
	rcv := newReceiver(t, http.StatusServiceUnavailable)
	sg, _ := ParseSecrets(secretA)
	vis := &sqsVisibility{elapsed: time.Second}
	h := newHandler(t, rcv.srv.URL, fixedSecrets{sg: sg}, vis)
	var total time.Duration
	for n := 1; n < MaxAttempts; n++ {
		rec := record(fmt.Sprint(n), eventBody(eventID), n)
		if _, err := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}}); err != nil {
			t.Fatal(err)
		}
		vis.mu.Lock()
		if v, ok := vis.refused[rec.ReceiptHandle]; ok {
			t.Errorf("attempt %d: SQS refuses a visibility of %d s a second after the receive; the message comes back after the queue's %s instead",
				n, v, queueVisibilityTimeout)
			total += queueVisibilityTimeout
		} else {
			total += time.Duration(vis.set[rec.ReceiptHandle]) * time.Second
		}
		vis.mu.Unlock()
	}
	if total < 50*time.Hour {
		t.Errorf("the %d attempts end %s after the first, want about 54 hours (README.md, \"Signed webhooks\")", MaxAttempts, total.Round(time.Minute))
	}

	rcv.retryAfter = "86400"
	rec := record("retry-after", eventBody(eventID), 1)
	_, _ = h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
	vis.mu.Lock()
	defer vis.mu.Unlock()
	if v, ok := vis.refused[rec.ReceiptHandle]; ok {
		t.Errorf("Retry-After: 86400: SQS refuses the visibility of %d s; the retry comes after %s, not after the longest wait SQS allows",
			v, queueVisibilityTimeout)
	}
}

// After the last attempt (ApproximateReceiveCount = MaxAttempts = maxReceiveCount) the message
// has nothing left but the dead-letter queue, which SQS moves it to at its next receive: the
// handler must not hold it invisible for another schedule wait first (12 hours, on top of the 54
// before the alarm pages).
func TestLastAttemptsFailureReachesTheDeadLetterQueueWithoutAnotherWait(t *testing.T) {
	rcv := newReceiver(t, http.StatusInternalServerError)
	sg, _ := ParseSecrets(secretA)
	vis := &visibilities{}
	h := newHandler(t, rcv.srv.URL, fixedSecrets{sg: sg}, vis)
	rec := record("last", eventBody(eventID), MaxAttempts)
	resp, _ := h.Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{rec}})
	if len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures = %+v, want the record reported (SQS then dead-letters it)", resp.BatchItemFailures)
	}
	vis.mu.Lock()
	defer vis.mu.Unlock()
	if v, ok := vis.got[rec.ReceiptHandle]; ok && time.Duration(v)*time.Second > queueVisibilityTimeout {
		t.Errorf("after attempt %d of %d the message is held invisible %s before SQS dead-letters it, want at most the queue's %s",
			MaxAttempts, MaxAttempts, time.Duration(v)*time.Second, queueVisibilityTimeout)
	}
}

// The package documentation states the schedule and the maxReceiveCount the code and the
// template use (README.md and the template say 10 attempts over about 54 hours).
func TestPackageDocStatesTheRetryScheduleTheCodeRuns(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(doc)), " ")
	if want := fmt.Sprintf("maxReceiveCount (%d)", MaxAttempts); !strings.Contains(text, want) {
		t.Errorf("doc.go does not say %q (MaxAttempts, the template's maxReceiveCount)", want)
	}
	for _, stale := range []string{"10 h, 10 h", "27.6 hours", "maxReceiveCount (8)"} {
		if strings.Contains(text, stale) {
			t.Errorf("doc.go says %q; the schedule is 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, then 12 h three times", stale)
		}
	}
}

// readmeGoReceiver is README.md's Go receiver ("Signed webhooks") as written there, given the
// value of WEBHOOK_SECRET: its start-up (standardwebhooks.NewWebhook), then the check of each
// request (wh.Verify over the raw body). It follows the README: change both together.
func readmeGoReceiver(secret string) (func(body []byte, h http.Header) error, error) {
	if len(secret) < len("whsec_")+32 {
		return nil, errors.New("WEBHOOK_SECRET is not a whsec_ secret")
	}
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		return nil, err
	}
	return wh.Verify, nil
}

// A receiver set up as README.md shows, whose secret is empty (an unset WEBHOOK_SECRET, a
// `WEBHOOK_SECRET=` line in an env file, a bare "whsec_"), must refuse every delivery: with the
// key empty, anyone can compute the HMAC, so accepting is accepting forgeries. The specification
// makes a secret at least 24 bytes ("Signing secret: Random. At least 24 bytes").
func TestReceiversNeverAcceptASignatureUnderAnEmptySecret(t *testing.T) {
	forger, _ := standardwebhooks.NewWebhookRaw(nil)
	body := strings.Replace(eventBody(eventID), "12.5", "999999.5", 1)
	now := time.Now()
	sig, err := forger.Sign(eventID, now, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	headers := map[string]string{HeaderID: eventID, HeaderTimestamp: fmt.Sprint(now.Unix()), HeaderSignature: sig}

	for _, secret := range []string{"", SecretPrefix} {
		verify, err := readmeGoReceiver(secret)
		if err != nil {
			continue // refused at start-up: safe
		}
		hdr := http.Header{}
		for k, v := range headers {
			hdr.Set(k, v)
		}
		if verify([]byte(body), hdr) == nil {
			t.Errorf("go, WEBHOOK_SECRET=%q: README.md's receiver accepts a delivery forged with an empty key", secret)
		}
	}

	for _, lang := range []struct{ name, cmd, script string }{{"javascript", "node", "testdata/verify.js"}, {"python", "python3", "testdata/verify.py"}} {
		path, err := exec.LookPath(lang.cmd)
		if err != nil {
			t.Errorf("%s: %s is not installed: %v", lang.name, lang.cmd, err)
			continue
		}
		for _, secret := range []string{"", SecretPrefix} {
			in, _ := json.Marshal(map[string]any{"headers": headers, "body": body})
			cmd := exec.Command(path, lang.script)
			cmd.Env = append(cmd.Environ(), "WEBHOOK_SECRET="+secret, fmt.Sprintf("WEBHOOK_NOW=%d", now.Unix()))
			cmd.Stdin = bytes.NewReader(in)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Errorf("%s: %v", lang.name, err)
				continue
			}
			if strings.TrimSpace(string(out)) == "ok" {
				t.Errorf("%s, WEBHOOK_SECRET=%q: verify accepts a delivery forged with an empty key", lang.name, secret)
			}
		}
	}
}

// rawHeaders posts one delivery through the Handler to a listener on 127.0.0.1 that reads the
// request's bytes, and answers the header lines as they are on the wire (name as sent: value).
func rawHeaders(t *testing.T, body string) map[string]string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan map[string]string, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		br := bufio.NewReader(c)
		h := map[string]string{}
		if _, err := br.ReadString('\n'); err != nil {
			got <- nil
			return
		}
		for {
			line, err := br.ReadString('\n')
			line = strings.TrimRight(line, "\r\n")
			if err != nil || line == "" {
				break
			}
			if k, v, ok := strings.Cut(line, ": "); ok {
				h[k] = v
			}
		}
		_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")
		got <- h
	}()
	sg, _ := ParseSecrets(secretA)
	h := New(Config{Endpoint: "http://" + ln.Addr().String() + "/hook", Secrets: fixedSecrets{sg: sg}, Now: func() time.Time { return signedAt }})
	if _, err := h.deliver(context.Background(), record("raw", body, 1)); err != nil {
		t.Fatalf("deliver: %v", err)
	}
	return <-got
}

// README.md's JavaScript and Python receivers are given "headers"; a receiver that passes them
// as its framework holds them with the names as they came on the wire (API Gateway's REST
// payload, a WSGI app's dict(request.headers)) must still accept our delivery: the function
// sends "Webhook-Id", not "webhook-id" (net/http writes header names canonical), and HTTP
// header names are case-insensitive (RFC 9110, section 5.1). Refusing them fails every delivery
// to the dead-letter queue.
func TestReceiversAcceptTheHeadersAsTheFunctionSendsThem(t *testing.T) {
	body := eventBody(eventID)
	wire := rawHeaders(t, body)
	headers := map[string]string{}
	for k, v := range wire {
		if strings.EqualFold(k, HeaderID) || strings.EqualFold(k, HeaderTimestamp) || strings.EqualFold(k, HeaderSignature) {
			headers[k] = v
		}
	}
	if len(headers) != 3 {
		t.Fatalf("the request's headers %v lack the three webhook headers", wire)
	}
	for _, lang := range []struct{ name, cmd, script string }{{"javascript", "node", "testdata/verify.js"}, {"python", "python3", "testdata/verify.py"}} {
		path, err := exec.LookPath(lang.cmd)
		if err != nil {
			t.Errorf("%s: %s is not installed: %v", lang.name, lang.cmd, err)
			continue
		}
		in, _ := json.Marshal(map[string]any{"headers": headers, "body": body})
		cmd := exec.Command(path, lang.script)
		cmd.Env = append(cmd.Environ(), "WEBHOOK_SECRET="+secretA, fmt.Sprintf("WEBHOOK_NOW=%d", signedAt.Unix()))
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %v: %s", lang.name, err, out)
			continue
		}
		if got := strings.TrimSpace(string(out)); got != "ok" {
			t.Errorf("%s, headers as sent %v: %q, want ok", lang.name, headers, got)
		}
	}
}

// After a read of the secret fails (a malformed rotation, AccessDenied, throttling) while a good
// Signer is held, the source must not read again on every delivery: each delivery would then wait
// on a Secrets Manager call made one at a time under the source's lock, and log the same error.
// It reads again after the TTL, as after a good read.
func TestFailedSecretReadNeverRereadsOnEveryDelivery(t *testing.T) {
	api := &secretsAPI{value: secretA}
	now := signedAt
	src := &SecretSource{API: api, ID: "webhook", Now: func() time.Time { return now }}
	if sg, err := src.Signer(context.Background()); err != nil || sg.Keys() != 1 {
		t.Fatalf("first read: %d keys, %v", sg.Keys(), err)
	}
	api.mu.Lock()
	api.value = "whsec_typo"
	api.mu.Unlock()
	now = now.Add(SecretTTL)
	for i := range 50 {
		now = now.Add(time.Second)
		if sg, _ := src.Signer(context.Background()); sg.Keys() != 1 {
			t.Fatalf("delivery %d: %d keys, want the last good signer", i, sg.Keys())
		}
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if api.reads > 2 {
		t.Errorf("50 deliveries in the 50 s after a failed read made %d reads of the secret, want 1 (the failed one) more than the first", api.reads-1)
	}
}
