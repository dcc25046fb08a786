package loadtest

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// One SubmitterFunction invocation in the event-source model of async_test.go: the runners that
// queue.Submitter and queue.BatchSubmitter call (the first counting the handler's goroutines on
// the virtual clock), and the visibility timeouts the handler gives failed messages.

// invocation is the transfer Runner of one SubmitterFunction invocation. queue.Submitter runs
// each of the batch's messages in a goroutine of its own, which the virtual clock does not know of:
// the invoking participant waits for them (counted as running) while they sleep. So that time
// moves only when every one of the batch's runs sleeps, the invocation holds the clock once for
// each message but one before the handler starts, and each run but the last to finish lets one
// hold go when it ends: while j of k runs are left, the participant and its k-1 holds less the
// k-j released count exactly j running, as j participants would. The last run to end leaves the
// participant itself running, which it then is.
type invocation struct {
	orch  *transfer.Orchestrator
	clock interface{ Now() time.Time }
	done  func(m transfer.QueueMessage, d transfer.Delivery, err error, at time.Time)
	mu    sync.Mutex
	holds []func()
}

func newInvocation(r *rig, orch *transfer.Orchestrator, k int, done func(transfer.QueueMessage, transfer.Delivery, error, time.Time)) *invocation {
	inv := &invocation{orch: orch, clock: r.clock, done: done}
	for range k - 1 {
		inv.holds = append(inv.holds, r.clock.Hold())
	}
	return inv
}

func (inv *invocation) RunQueued(ctx context.Context, m transfer.QueueMessage) (d transfer.Delivery, err error) {
	defer inv.letGo()
	d, err = inv.orch.RunQueued(ctx, m)
	inv.done(m, d, err, inv.clock.Now())
	return d, err
}

// letGo releases one hold, if any is left.
func (inv *invocation) letGo() {
	inv.mu.Lock()
	var release func()
	if n := len(inv.holds); n > 0 {
		release, inv.holds = inv.holds[n-1], inv.holds[:n-1]
	}
	inv.mu.Unlock()
	if release != nil {
		release()
	}
}

// close releases the holds of messages that never reached RunQueued (a body the handler could not
// decode); with well-formed messages there are none.
func (inv *invocation) close() {
	for {
		inv.mu.Lock()
		n := len(inv.holds)
		inv.mu.Unlock()
		if n == 0 {
			return
		}
		inv.letGo()
	}
}

// batchInvocation is the queue.BatchRunner of one SubmitterFunction invocation: the container's
// orchestrator, each message's answer passed to done at the run's end.
type batchInvocation struct {
	orch  *transfer.Orchestrator
	clock interface{ Now() time.Time }
	done  func(m transfer.QueueMessage, d transfer.Delivery, err error, at time.Time)
}

func (b batchInvocation) RunQueuedBatch(ctx context.Context, msgs []transfer.QueueMessage) []transfer.Answer {
	answers := b.orch.RunQueuedBatch(ctx, msgs)
	now := b.clock.Now()
	for i, m := range msgs {
		if i < len(answers) {
			b.done(m, answers[i].Delivery, answers[i].Err, now)
		}
	}
	return answers
}

// visibilityLog is one invocation's queue.VisibilityChanger: it records the timeout the handler
// gives each receipt handle, for the event-source model to honour.
type visibilityLog struct {
	mu       sync.Mutex
	timeouts map[string]time.Duration
	n        map[string]int
}

func (v *visibilityLog) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	h := aws.ToString(in.ReceiptHandle)
	v.timeouts[h] = time.Duration(in.VisibilityTimeout) * time.Second
	if v.n == nil {
		v.n = map[string]int{}
	}
	v.n[h]++
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// timeout is the visibility timeout given to the receipt handle h, if any.
func (v *visibilityLog) timeout(h string) (time.Duration, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	d, ok := v.timeouts[h]
	return d, ok
}

// calls is how many ChangeMessageVisibility requests named h.
func (v *visibilityLog) calls(h string) int64 {
	v.mu.Lock()
	defer v.mu.Unlock()
	return int64(v.n[h])
}
