package devstack

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// submitterFunction is the template's SubmitterFunction: async transfers from the queue.
const submitterFunction = "SubmitterFunction"

// localVisibility is how long a message reported for redelivery waits before it is delivered
// again when the handler did not change its visibility: the queue's visibility timeout, shortened
// for a developer's loop.
const localVisibility = 5 * time.Second

// localQueueURL names the in-process queue in the handler's ChangeMessageVisibility calls.
const localQueueURL = "local://TransferQueue"

// submitter plays SQS and its event source for SubmitterFunction (README.md, "Asynchronous
// transfers"): the API sends to an in-process queue (queue.Memory); up to workers messages run at
// once, each as a one-message SQS event through the function's real handler (queue.Submitter),
// with its ApproximateReceiveCount and a receipt handle. It is also the handler's
// queue.VisibilityChanger: a message the handler reports failed is sent again after the
// visibility timeout the handler set for its receipt handle (queue.Backoff), or localVisibility
// if it set none. Receive counts are per message body (store key and claim ID) until the message
// is acknowledged.
type submitter struct {
	q       *queue.Memory
	handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)
	invoke  func(parent context.Context) (context.Context, context.CancelFunc)
	workers int
	wg      sync.WaitGroup
	stop    chan struct{}
	ids     int
	mu      sync.Mutex
	// receives counts each message's deliveries; waits is the visibility timeout set per receipt
	// handle by the handler (ChangeMessageVisibility).
	receives map[transfer.QueueMessage]int
	waits    map[string]time.Duration
	// after schedules a redelivery (time.AfterFunc; tests record it).
	after func(d time.Duration, f func())
	// ran counts the finished runs; changed is closed and replaced at each (waitRuns).
	ran     int
	changed chan struct{}
}

// newSubmitter returns the stand-in for r's SubmitterFunction, its handler changing visibility
// through the stand-in itself.
func newSubmitter(q *queue.Memory, r queue.Runner, log *slog.Logger, workers int,
	invoke func(parent context.Context) (context.Context, context.CancelFunc)) *submitter {
	s := &submitter{q: q, workers: workers, invoke: invoke,
		receives: map[transfer.QueueMessage]int{}, waits: map[string]time.Duration{},
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
	s.handler = queue.Submitter(r, queue.Visibility{Changer: s, URL: localQueueURL}, log)
	return s
}

// ChangeMessageVisibility records the timeout for the receipt handle (queue.VisibilityChanger).
func (s *submitter) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if in.QueueUrl == nil || *in.QueueUrl != localQueueURL || in.ReceiptHandle == nil || in.VisibilityTimeout < 0 || in.VisibilityTimeout > 43200 {
		return nil, errors.New("devstack: ChangeMessageVisibility: not a message of the local queue, or a timeout outside 0..43200 s")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waits[*in.ReceiptHandle] = time.Duration(in.VisibilityTimeout) * time.Second
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// waitRuns waits until n runs have finished (tests), or ctx ends.
func (s *submitter) waitRuns(ctx context.Context, n int) error {
	for {
		s.mu.Lock()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ran, changed := s.ran, s.changed
		s.mu.Unlock()
		if ran >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *submitter) start() {
	s.stop = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-s.stop
		cancel()
	}()
	for range s.workers {
		s.wg.Go(func() {
			for {
				m, err := s.q.Receive(ctx)
				if err != nil {
					return
				}
				s.run(ctx, m)
			}
		})
	}
}

func (s *submitter) run(parent context.Context, m transfer.QueueMessage) {
	body, err := queue.Encode(m)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.ids++
	id := "local-" + strconv.Itoa(s.ids)
	s.receives[m]++
	receives := s.receives[m]
	s.mu.Unlock()
	ctx, cancel := s.invoke(parent)
	defer cancel()
	resp, _ := s.handler(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, ReceiptHandle: id, Body: body,
		EventSource: "aws:sqs", Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(receives)}}}})
	s.mu.Lock()
	s.ran++
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
	wait, changed := s.waits[id]
	delete(s.waits, id)
	if len(resp.BatchItemFailures) == 0 {
		delete(s.receives, m)
	}
	s.mu.Unlock()
	if len(resp.BatchItemFailures) > 0 {
		if !changed {
			wait = localVisibility
		}
		// Delivered again, as SQS does once the visibility timeout passes; a closed queue drops it
		// (the item stays queued, as it would for the sweep).
		s.after(wait, func() { _ = s.q.Send(context.Background(), m) })
	}
}

// close stops receiving and waits for the runs in progress.
func (s *submitter) close() error {
	close(s.stop)
	s.q.Close()
	s.wg.Wait()
	return nil
}
