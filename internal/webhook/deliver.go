package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
)

// RequestTimeout bounds one delivery: the specification recommends 15 to 30 s for the receiver
// to answer; the function's timeout (template.yaml) leaves room for a batch's deliveries, which
// run at once.
const RequestTimeout = 15 * time.Second

// schedule is the wait before each retry, after the first failed attempt, the second, and so on:
// the specification's example schedule ("Deliverability and reliability": 5 s, 5 min, 30 min,
// 2 h, 5 h, 10 h, 14 h, 20 h, 24 h) with each wait capped at SQS's longest visibility timeout
// (12 hours from the receive; the SQS API Reference, ChangeMessageVisibility), less maxVisibility's
// margin. The template's maxReceiveCount is
// len(schedule)+1: the message goes to the dead-letter queue after the attempt that follows the
// last wait, about 54 hours after the first.
var schedule = []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 5 * time.Hour,
	10 * time.Hour, 12 * time.Hour, 12 * time.Hour, 12 * time.Hour}

// MaxAttempts is the template's maxReceiveCount for the webhook queue: the first attempt and one
// per wait of the schedule.
var MaxAttempts = len(schedule) + 1

// maxVisibility is the longest visibility the handler asks for: SQS's 12 hours count from the
// receive and refuse a longer total (the SQS API Reference, ChangeMessageVisibility), and the
// receive was up to the function's timeout ago; five minutes cover that.
const maxVisibility = 12*time.Hour - 5*time.Minute

// RetryAfter is the visibility timeout to give a message whose delivery failed at its
// receiveCount-th attempt (SQS's ApproximateReceiveCount, 1 on the first): the schedule's wait,
// plus a jitter of up to a tenth of it (the specification recommends jitter, so that deliveries
// that failed together do not come back together) drawn from the message's id and the attempt,
// so the same failure always waits the same; or the receiver's Retry-After when that is longer;
// at most 12 hours. Whole seconds, at least one (SQS counts in seconds).
func RetryAfter(messageID string, receiveCount int, receiverRetryAfter time.Duration) time.Duration {
	i := min(max(receiveCount, 1), len(schedule)) - 1
	d := schedule[i]
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d", messageID, receiveCount)
	d += time.Duration(h.Sum64() % uint64(d/10+1))
	d = min(max(d, receiverRetryAfter), maxVisibility)
	return max(d.Truncate(time.Second), time.Second)
}

// Config is a webhook delivery: where, signed how, retried through which queue.
type Config struct {
	// Endpoint is the receiver's URL (WEBHOOK_URL; https, or http to a loopback address).
	Endpoint string
	// Secrets answers the Signer of each delivery (a *SecretSource, or a fixed one in tests).
	Secrets interface {
		Signer(ctx context.Context) (Signer, error)
	}
	// Client posts the deliveries; nil: a client that follows no redirect, with RequestTimeout.
	Client *http.Client
	// Visibility times a failed message's retry (RetryAfter) on the queue the messages come from
	// (QUEUE_URL); the zero Visibility: the queue's visibility timeout.
	Visibility queue.Visibility
	// Now is the clock of webhook-timestamp; time.Now when nil.
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler is WebhookFunction: SQS records whose bodies are settlement events, as the template's
// rule puts them on the queue, each posted to the endpoint at once (concurrently within the
// batch) and signed. It answers the records to deliver again (ReportBatchItemFailures): a
// delivery refused or not answered, or whose secret could not be read. A record whose body is not
// an event of ours (not JSON, or without detail.eventId) is retried too, so it ends in the
// dead-letter queue, which pages, rather than being dropped. It never returns an error: that would
// deliver the whole batch again.
type Handler struct {
	cfg Config
}

// New returns the Handler of cfg.
func New(cfg Config) *Handler {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: RequestTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{cfg: cfg}
}

// Handle is the Lambda handler of an SQS event.
func (h *Handler) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	failed := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	for i, msg := range ev.Records {
		wg.Go(func() {
			retryAfter, err := h.deliver(ctx, msg)
			if err == nil {
				return
			}
			failed[i] = true
			n := queue.ReceiveCount(msg.Attributes)
			wait := RetryAfter(msg.MessageId, n, retryAfter)
			h.cfg.Logger.WarnContext(ctx, "webhook: delivery failed; it will be attempted again", "messageId", msg.MessageId,
				"attempt", n, "of", MaxAttempts, "retryInSeconds", int(wait/time.Second), "err", err.Error())
			if n < MaxAttempts {
				h.cfg.Visibility.Change(ctx, h.cfg.Logger, "webhook", msg, wait)
			}
		})
	}
	wg.Wait()
	var resp events.SQSEventResponse
	for i, msg := range ev.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
		}
	}
	return resp, nil
}

// DeliveryError is a delivery the receiver did not accept: its status (0 when it did not answer).
type DeliveryError struct {
	Status int
	Err    error
}

func (e *DeliveryError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("webhook: the endpoint did not answer: %v", e.Err)
	}
	return fmt.Sprintf("webhook: the endpoint answered %d", e.Status)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// ErrNotAnEvent is a record whose body is not a settlement event (no detail.eventId).
var ErrNotAnEvent = errors.New("webhook: the message is not a settlement event with detail.eventId")

// deliver posts one record's body, signed, and answers the receiver's Retry-After (when it sent
// one) with the delivery's error.
func (h *Handler) deliver(ctx context.Context, msg events.SQSMessage) (time.Duration, error) {
	body := []byte(msg.Body)
	var ev struct {
		Detail struct {
			EventID string `json:"eventId"`
		} `json:"detail"`
	}
	if err := json.Unmarshal(body, &ev); err != nil || !isEventID(ev.Detail.EventID) {
		return 0, ErrNotAnEvent
	}
	signer, err := h.cfg.Secrets.Signer(ctx)
	if err != nil {
		if signer.Keys() == 0 {
			return 0, err
		}
		h.cfg.Logger.ErrorContext(ctx, "webhook: the signing secret could not be read again", "err", err.Error())
	}
	ts, sig, err := signer.Sign(ev.Detail.EventID, h.cfg.Now(), body)
	if err != nil {
		return 0, err
	}
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, h.cfg.Endpoint, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("webhook: building the request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "stellar-transfer-orchestrator-webhook/1")
	req.Header.Set(HeaderID, ev.Detail.EventID)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, sig)
	resp, err := h.cfg.Client.Do(req)
	if err != nil {
		// Not the *url.Error itself: its text holds the endpoint's URL, whose query may carry the
		// receiver's token.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, &DeliveryError{Err: err}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		return 0, nil
	}
	return parseRetryAfter(resp.Header.Get("Retry-After"), h.cfg.Now()), &DeliveryError{Status: resp.StatusCode}
}

// isEventID reports whether s is an event id of ours (internal/alert: 32 lower-case hex).
func isEventID(s string) bool {
	if len(s) != 32 {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// parseRetryAfter reads an HTTP Retry-After (RFC 9110, section 10.2.3: delay-seconds or an
// HTTP-date); 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return time.Duration(min(n, int64(maxVisibility/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), maxVisibility)
	}
	return 0
}
