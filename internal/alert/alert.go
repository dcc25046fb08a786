// Package alert turns the table's DynamoDB stream into operator signals: an error-level log line
// (alert "transfer-in-doubt") and an optional SNS message when a transfer becomes in_doubt (once
// for the transfers one batch's transaction pays: BatchPager), an info line (alert
// "transfer-in-doubt-resolved") when it leaves that state, and the in-doubt gauge (README.md,
// "Operating it"); and into the clients' settlement events on an EventBridge bus (events.go;
// README.md, "Settlement events"). It is the alert function's handler (functions/alert).
//
// One handler serves both so that the stream has one consumer: DynamoDB Streams advises at most
// two processes reading one shard at a time, more being throttled (Amazon DynamoDB Developer
// Guide, "Change data capture for DynamoDB Streams", "Reading and processing a stream"), and one
// ordered pass gives each transition its alert and its event once, with one retry policy,
// on-failure queue and iterator-age alarm. The price is
// that a failing PutEvents holds the shard's in-doubt alerts back until the mapping's retries
// give up (minutes); the page itself never waits for the stream: the in-doubt alarm reads the
// gauge the sweep writes every minute.
package alert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Alert names, the value of the "alert" attribute of the log lines (README.md, "Operating it":
// an ERROR line with "alert":"transfer-in-doubt").
const (
	InDoubtAlert  = "transfer-in-doubt"
	ResolvedAlert = "transfer-in-doubt-resolved"
)

// InDoubtLister reads the in-doubt index (dynamo.Store).
type InDoubtLister interface {
	ListInDoubt(ctx context.Context, limit int, cursor string) ([]transfer.Record, string, error)
}

// Gauge publishes the in-doubt gauge (metrics.Writer).
type Gauge interface {
	InDoubtGauge(ctx context.Context, n int)
}

// BatchPager claims the one page of a batch in doubt (dynamo.Store): transfers paid by one
// transaction go in doubt together, and the batch pages once, not once per key (transfer doc.go,
// "Batches").
type BatchPager interface {
	// PageBatch marks the batch item of innerHash as paged by the stream record by (its event ID)
	// and reports whether by is its pager: the first record to claim it, or the same record
	// delivered again (so a page whose publish failed is sent by the retry). false when another
	// record claimed it; false with transfer.ErrNotFound (wrapped) when no batch item holds it.
	PageBatch(ctx context.Context, innerHash, by string) (bool, error)
}

// Publisher sends an SNS message (*sns.Client).
type Publisher interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

// Config assembles a Handler. Store and Gauge are required; Publisher and TopicARN together
// enable the SNS message (ALERT_TOPIC_ARN); Events and EventBus together the settlement events
// (EVENT_BUS_NAME).
type Config struct {
	Store     InDoubtLister
	Gauge     Gauge
	Publisher Publisher
	TopicARN  string
	// Events publishes the settlement events to EventBus (a bus name or ARN).
	Events   EventPublisher
	EventBus string
	// EventFailures counts the events given up on in an invocation; nil: not counted.
	EventFailures EventFailureCounter
	// Counters gives back the limits' charges of a transfer under which nothing moved
	// (transfer.GiveBackOf); nil: none given back (a table without limits has no charges).
	Counters transfer.Counters
	// Wait pauses between PutEvents attempts; nil: a timer (tests inject their own).
	Wait   func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
	// Archives keeps the lasting records (transfer.ArchiveOf, one PutArchive per settlement;
	// dynamo.Store); nil: none are written.
	Archives transfer.ArchiveStore
	// Retention is how long a lasting record is kept after its settlement (RECORD_RETENTION_DAYS);
	// 0 keeps it for ever.
	Retention time.Duration
	// Batches makes a batch in doubt page once (BatchPager); nil: every key pages.
	Batches BatchPager
}

// Handler handles DynamoDB stream batches (NEW_AND_OLD_IMAGES).
type Handler struct {
	cfg Config
}

// New returns a Handler.
func New(cfg Config) *Handler {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Wait == nil {
		cfg.Wait = waitTimer
	}
	if cfg.EventBus == "" {
		cfg.Events = nil
	}
	return &Handler{cfg: cfg}
}

// gaugePageSize is the page size used to count the in-doubt index; maxGaugePages bounds the count
// (100,000 items: far beyond anything an operator could work through).
const (
	gaugePageSize = 100
	maxGaugePages = 1000
)

// Details are the operator fields of an in-doubt transfer (README.md, "Operating it":
// wallet, operation, amount, asset, failing code, the client's idempotency key, the trace ID) with
// the store key and what is needed to find the envelope on chain. Never the fingerprint, never
// the signed XDR, never a key.
type Details struct {
	Alert          string `json:"alert"`
	StoreKey       string `json:"storeKey"`
	WalletAddress  string `json:"walletAddress"`
	OperationType  string `json:"operationType"`
	Amount         string `json:"amount"`
	Asset          string `json:"asset"`
	FailingCode    string `json:"failingCode"`
	IdempotencyKey string `json:"idempotencyKey"`
	TraceID        string `json:"traceId,omitempty"`
	InnerHash      string `json:"innerHash,omitempty"`
	OuterHash      string `json:"outerHash,omitempty"`
	// OuterHashes is every fee bump sent around the inner transaction, oldest first, when it was
	// replaced by fee (more than one); any of them may be the one that lands.
	OuterHashes     []string  `json:"outerHashes,omitempty"`
	MaxTime         int64     `json:"maxTime,omitempty"` // epoch seconds
	SubmittedLedger uint32    `json:"submittedLedger,omitempty"`
	InDoubtSince    time.Time `json:"inDoubtSince,omitzero"`
	// BatchSize is, for a key paid by a batch's transaction, the number of transfers it holds:
	// the page stands for every one of them (each is in the in-doubt list).
	BatchSize int `json:"batchSize,omitempty"`
}

// DetailsOf returns rec's operator fields.
func DetailsOf(rec transfer.Record) Details {
	d := Details{
		Alert: InDoubtAlert, StoreKey: rec.StoreKey, WalletAddress: rec.Request.WalletAddress,
		OperationType: string(rec.Request.OperationType), Amount: rec.Request.Amount, Asset: rec.Request.Asset,
		FailingCode: transfer.CodeInternalError, IdempotencyKey: rec.ClientKey, TraceID: rec.TraceID,
		InDoubtSince: rec.UpdatedAt,
	}
	if rec.Result != nil && rec.Result.Code != "" {
		d.FailingCode = rec.Result.Code
	}
	if e := rec.Envelope; e != nil {
		d.InnerHash, d.OuterHash, d.MaxTime, d.SubmittedLedger = e.InnerHash, e.OuterHash, e.MaxTime, e.SubmittedLedger
		if outers := e.Outers(); len(outers) > 1 {
			d.OuterHashes = outers
		}
	}
	return d
}

func (d Details) attrs() []any {
	attrs := []any{
		"alert", d.Alert, "storeKey", d.StoreKey, "walletAddress", d.WalletAddress,
		"operationType", d.OperationType, "amount", d.Amount, "asset", d.Asset, "failingCode", d.FailingCode,
		"idempotencyKey", d.IdempotencyKey, "traceId", d.TraceID, "innerHash", d.InnerHash,
		"outerHash", d.OuterHash, "outerHashes", d.OuterHashes, "maxTime", d.MaxTime, "submittedLedger", d.SubmittedLedger,
		"inDoubtSince", d.InDoubtSince,
	}
	if d.BatchSize > 0 {
		attrs = append(attrs, "batchSize", d.BatchSize)
	}
	return attrs
}

// Handle processes a batch in order. A transfer entering in_doubt is alerted (log, then SNS); one
// leaving it is logged as resolved; items that are not transfers (channel accounts) and other
// transitions are ignored. A malformed record (an image that does not decode, a missing image)
// is logged and skipped: retrying cannot fix it, and reporting it would hold the shard back
// until the record expires. A failure that a retry can fix (the SNS publish) ends the batch there
// and reports that record's sequence number: Lambda retries a stream batch from the lowest
// reported sequence number, so records after it would be delivered again anyway, and alerting
// them now would alert them twice. When the batch moved anything into or out of in_doubt, the
// gauge is refreshed from the in-doubt index. The error result is always nil.
//
// With Archives set, a change transfer.ArchiveOf archives writes its lasting record first (before
// the record's alert and event); a failed write ends the batch at its record as a failed SNS
// publish does, and an archive the store refuses as not archivable is logged and skipped.
//
// With Events set, each transition SettlementEventOf maps is published too, in record order,
// up to ten per PutEvents request; the events queued before an SNS publish are published first.
// An event PutEvents still refuses after putAttempts ends the batch at its record, as an SNS
// failure does: its record and every later one are delivered again, and an event of a later
// record already published is then published twice with the same detail.eventId.
func (h *Handler) Handle(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	resp := events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{}}
	changed := false
	var queue []queuedEvent
	fail := func(seq string) (events.DynamoDBEventResponse, error) {
		resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: seq})
		if changed {
			h.refreshGauge(ctx)
		}
		return resp, nil
	}
	flush := func() string {
		if len(queue) == 0 {
			return ""
		}
		seq := h.publish(ctx, queue)
		queue = queue[:0]
		return seq
	}
	for i := range ev.Records {
		r := &ev.Records[i]
		ch, err := h.change(r)
		if err == nil && ch.alerts() && h.cfg.Publisher != nil {
			// The SNS message goes out in record order after the events queued before it.
			if seq := flush(); seq != "" {
				return fail(seq)
			}
		}
		if err == nil {
			// Before the alert: a give-back that fails retries the batch from this record, and
			// must not repeat the alert of a record already alerted.
			err = h.giveBack(ctx, ch)
		}
		moved := false
		if err == nil {
			// The record first: once the alert or the event of a settlement is out, its record
			// is there to read. A retry writes it again harmlessly (conditional on the version).
			err = h.archive(ctx, r, ch)
		}
		if err == nil {
			moved, err = h.alert(ctx, r, ch)
		}
		changed = changed || moved
		var bad *malformedError
		switch {
		case errors.As(err, &bad):
			h.cfg.Logger.ErrorContext(ctx, "malformed stream record skipped", "eventID", r.EventID,
				"eventName", r.EventName, "sequenceNumber", r.Change.SequenceNumber, "err", err)
			continue
		case err != nil:
			h.cfg.Logger.ErrorContext(ctx, "stream record failed; the batch will be retried from it", "eventID", r.EventID,
				"sequenceNumber", r.Change.SequenceNumber, "err", err)
			if seq := flush(); seq != "" {
				return fail(seq)
			}
			return fail(r.Change.SequenceNumber)
		}
		if h.cfg.Events == nil || !ch.transfer {
			continue
		}
		if sev, ok := SettlementEventOf(r, ch.old, ch.next); ok {
			e, err := h.entry(sev)
			if err != nil {
				h.cfg.Logger.ErrorContext(ctx, "settlement event skipped", "eventID", r.EventID, "err", err)
				continue
			}
			queue = append(queue, queuedEvent{seq: r.Change.SequenceNumber, entry: e})
			if len(queue) == maxPutEntries {
				if seq := flush(); seq != "" {
					return fail(seq)
				}
			}
		}
	}
	if seq := flush(); seq != "" {
		return fail(seq)
	}
	if changed {
		h.refreshGauge(ctx)
	}
	return resp, nil
}

// archive writes the lasting record ch calls for (transfer.ArchiveOf), if any. The write is
// idempotent (conditional on the version), so a batch retried from an earlier record writes it
// again harmlessly. A record the store refuses to archive is malformed: no retry fixes it.
func (h *Handler) archive(ctx context.Context, r *events.DynamoDBEventRecord, ch change) error {
	if h.cfg.Archives == nil || !ch.transfer {
		return nil
	}
	at := r.Change.ApproximateCreationDateTime.Time
	a, ok := transfer.ArchiveOf(ch.old, ch.next, at, h.cfg.Retention)
	if !ok {
		return nil
	}
	err := h.cfg.Archives.PutArchive(ctx, a)
	if errors.Is(err, transfer.ErrNotArchivable) {
		return malformed("archive: %w", err)
	}
	if err != nil {
		return fmt.Errorf("alert: writing the lasting record: %w", err)
	}
	return nil
}

// malformedError marks a record that no retry can process.
type malformedError struct{ err error }

func (e *malformedError) Error() string { return e.err.Error() }
func (e *malformedError) Unwrap() error { return e.err }

func malformed(format string, args ...any) error {
	return &malformedError{err: fmt.Errorf(format, args...)}
}

// change is one stream record's transition of a transfer item: its old and new images decoded
// (nil where the record has none). transfer is false for items that are not transfers.
type change struct {
	transfer  bool
	old, next *transfer.Record
}

// alerts reports whether the change sends an alert (a transfer entering in_doubt).
func (c change) alerts() bool {
	return c.transfer && c.next != nil && c.next.Status == transfer.StatusInDoubt &&
		(c.old == nil || c.old.Status != transfer.StatusInDoubt)
}

// change decodes r; a record no retry can read is a malformedError.
func (h *Handler) change(r *events.DynamoDBEventRecord) (change, error) {
	if !isTransfer(r) {
		return change{}, nil
	}
	c := change{transfer: true}
	switch r.EventName {
	case "INSERT", "MODIFY", "REMOVE":
	default:
		return change{}, malformed("unknown event name %q", r.EventName)
	}
	if r.EventName != "INSERT" {
		if len(r.Change.OldImage) == 0 {
			return change{}, malformed("%s record without an old image (the stream must be NEW_AND_OLD_IMAGES)", r.EventName)
		}
		rec, err := decode(r.Change.OldImage)
		if err != nil {
			return change{}, malformed("old image: %w", err)
		}
		c.old = &rec
	}
	if r.EventName != "REMOVE" {
		if len(r.Change.NewImage) == 0 {
			return change{}, malformed("%s record without a new image (the stream must be NEW_AND_OLD_IMAGES)", r.EventName)
		}
		rec, err := decode(r.Change.NewImage)
		if err != nil {
			return change{}, malformed("new image: %w", err)
		}
		c.next = &rec
	}
	return c, nil
}

// alert handles one change (of the stream record r) and reports whether it moved a transfer into
// or out of in_doubt.
func (h *Handler) alert(ctx context.Context, r *events.DynamoDBEventRecord, c change) (bool, error) {
	if !c.transfer {
		return false, nil
	}
	wasInDoubt := c.old != nil && c.old.Status == transfer.StatusInDoubt
	isInDoubt := c.next != nil && c.next.Status == transfer.StatusInDoubt
	switch {
	case isInDoubt && !wasInDoubt:
		return true, h.inDoubt(ctx, r.EventID, *c.next)
	case wasInDoubt && !isInDoubt:
		h.resolved(ctx, *c.old, c.next)
		return true, nil
	}
	return false, nil
}

// giveBack returns the limits' charges of a transfer that ended with nothing moved (a rejection,
// a release, a discard: transfer.GiveBackOf) to their daily counters. Counters.GiveBack applies a
// claim's give-back once however often its record is delivered, so the stream's at-least-once
// delivery, a bisected batch or a retried one never gives back twice. An error retries the batch
// from this record; until it lands the counter still holds the charge, so the limit errs on the
// side of refusing (never above its cap).
func (h *Handler) giveBack(ctx context.Context, c change) error {
	if !c.transfer || h.cfg.Counters == nil {
		return nil
	}
	claimID, charges := transfer.GiveBackOf(c.old, c.next)
	if len(charges) == 0 {
		return nil
	}
	if err := h.cfg.Counters.GiveBack(ctx, claimID, charges); err != nil {
		return fmt.Errorf("giving back the daily limits' charges of claim %s: %w", claimID, err)
	}
	return nil
}

func isTransfer(r *events.DynamoDBEventRecord) bool {
	pk, ok := r.Change.Keys[dynamo.AttrPK]
	if !ok || pk.DataType() != events.DataTypeString {
		// No usable key: let the images decide (a malformed one is reported as such).
		return true
	}
	return strings.HasPrefix(pk.String(), "transfer:")
}

func decode(image map[string]events.DynamoDBAttributeValue) (transfer.Record, error) {
	av, err := ToSDK(image)
	if err != nil {
		return transfer.Record{}, err
	}
	return dynamo.DecodeItem(av)
}

// inDoubt alerts, for rec entering in_doubt in the stream record eventID: the error line first (it
// must not depend on SNS), then the SNS message. The log line is redacted by the logger
// (logging.RedactSeeds); the SNS message and subject, which no logger sees, are redacted here
// (logging.Redact): the API replaces a trace ID that is not in X-Ray's format and refuses a key
// holding a seed, but an item written before it did may hold one.
//
// A key paid by a batch's transaction (rec.Batch) pages once for its batch: with Batches set,
// only the key whose record claims the batch's page (BatchPager) alerts, naming the batch's size;
// every other key of it logs a WARN line without the "alert" field (it stays in the in-doubt list
// and the gauge, and the in-doubt alarm still fires while any key is in doubt). A key whose batch
// item cannot be read (ErrNotFound: nothing can claim its page) logs a WARN line saying so: the
// in-doubt alarm pages for it. A failed claim retries the batch from this record, as a failed
// publish does. The page names the batch item's hashes (every outer hash of a batch replaced by
// fee) when Batches can read it (transfer.BatchReader).
func (h *Handler) inDoubt(ctx context.Context, eventID string, rec transfer.Record) error {
	d := DetailsOf(rec)
	if rec.Batch != nil && rec.Envelope != nil && h.cfg.Batches != nil {
		pager, err := h.cfg.Batches.PageBatch(ctx, rec.Envelope.InnerHash, eventID)
		if errors.Is(err, transfer.ErrNotFound) {
			h.cfg.Logger.WarnContext(ctx, "transfer in doubt; its batch item could not be read, so no batch page: the in-doubt alarm pages",
				"storeKey", d.StoreKey, "idempotencyKey", d.IdempotencyKey, "innerHash", d.InnerHash, "batchIndex", rec.Batch.Index,
				"batchSize", rec.Batch.Size)
			return nil
		}
		if err != nil {
			return fmt.Errorf("alert: claiming the page of batch %s: %w", rec.Envelope.InnerHash, err)
		}
		if !pager {
			h.cfg.Logger.WarnContext(ctx, "transfer in doubt; its batch has paged once for all its transfers", "storeKey", d.StoreKey,
				"idempotencyKey", d.IdempotencyKey, "innerHash", d.InnerHash, "batchIndex", rec.Batch.Index, "batchSize", rec.Batch.Size)
			return nil
		}
		d.BatchSize = rec.Batch.Size
		// The key's item holds the batch's hashes as attached; a replacement by fee adds outer
		// hashes on the batch item alone (transfer doc.go, "Batches"): the page names them all.
		if br, ok := h.cfg.Batches.(transfer.BatchReader); ok {
			if b, err := br.GetBatch(ctx, rec.Envelope.InnerHash); err == nil {
				d.OuterHash, d.OuterHashes = b.Envelope.OuterHash, nil
				if outers := b.Envelope.Outers(); len(outers) > 1 {
					d.OuterHashes = outers
				}
			} else {
				h.cfg.Logger.WarnContext(ctx, "reading an in-doubt batch's item failed; its page names the hashes its key was attached with", "innerHash", d.InnerHash, "err", err)
			}
		}
	}
	h.cfg.Logger.ErrorContext(ctx, "transfer in doubt: it may or may not have landed; reconcile it", d.attrs()...)
	if h.cfg.Publisher == nil || h.cfg.TopicARN == "" {
		return nil
	}
	body, err := json.Marshal(d)
	if err != nil {
		return malformed("encoding the alert: %w", err)
	}
	subject := "Transfer in doubt: " + d.OperationType + " " + d.Amount + " " + d.Asset
	if d.BatchSize > 0 {
		subject = fmt.Sprintf("Batch of %d transfers in doubt (one shown): %s %s %s", d.BatchSize, d.OperationType, d.Amount, d.Asset)
	}
	_, err = h.cfg.Publisher.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(h.cfg.TopicARN),
		Subject:  aws.String(logging.Redact(subject)),
		Message:  aws.String(logging.Redact(string(body))),
	})
	if err != nil {
		return fmt.Errorf("alert: publishing to SNS: %w", err)
	}
	return nil
}

// resolved logs a transfer leaving in_doubt: to replayable or rejected (landed or failed on
// chain), or removed (released: nothing can land). An operator's audit, when the new image or,
// for a removal, the old image carries one, is logged with it.
func (h *Handler) resolved(ctx context.Context, old transfer.Record, next *transfer.Record) {
	attrs := []any{"alert", ResolvedAlert, "storeKey", old.StoreKey, "idempotencyKey", old.ClientKey,
		"walletAddress", old.Request.WalletAddress}
	audit := old.Audit
	if next == nil {
		attrs = append(attrs, "resolution", string(transfer.ResolvedReleased))
	} else {
		attrs = append(attrs, "resolution", string(next.Status))
		if next.Result != nil && next.Result.TransactionHash != "" {
			attrs = append(attrs, "transactionHash", next.Result.TransactionHash, "ledger", next.Result.Ledger)
		}
		if next.Audit != nil {
			audit = next.Audit
		}
	}
	if audit != nil {
		attrs = append(attrs, slog.Group("audit", "action", audit.Action, "operator", audit.Operator,
			"requestId", audit.RequestID, "reason", audit.Reason, "forced", audit.Forced, "at", audit.At))
	}
	h.cfg.Logger.InfoContext(ctx, "transfer in doubt resolved", attrs...)
}

// refreshGauge counts the in-doubt index and publishes the gauge. A failure is logged: the sweep
// publishes the gauge every minute anyway. The index is eventually consistent, so on DynamoDB
// the count may lag the batch by a moment; the next batch or sweep corrects it.
func (h *Handler) refreshGauge(ctx context.Context) {
	n, err := CountInDoubt(ctx, h.cfg.Store)
	if err != nil {
		h.cfg.Logger.WarnContext(ctx, "counting in-doubt transfers failed; the gauge was not updated", "err", err)
		return
	}
	h.cfg.Gauge.InDoubtGauge(ctx, n)
}

// CountInDoubt counts the in-doubt index, page by page (at most 100,000 items).
func CountInDoubt(ctx context.Context, store InDoubtLister) (int, error) {
	n, cursor := 0, ""
	for range maxGaugePages {
		recs, next, err := store.ListInDoubt(ctx, gaugePageSize, cursor)
		if err != nil {
			return 0, err
		}
		n += len(recs)
		if next == "" {
			return n, nil
		}
		cursor = next
	}
	return n, nil
}
