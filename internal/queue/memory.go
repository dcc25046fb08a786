package queue

import (
	"context"
	"errors"
	"sync"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Memory is an in-process transfer.Queue for the local stack and tests: Send appends the message,
// Receive takes the oldest. It keeps what it is sent in order and delivers each message once;
// tests drop, duplicate or reorder messages themselves.
type Memory struct {
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
