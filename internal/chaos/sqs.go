package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// sqsQueue is the campaign's SQS standard queue (the TransferQueue of template.yaml) and the one
// model of SQS that the async tests share. It keeps what the SQS API Reference says of
// ReceiveMessage, DeleteMessage and ChangeMessageVisibility, and the SQS Developer Guide of
// at-least-once delivery and dead-letter queues:
//
//   - a message has an ID; every receive gives it a new receipt handle and counts it
//     (ApproximateReceiveCount), and hides it for the visibility timeout (visibilityInCampaign)
//     counted from the receive;
//   - receives return visible messages in no particular order;
//   - a duplicate is the same message received again (at-least-once: a copy on a server that was
//     unavailable), with a new receipt handle, even while an earlier receive still holds it; the
//     earlier handle is then stale;
//   - DeleteMessage with the most recent receipt handle deletes the message, even while another
//     receiver holds it; with an older handle "the request will succeed, but the message might
//     not be deleted" (DeleteMessage): a coin decides. Under faults a delete may leave a copy
//     that is received again later ("it is possible to receive a message even after you delete
//     it");
//   - ChangeMessageVisibility with the most recent handle of a message in flight hides it for the
//     new timeout counted from the call; it fails for a stale handle, a deleted message or one no
//     longer in flight (its timeout passed), and under faults now and then for no reason;
//   - a visible message that was received maxReceivesInCampaign times goes to the dead-letter
//     queue at the receive that would exceed it (dropped here: the sweep sends its item again).
//
// Under faults (until heal) what is sent is lost (10%), will be received twice (15%), or held
// back until after healing (late, 10%).
type sqsQueue struct {
	mu     sync.Mutex
	dice   *rand.Rand
	faulty bool
	clock  interface{ Now() time.Time }
	// faults counts what the queue did wrong on purpose; events what it did as SQS does.
	faults, events *counter
	msgs           []*sqsMessage // in the order sent, while not deleted
	handles        map[string]*sqsMessage
	late           []transfer.QueueMessage
	n              int
	// changes records every ChangeMessageVisibility: "handle=seconds" or "handle:error".
	changes []string
}

// sqsMessage is one message of sqsQueue.
type sqsMessage struct {
	id, body  string
	receives  int
	visibleAt time.Time
	latest    string // the most recent receipt handle
	held      int    // receives whose invocation has not answered yet
	copied    bool   // a copy will be received again shortly after the next receive
	deleted   bool
}

// visibilityInCampaign is the campaign queue's visibility timeout: how long a received message
// stays hidden when its invocation died or answered it failed without changing its visibility.
const visibilityInCampaign = 30 * time.Second

// maxReceivesInCampaign is the template's TransferQueue maxReceiveCount.
const maxReceivesInCampaign = 10

// newSQSQueue returns an empty queue without faults; set faulty to arm them.
func newSQSQueue(clock interface{ Now() time.Time }, dice *rand.Rand, faults, events *counter) *sqsQueue {
	if faults == nil {
		faults = &counter{}
	}
	if events == nil {
		events = &counter{}
	}
	return &sqsQueue{dice: dice, clock: clock, faults: faults, events: events, handles: map[string]*sqsMessage{}}
}

// Send is transfer.Queue's SendMessage.
func (q *sqsQueue) Send(_ context.Context, m transfer.QueueMessage) error {
	body, err := queue.Encode(m)
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch x := q.dice.Float64(); {
	case q.faulty && x < 0.1:
		q.faults.add("queue_lost")
	case q.faulty && x < 0.25:
		q.faults.add("queue_duplicated")
		q.addLocked(body).copied = true
	case q.faulty && x < 0.35:
		q.faults.add("queue_late")
		q.late = append(q.late, m)
	default:
		q.addLocked(body)
	}
	return nil
}

func (q *sqsQueue) addLocked(body string) *sqsMessage {
	q.n++
	m := &sqsMessage{id: fmt.Sprintf("msg-%d", q.n), body: body, visibleAt: q.clock.Now()}
	q.msgs = append(q.msgs, m)
	return m
}

// receive is one ReceiveMessage of the event source mapping: up to max visible messages, in no
// particular order, as one SQS event. A visible message already received maxReceivesInCampaign
// times is dead-lettered instead.
func (q *sqsQueue) receive(max int) events.SQSEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	var visible []*sqsMessage
	kept := q.msgs[:0]
	for _, m := range q.msgs {
		switch {
		case now.Before(m.visibleAt):
		case m.receives >= maxReceivesInCampaign:
			q.faults.add("queue_dead_lettered") // its next receive would exceed maxReceiveCount
			m.deleted = true
			continue
		default:
			visible = append(visible, m)
		}
		kept = append(kept, m)
	}
	clear(q.msgs[len(kept):])
	q.msgs = kept
	q.dice.Shuffle(len(visible), func(i, j int) { visible[i], visible[j] = visible[j], visible[i] })
	var ev events.SQSEvent
	for _, m := range visible[:min(max, len(visible))] {
		ev.Records = append(ev.Records, q.receiveLocked(m, now))
	}
	return ev
}

// receiveID receives message id whether or not it is visible: the at-least-once duplicate that a
// test delivers on purpose.
func (q *sqsQueue) receiveID(id string) events.SQSEvent {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.id == id {
			return events.SQSEvent{Records: []events.SQSMessage{q.receiveLocked(m, q.clock.Now())}}
		}
	}
	return events.SQSEvent{}
}

func (q *sqsQueue) receiveLocked(m *sqsMessage, now time.Time) events.SQSMessage {
	q.n++
	if m.held > 0 {
		q.events.add("queue_received_while_held") // the earlier holder's handle is now stale
	}
	m.receives++
	m.held++
	m.latest = fmt.Sprintf("rh-%d-%s", q.n, m.id)
	q.handles[m.latest] = m
	m.visibleAt = now.Add(visibilityInCampaign)
	if m.copied {
		// A copy answers another receive within seconds, while this one still runs.
		m.copied = false
		m.visibleAt = now.Add(time.Duration(1+q.dice.IntN(20)) * time.Second)
	}
	q.events.add("queue_receives")
	return events.SQSMessage{MessageId: m.id, ReceiptHandle: m.latest, Body: m.body, EventSource: "aws:sqs",
		Attributes: map[string]string{"ApproximateReceiveCount": strconv.Itoa(m.receives)}}
}

// answer is the event source mapping once the handler answered ev: unless the invocation died
// (then nothing is deleted and every message waits its visibility timeout), every record not in
// the BatchItemFailures is deleted with its receipt handle (DeleteMessage).
func (q *sqsQueue) answer(ev events.SQSEvent, resp events.SQSEventResponse, died bool) {
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, rec := range ev.Records {
		if m := q.handles[rec.ReceiptHandle]; m != nil {
			m.held--
		}
	}
	if died {
		return
	}
	for _, rec := range ev.Records {
		if !failed[rec.MessageId] {
			q.deleteLocked(rec.ReceiptHandle)
		}
	}
}

// deleteLocked is DeleteMessage.
func (q *sqsQueue) deleteLocked(handle string) {
	m := q.handles[handle]
	switch {
	case m == nil || m.deleted:
		return // deleted already: the request succeeds
	case m.latest != handle:
		if q.dice.IntN(2) == 0 {
			q.events.add("queue_stale_delete_kept")
			return
		}
		q.events.add("queue_stale_delete_deleted")
	case q.faulty && q.dice.Float64() < 0.02:
		q.faults.add("queue_delete_left_a_copy") // received again once its timeout passes
		return
	}
	m.deleted = true
	for i, x := range q.msgs {
		if x == m {
			q.msgs = append(q.msgs[:i], q.msgs[i+1:]...)
			break
		}
	}
}

// errReceiptHandle is SQS's answer to a ChangeMessageVisibility it refuses.
var errReceiptHandle = errors.New("sqs: ReceiptHandleIsInvalid")

// ChangeMessageVisibility is queue.VisibilityChanger. Called from a SubmitterFunction invocation
// of the campaign (invokeSubmitter), it first hands the record's place on the virtual clock back,
// and does nothing once the invocation died.
func (q *sqsQueue) ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	if inv := invocationOf(ctx); inv != nil {
		defer inv.release()
		if inv.dead.Load() {
			return nil, errCrash
		}
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	handle := *in.ReceiptHandle
	m := q.handles[handle]
	now := q.clock.Now()
	var err error
	switch {
	case m == nil || m.deleted:
		q.events.add("queue_visibility_change_deleted")
		err = fmt.Errorf("%w: the message was deleted", errReceiptHandle)
	case m.latest != handle:
		q.events.add("queue_visibility_change_stale_handle")
		err = fmt.Errorf("%w: not the most recent receipt handle", errReceiptHandle)
	case !now.Before(m.visibleAt):
		q.events.add("queue_visibility_change_not_in_flight")
		err = errors.New("sqs: MessageNotInflight")
	case q.faulty && q.dice.Float64() < 0.05:
		q.faults.add("queue_visibility_change_failed")
		err = errors.New("sqs: InternalError")
	}
	if err != nil {
		q.changes = append(q.changes, handle+":error")
		return nil, err
	}
	m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
	q.changes = append(q.changes, fmt.Sprintf("%s=%d", handle, in.VisibilityTimeout))
	return &sqs.ChangeMessageVisibilityOutput{}, nil
}

// alive is how many messages the queue holds (visible or not).
func (q *sqsQueue) alive() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// ids are the IDs of the messages the queue holds, in the order sent.
func (q *sqsQueue) ids() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []string
	for _, m := range q.msgs {
		out = append(out, m.id)
	}
	return out
}

// visibleIn is how long until the next message becomes visible (0: one is; false: none is held).
func (q *sqsQueue) visibleIn() (time.Duration, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.msgs) == 0 {
		return 0, false
	}
	now := q.clock.Now()
	next := q.msgs[0].visibleAt
	for _, m := range q.msgs[1:] {
		if m.visibleAt.Before(next) {
			next = m.visibleAt
		}
	}
	return max(next.Sub(now), 0), true
}

func (q *sqsQueue) heal() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.faulty = false
}

// sendLate sends the messages held back until after healing, and answers how many.
func (q *sqsQueue) sendLate() int {
	q.mu.Lock()
	late := q.late
	q.late = nil
	q.mu.Unlock()
	for _, m := range late {
		_ = q.Send(context.Background(), m)
	}
	return len(late)
}

// holds says whether the queue still holds the message id (not deleted nor dead-lettered).
func (q *sqsQueue) holds(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if m.id == id {
			return true
		}
	}
	return false
}

// receivesByID is each held message's receive count (ApproximateReceiveCount), by message ID.
func (q *sqsQueue) receivesByID() map[string]int {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := map[string]int{}
	for _, m := range q.msgs {
		out[m.id] = m.receives
	}
	return out
}
