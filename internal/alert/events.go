package alert

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Settlement events (README.md, "Settlement events"): every transfer that settles, goes in doubt
// or leaves in_doubt is published to an EventBridge bus, once per transition, from the table's
// stream. The names below are the schema subscribers match on.
const (
	// EventSource is every event's source.
	EventSource = "stellar-transfer-orchestrator"
	// DetailTypeSettled: an in_flight item became replayable (status success) or rejected
	// (status error): the client's transfer has its final outcome.
	DetailTypeSettled = "Transfer Settled"
	// DetailTypeInDoubt: an item became in_doubt (status in_doubt): the envelope may or may not
	// land; a "Transfer Resolved" event follows once the ledger (or an operator) settles it.
	DetailTypeInDoubt = "Transfer In Doubt"
	// DetailTypeResolved: an in_doubt item was settled: landed (success), failed on chain
	// (error), or released with nothing moved (released: its envelope proven dead, included FAILED
	// on the service's side with only the fee charged, or discarded; the key is free and the same
	// request with the same key runs afresh).
	DetailTypeResolved = "Transfer Resolved"
	// DetailTypeCancelled: a queued item was cancelled (status cancelled) before any submitter
	// took it: nothing was sent and nothing will be; a POST of the key answers
	// TRANSFER_CANCELLED until its replay window ends.
	DetailTypeCancelled = "Transfer Cancelled"
	// EventSchemaVersion is the detail's schemaVersion; it changes only when a field changes
	// meaning or disappears (fields may be added within a version).
	EventSchemaVersion = 1
)

// Values of EventDetail.Status: the vocabulary of GET /wallets/{wallet}/transfers/{key}
// (success, error, cancelled) plus the two states a subscriber must act on (in_doubt, released).
const (
	EventSuccess  = "success"
	EventError    = "error"
	EventInDoubt  = "in_doubt"
	EventReleased = "released"
	// EventCancelled: Transfer Cancelled's status.
	EventCancelled = "cancelled"
)

// Values of EventDetail.ResolvedBy.
const (
	ResolvedByLedger   = "ledger"   // the ledger settled it: a retry of the client's call, the minute's sweep, or an operator's discard the ledger proves (logged, not audited)
	ResolvedByOperator = "operator" // an operator's resolve by hash or forced discard (the item carries its audit)
)

// EventDetail is the detail of a settlement event (README.md, "Settlement events"). It is built
// field by field from the item: never the fingerprint, the signed envelope XDR, the lease owner,
// the claim ID, the trace ID or the operator's name and reason.
type EventDetail struct {
	SchemaVersion int `json:"schemaVersion"`
	// EventID is the same for every delivery of one transition (32 hex: the store key, the
	// item's incarnation and version, and the status, hashed): subscribers deduplicate on it,
	// since a stream batch retried after a failure publishes its events again. EventBridge's own
	// "id" differs per publish.
	EventID        string `json:"eventId"`
	WalletAddress  string `json:"walletAddress"`
	IdempotencyKey string `json:"idempotencyKey"`
	Status         string `json:"status"`
	OperationType  string `json:"operationType"`
	// Amount is the canonical decimal string in units of Asset (at most 7 decimal places).
	Amount string `json:"amount"`
	Asset  string `json:"asset"`
	// Memo is the transfer's memo as canonical ({"type","value"}: README.md, "The HTTP API"),
	// absent without one; MuxedAccount the muxed (M...) wallet it paid, absent for a G... or C...
	// one: walletAddress is then that M... address and account the G... it credited.
	Memo         *transfer.Memo `json:"memo,omitempty"`
	MuxedAccount *MuxedAccount  `json:"muxedAccount,omitempty"`
	// TransactionHash (64 hex) and Ledger (sequence number) of the transaction that landed:
	// success, and error when it failed on chain.
	TransactionHash string `json:"transactionHash,omitempty"`
	// OperationIndex is the 0-based index of this transfer's operation in that transaction,
	// present only for a transfer paid or rejected with others in one transaction
	// (transfer.OperationIndexOf).
	OperationIndex *int   `json:"operationIndex,omitempty"`
	Ledger         uint32 `json:"ledger,omitempty"`
	// Code is the problem code a call with this key now answers: TRANSACTION_FAILED (error),
	// TRANSFER_IN_DOUBT (in_doubt), TRANSFER_CANCELLED (cancelled); empty for success and
	// released.
	Code string `json:"code,omitempty"`
	// FailingCode says what made a transfer in doubt (TRANSFER_TIMEOUT, SUBMISSION_FAILED,
	// INTERNAL_ERROR, LEASE_EXPIRED), as the 409's failingCode.
	FailingCode string `json:"failingCode,omitempty"`
	// ResultCodes are a failed transaction's result codes (e.g. tx_failed, op_underfunded).
	ResultCodes []string `json:"resultCodes,omitempty"`
	// FeeChargedStroops is the fee the ledger charged, when known.
	FeeChargedStroops int64 `json:"feeCharged,omitempty"`
	// ResolvedBy (Transfer Resolved only): ledger or operator; Forced when an operator forced it
	// past a ledger that could no longer judge (README.md, "Operating it").
	ResolvedBy string `json:"resolvedBy,omitempty"`
	Forced     bool   `json:"forced,omitempty"`
	// CreatedAt is when the key was claimed; OccurredAt when the item reached this state (the
	// item's updatedAt; for a release, the stream record's creation time). RFC 3339, UTC.
	CreatedAt  time.Time `json:"createdAt,omitzero"`
	OccurredAt time.Time `json:"occurredAt,omitzero"`
}

// MuxedAccount is a muxed destination (SEP-23) as an event names it, the same shape as the API's:
// the M... address, the G... account credited and the 64-bit id in decimal.
type MuxedAccount struct {
	Address string `json:"address"`
	Account string `json:"account"`
	ID      string `json:"id"`
}

// SettlementEvent is one event to publish: its detail-type and detail.
type SettlementEvent struct {
	DetailType string
	Detail     EventDetail
}

// SettlementEventOf maps a stream record's transition to its event (README.md, "Settlement
// events"), given the record's decoded old and new images (nil where absent):
//
//   - a new image whose status changed into replayable or rejected: "Transfer Settled" (success
//     or error), or "Transfer Resolved" when the old status was in_doubt;
//   - a new image whose status changed into in_doubt: "Transfer In Doubt";
//   - an in_doubt old image removed (released, nothing moved: proven dead, included FAILED on
//     the service's side, or an operator's discard):
//     "Transfer Resolved" with status released;
//   - a new image whose status changed into cancelled (from queued: the only write that makes
//     one): "Transfer Cancelled".
//
// Nothing else is an event: the claim (INSERT in_flight), the attach and take-overs (in_flight
// to in_flight), in_doubt to in_doubt (an operator's audit before a discard), a release of an
// in_flight claim (the call that held it answers for it), and the TTL's removal of a settled
// item. ok is false when r is no event.
func SettlementEventOf(r *events.DynamoDBEventRecord, old, next *transfer.Record) (SettlementEvent, bool) {
	if next == nil {
		if old == nil || old.Status != transfer.StatusInDoubt {
			return SettlementEvent{}, false
		}
		d := baseDetail(*old, EventReleased, string(transfer.ResolvedReleased))
		d.OccurredAt = r.Change.ApproximateCreationDateTime.UTC()
		resolvedBy(&d, old.Audit)
		return SettlementEvent{DetailType: DetailTypeResolved, Detail: d}, true
	}
	if old != nil && old.Status == next.Status {
		return SettlementEvent{}, false
	}
	wasInDoubt := old != nil && old.Status == transfer.StatusInDoubt
	var d EventDetail
	switch next.Status {
	case transfer.StatusReplayable:
		d = baseDetail(*next, EventSuccess, string(next.Status))
	case transfer.StatusRejected:
		d = baseDetail(*next, EventError, string(next.Status))
	case transfer.StatusCancelled:
		d = baseDetail(*next, EventCancelled, string(next.Status))
		d.Code = transfer.CodeCancelled
		return SettlementEvent{DetailType: DetailTypeCancelled, Detail: d}, true
	case transfer.StatusInDoubt:
		d = baseDetail(*next, EventInDoubt, string(next.Status))
		d.Code, d.FailingCode = transfer.CodeInDoubt, transfer.CodeInternalError
		if next.Result != nil && next.Result.Code != "" {
			d.FailingCode = next.Result.Code
		}
		return SettlementEvent{DetailType: DetailTypeInDoubt, Detail: d}, true
	default:
		return SettlementEvent{}, false
	}
	if res := next.Result; res != nil {
		d.TransactionHash, d.Ledger, d.FeeChargedStroops = res.TransactionHash, res.Ledger, res.FeeChargedStroops
		if i, ok := transfer.OperationIndexOf(*next); ok {
			d.OperationIndex = &i
		}
		if next.Status == transfer.StatusRejected {
			d.Code, d.ResultCodes = res.Code, res.ResultCodes
		}
	}
	if !wasInDoubt {
		return SettlementEvent{DetailType: DetailTypeSettled, Detail: d}, true
	}
	resolvedBy(&d, next.Audit)
	return SettlementEvent{DetailType: DetailTypeResolved, Detail: d}, true
}

func baseDetail(rec transfer.Record, status, state string) EventDetail {
	d := EventDetail{
		SchemaVersion: EventSchemaVersion, EventID: eventID(rec, state), WalletAddress: rec.Request.WalletAddress,
		IdempotencyKey: rec.ClientKey, Status: status, OperationType: string(rec.Request.OperationType),
		Amount: rec.Request.Amount, Asset: rec.Request.Asset, CreatedAt: rec.CreatedAt.UTC(), OccurredAt: rec.UpdatedAt.UTC(),
	}
	if m := rec.Request.Memo; !m.IsZero() {
		d.Memo = &m
	}
	if w := rec.Request.Wallet(); w.Muxed() {
		d.MuxedAccount = &MuxedAccount{Address: w.Address, Account: w.Account, ID: strconv.FormatUint(w.MuxedID, 10)}
	}
	return d
}

func resolvedBy(d *EventDetail, a *transfer.Audit) {
	d.ResolvedBy = ResolvedByLedger
	if a != nil {
		d.ResolvedBy, d.Forced = ResolvedByOperator, a.Forced
	}
}

// eventID names one transition of one incarnation: the store key, the claim ID and version of
// the image the event is read from, and the state reached. A redelivered stream record gives the
// same ID; a later claim of the same key (a new claim ID) a different one.
func eventID(rec transfer.Record, state string) string {
	h := sha256.New()
	for _, s := range []string{rec.StoreKey, rec.ClaimID, strconv.FormatInt(rec.Version, 10), state} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// EventPublisher sends events to EventBridge (*eventbridge.Client).
type EventPublisher interface {
	PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, optFns ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error)
}

// EventFailureCounter counts the events whose publication the handler gave up on in an
// invocation (metrics.Writer; the alarm <stack>-settlement-events-failing).
type EventFailureCounter interface {
	EventPublishFailures(ctx context.Context, n int)
}

// PutEvents limits (Amazon EventBridge API Reference, PutEvents: "Entries: Array Members:
// Minimum number of 1 item. Maximum number of 10 items"); putAttempts is how often one entry is
// sent within an invocation before its stream record is reported as a batch item failure.
const (
	maxPutEntries = 10
	putAttempts   = 3
	putBackoff    = 100 * time.Millisecond
)

// queuedEvent is an event waiting to be published with the sequence number of its record.
type queuedEvent struct {
	seq   string
	entry ebtypes.PutEventsRequestEntry
}

// entry builds the PutEvents entry of ev. The detail is redacted (logging.Redact) as the SNS
// message is: the API refuses a key holding a secret seed, but an item written before it did may
// hold one.
func (h *Handler) entry(ev SettlementEvent) (ebtypes.PutEventsRequestEntry, error) {
	body, err := json.Marshal(ev.Detail)
	if err != nil {
		return ebtypes.PutEventsRequestEntry{}, malformed("encoding the event: %w", err)
	}
	e := ebtypes.PutEventsRequestEntry{
		EventBusName: aws.String(h.cfg.EventBus), Source: aws.String(EventSource),
		DetailType: aws.String(ev.DetailType), Detail: aws.String(logging.Redact(string(body))),
	}
	if !ev.Detail.OccurredAt.IsZero() {
		e.Time = aws.Time(ev.Detail.OccurredAt)
	}
	return e, nil
}

// publish sends the queued events in order, in one PutEvents request (at most maxPutEntries).
// Entries that PutEvents refuses (its per-entry ErrorCode: a request can succeed while some of
// its entries fail) are sent again, up to putAttempts times with a growing pause. It returns the
// sequence number of the first record whose event could not be published ("" when all were):
// Handle reports it as the batch item failure, so Lambda delivers the batch again from it.
func (h *Handler) publish(ctx context.Context, q []queuedEvent) string {
	left := q
	var lastErr string
	for attempt := 1; len(left) > 0 && attempt <= putAttempts; attempt++ {
		if attempt > 1 {
			if err := h.cfg.Wait(ctx, time.Duration(attempt-1)*putBackoff); err != nil {
				break
			}
		}
		entries := make([]ebtypes.PutEventsRequestEntry, len(left))
		for i, e := range left {
			entries[i] = e.entry
		}
		out, err := h.cfg.Events.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries})
		switch {
		case err != nil:
			lastErr = err.Error()
			continue
		case len(out.Entries) != len(left):
			lastErr = fmt.Sprintf("PutEvents answered %d entries for %d", len(out.Entries), len(left))
			continue
		}
		var failed []queuedEvent
		for i, res := range out.Entries {
			if res.ErrorCode != nil || res.EventId == nil {
				failed = append(failed, left[i])
				lastErr = aws.ToString(res.ErrorCode) + ": " + aws.ToString(res.ErrorMessage)
			}
		}
		left = failed
	}
	if len(left) == 0 {
		return ""
	}
	h.cfg.Logger.ErrorContext(ctx, "settlement events not published; the batch will be retried from the first",
		"events", len(left), "sequenceNumber", left[0].seq, "lastError", logging.Redact(lastErr))
	if h.cfg.EventFailures != nil {
		h.cfg.EventFailures.EventPublishFailures(ctx, len(left))
	}
	return left[0].seq
}

// waitTimer is Config.Wait's default: it pauses d, or until ctx ends.
func waitTimer(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
