package main

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// submitterFunction is the template's SubmitterFunction: async transfers from the queue.
const submitterFunction = "SubmitterFunction"

// localVisibility is how long a message reported for redelivery waits before it is delivered
// again: the queue's visibility timeout, shortened for a developer's loop.
const localVisibility = 5 * time.Second

// submitter plays SQS and its event source for SubmitterFunction (README.md, "Asynchronous
// transfers"): the API sends to an in-process queue (queue.Memory); up to workers messages run at
// once, each as a one-message SQS event through the function's real handler (queue.Submitter);
// a message it reports failed is sent again after localVisibility.
type submitter struct {
	q       *queue.Memory
	handler func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error)
	invoke  func(parent context.Context) (context.Context, context.CancelFunc)
	workers int
	wg      sync.WaitGroup
	stop    chan struct{}
	ids     int
	mu      sync.Mutex
	// ran counts the finished runs; changed is closed and replaced at each (waitRuns).
	ran     int
	changed chan struct{}
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
	s.mu.Unlock()
	ctx, cancel := s.invoke(parent)
	defer cancel()
	resp, _ := s.handler(ctx, events.SQSEvent{Records: []events.SQSMessage{{MessageId: id, Body: body, EventSource: "aws:sqs"}}})
	s.mu.Lock()
	s.ran++
	if s.changed != nil {
		close(s.changed)
	}
	s.changed = make(chan struct{})
	s.mu.Unlock()
	if len(resp.BatchItemFailures) > 0 {
		// Delivered again, as SQS does after the visibility timeout; a closed queue drops it (the
		// item stays queued, as it would for the sweep).
		time.AfterFunc(localVisibility, func() { _ = s.q.Send(context.Background(), m) })
	}
}

// close stops receiving and waits for the runs in progress.
func (s *submitter) close() error {
	close(s.stop)
	s.q.Close()
	s.wg.Wait()
	return nil
}
