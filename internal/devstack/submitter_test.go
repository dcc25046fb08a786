package devstack

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

type scriptedRunner []transfer.Delivery

func (r *scriptedRunner) RunQueued(context.Context, transfer.QueueMessage) (transfer.Delivery, error) {
	d := (*r)[0]
	*r = (*r)[1:]
	if d == transfer.DeliveryRetry {
		return d, &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: 2 * time.Second}
	}
	return d, nil
}

// The stand-in counts each message's receives and redelivers it after the timeout the handler set
// (queue.Backoff of CHANNELS_BUSY's 2 s: 2 s, then 4 s), and forgets the message once acknowledged.
func TestSubmitterStandInBacksOff(t *testing.T) {
	q := queue.NewMemory()
	r := &scriptedRunner{transfer.DeliveryRetry, transfer.DeliveryRetry, transfer.DeliveryDone}
	s := newSubmitter(q, r, false, nil, eventSource{batch: 1, concurrency: 1}, func(parent context.Context) (context.Context, context.CancelFunc) {
		return context.WithCancel(parent)
	})
	var waits []time.Duration
	var redeliver func()
	s.after = func(d time.Duration, f func()) { waits, redeliver = append(waits, d), f }
	m := transfer.QueueMessage{StoreKey: "transfer:0123456789abcdef:k", ClaimID: "c"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.run(ctx, m)
	for range 2 {
		redeliver()
		got, err := q.Receive(ctx)
		if err != nil || got != m {
			t.Fatalf("redelivered %+v, %v", got, err)
		}
		s.run(ctx, got)
	}
	if len(waits) != 2 || waits[0] != 2*time.Second || waits[1] != 4*time.Second {
		t.Fatalf("redelivered after %v, want [2s 4s]", waits)
	}
	if len(s.receives) != 0 || len(s.waits) != 0 || len(*r) != 0 {
		t.Fatalf("left: receives %v, waits %v, script %v", s.receives, s.waits, *r)
	}
}
