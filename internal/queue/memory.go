package queue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Memory is an in-process transfer.Queue for the local stack and tests: Send appends the message,
// Receive takes the oldest. It keeps what it is sent in order and delivers each message once;
// tests drop, duplicate or reorder messages themselves.
//
// SendAfter holds a message back with After (time.AfterFunc when nil; a test injects its clock's).
type Memory struct {
	// After calls f once d has passed (time.AfterFunc when nil).
	After func(d time.Duration, f func())

	mu     sync.Mutex
	msgs   []transfer.QueueMessage
	ready  chan struct{} // closed and replaced whenever a message arrives
	closed bool
}

// ErrClosed is returned by Send and Receive once Close was called.
var ErrClosed = errors.New("queue: closed")

// NewMemory returns an empty in-process queue.
func NewMemory() *Memory { return &Memory{ready: make(chan struct{})} }

// Send appends m's message.
func (q *Memory) Send(_ context.Context, m transfer.QueueMessage) error {
	if _, err := Encode(m); err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return ErrClosed
	}
	q.msgs = append(q.msgs, m)
	close(q.ready)
	q.ready = make(chan struct{})
	return nil
}

// SendAfter appends m's message once delay has passed (transfer.DelayQueue), at once when delay
// is 0 or less. A message whose delay ends after Close is dropped, as Send after Close drops it
// (the item stays queued for the sweep). A malformed message is refused at once.
func (q *Memory) SendAfter(ctx context.Context, m transfer.QueueMessage, delay time.Duration) error {
	if delay <= 0 {
		return q.Send(ctx, m)
	}
	if _, err := Encode(m); err != nil {
		return err
	}
	after := q.After
	if after == nil {
		after = func(d time.Duration, f func()) { time.AfterFunc(d, f) }
	}
	after(delay, func() { _ = q.Send(context.WithoutCancel(ctx), m) })
	return nil
}

// Drain takes every message sent so far, oldest first.
func (q *Memory) Drain() []transfer.QueueMessage {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := q.msgs
	q.msgs = nil
	return out
}

// Receive waits for a message and takes the oldest, or fails with ctx's error or ErrClosed.
func (q *Memory) Receive(ctx context.Context) (transfer.QueueMessage, error) {
	for {
		q.mu.Lock()
		if q.closed {
			q.mu.Unlock()
			return transfer.QueueMessage{}, ErrClosed
		}
		if len(q.msgs) > 0 {
			m := q.msgs[0]
			q.msgs = q.msgs[1:]
			q.mu.Unlock()
			return m, nil
		}
		ready := q.ready
		q.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return transfer.QueueMessage{}, ctx.Err()
		}
	}
}

// Close ends the queue: Send and Receive fail with ErrClosed.
func (q *Memory) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.closed {
		q.closed = true
		close(q.ready)
	}
}
