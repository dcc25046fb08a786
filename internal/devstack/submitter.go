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

// templateBatchingWindow is SubmitterFunction's event source's MaximumBatchingWindowInSeconds in
// template.yaml (TestTheStandInEventSourceIsTheTemplates holds it to it).
const templateBatchingWindow = 2 * time.Second

// eventSource is how SubmitterFunction's SQS event source delivers (template.yaml: its Transfers
// event and the Submitter mapping): up to batch messages per event, gathered for up to window
// after the first, in up to concurrency invocations at once.
type eventSource struct {
	batch, concurrency int
	window             time.Duration
}

// templateEventSource is the event source template.yaml configures for channels channel accounts
// (ChannelCount) and perTransaction transfers per transaction (TransfersPerTransaction,
// BATCH_SIZE): the Submitter mapping's row, whose BatchSize x MaxConcurrency is max(channels, 2):
// one message an invocation up to 3 channels, two invocations of channels/2 below 16, invocations
// of 8 from 16 on; batched (above 1), BatchSize x perTransaction messages an event (the
// BatchMessages mapping: that many transactions' worth) and the same invocations. The window is
// the template's 2 s either way.
func templateEventSource(channels, perTransaction int) eventSource {
	var src eventSource
	switch {
	case channels <= 3:
		src = eventSource{batch: 1, concurrency: max(channels, 2), window: templateBatchingWindow}
	case channels < 16:
		src = eventSource{batch: channels / 2, concurrency: 2, window: templateBatchingWindow}
	default:
		src = eventSource{batch: 8, concurrency: channels / 8, window: templateBatchingWindow}
	}
	if perTransaction > 1 {
		src.batch *= perTransaction
	}
	return src
}

// submitter plays SQS and its event source for SubmitterFunction (README.md, "Asynchronous
// transfers"): the API sends to an in-process queue (queue.Memory); up to src.concurrency events
// run at once, each of up to src.batch messages gathered for up to src.window after its first (the
// batching window: Lambda invokes once the batch is full or the window has passed), through the
// function's real handler (queue.BatchSubmitter when the runner batches, else queue.Submitter),
// each message with its ApproximateReceiveCount and a receipt handle. It is also the handler's
// queue.VisibilityChanger: a message the handler reports failed is sent again after the
// visibility timeout the handler set for its receipt handle (queue.Backoff), or localVisibility
// if it set none. Receive counts are per message body (store key and claim ID) until the message
// is acknowledged.
type submitter struct {
	q       *queue.Memory
	handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)
	invoke  func(parent context.Context) (context.Context, context.CancelFunc)
	src     eventSource
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

// newSubmitter returns the stand-in for r's SubmitterFunction delivering as src, its handler
// changing visibility through the stand-in itself: queue.BatchSubmitter when batched is true and r
// is a queue.BatchRunner (as wiring.SubmitterHandler picks it), else queue.Submitter.
func newSubmitter(q *queue.Memory, r queue.Runner, batched bool, log *slog.Logger, src eventSource,
	invoke func(parent context.Context) (context.Context, context.CancelFunc)) *submitter {
	src.batch, src.concurrency = max(src.batch, 1), max(src.concurrency, 1)
	s := &submitter{q: q, src: src, invoke: invoke,
		receives: map[transfer.QueueMessage]int{}, waits: map[string]time.Duration{},
		after: func(d time.Duration, f func()) { time.AfterFunc(d, f) }}
	v := queue.Visibility{Changer: s, URL: localQueueURL}
	if br, ok := r.(queue.BatchRunner); ok && batched {
		s.handler = queue.BatchSubmitter(br, v, log)
	} else {
		s.handler = queue.Submitter(r, v, log)
	}
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
	for range s.src.concurrency {
		s.wg.Go(func() {
			for {
				msgs, err := s.receive(ctx)
				if err != nil {
					return
				}
				s.run(ctx, msgs...)
			}
		})
	}
}

// receive waits for a message, then gathers more, up to src.batch, until src.window has passed
// since the first (0: only those already waiting), as the event source's batching window does.
// Errors: the queue's (closed, or ctx done) before the first message.
func (s *submitter) receive(ctx context.Context) ([]transfer.QueueMessage, error) {
	m, err := s.q.Receive(ctx)
	if err != nil {
		return nil, err
	}
	msgs := []transfer.QueueMessage{m}
	if s.src.batch == 1 {
		return msgs, nil
	}
	wctx, cancel := context.WithTimeout(ctx, s.src.window)
	defer cancel()
	for len(msgs) < s.src.batch {
		m, err := s.q.Receive(wctx)
		if err != nil {
			break
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// run hands msgs to the handler as one SQS event and sends each message it reports failed again.
func (s *submitter) run(parent context.Context, msgs ...transfer.QueueMessage) {
	var ev events.SQSEvent
	byID := map[string]transfer.QueueMessage{}
	s.mu.Lock()
	for _, m := range msgs {
		body, err := queue.Encode(m)
		if err != nil {
			continue
		}
		s.ids++
		id := "local-" + strconv.Itoa(s.ids)
		s.receives[m]++
		byID[id] = m
		ev.Records = append(ev.Records, events.SQSMessage{MessageId: id, ReceiptHandle: id, Body: body,
			EventSource: "aws:sqs", Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(s.receives[m])}})
	}
	s.mu.Unlock()
	if len(ev.Records) == 0 {
		return
	}
	ctx, cancel := s.invoke(parent)
	defer cancel()
	resp, _ := s.handler(ctx, ev)
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	type redelivery struct {
		m    transfer.QueueMessage
		wait time.Duration
	}
	var again []redelivery
	s.mu.Lock()
	s.ran++
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
	for _, r := range ev.Records {
		id, m := r.MessageId, byID[r.MessageId]
		wait, changed := s.waits[id]
		delete(s.waits, id)
		if !failed[id] {
			delete(s.receives, m)
			continue
		}
		if !changed {
			wait = localVisibility
		}
		again = append(again, redelivery{m, wait})
	}
	s.mu.Unlock()
	for _, r := range again {
		// Delivered again, as SQS does once the visibility timeout passes; a closed queue drops it
		// (the item stays queued, as it would for the sweep).
		s.after(r.wait, func() { _ = s.q.Send(context.Background(), r.m) })
	}
}

// close stops receiving and waits for the runs in progress.
func (s *submitter) close() error {
	close(s.stop)
	s.q.Close()
	s.wg.Wait()
	return nil
}
