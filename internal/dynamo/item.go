package dynamo

import (
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// item is a transfer record as stored (doc.go, "Table layout"). Empty attributes are omitted: an
// item never holds an empty string, a zero number or an empty map.
type item struct {
	PK          string       `dynamodbav:"pk"`
	ClaimID     string       `dynamodbav:"claimId,omitempty"` // the incarnation (transfer.Record.ClaimID)
	Status      string       `dynamodbav:"status"`
	Fingerprint string       `dynamodbav:"fingerprint,omitempty"` // hex sha256 of the canonical request
	Request     *requestItem `dynamodbav:"request,omitempty"`
	ClientKey   string       `dynamodbav:"clientKey,omitempty"`
	TraceID     string       `dynamodbav:"traceId,omitempty"`

	LeaseOwner     string `dynamodbav:"leaseOwner,omitempty"`
	LeaseExpiresAt int64  `dynamodbav:"leaseExpiresAt,omitempty"` // epoch milliseconds

	// Envelope, written before the first send. Present iff innerHash is; a settled item keeps the
	// hashes but drops envelopeXdr (it can never land again).
	EnvelopeXDR string `dynamodbav:"envelopeXdr,omitempty"` // base64 TransactionEnvelope
	InnerHash   string `dynamodbav:"innerHash,omitempty"`   // hex
	OuterHash   string `dynamodbav:"outerHash,omitempty"`   // hex; fee-bumped only: the fee bump envelopeXdr holds
	// OuterHashes (L of S, oldest first, ending with outerHash) lists every fee bump sent around
	// the inner transaction once it was replaced by fee; absent when there was one, and on items
	// written before replacement existed: outerHash is then the only one (transfer.Envelope.Outers).
	OuterHashes     []string `dynamodbav:"outerHashes,omitempty"`
	MaxTime         int64    `dynamodbav:"maxTime,omitempty"` // timebounds maxTime, epoch seconds
	SubmittedLedger uint32   `dynamodbav:"submittedLedger,omitempty"`
	Channel         string   `dynamodbav:"channel,omitempty"`    // G... account
	FeeStroops      int64    `dynamodbav:"feeStroops,omitempty"` // stroops

	Result *resultItem `dynamodbav:"result,omitempty"`

	ExpiresAt int64 `dynamodbav:"expiresAt,omitempty"` // TTL, epoch seconds; absent = never
	Version   int64 `dynamodbav:"version"`
	CreatedAt int64 `dynamodbav:"createdAt,omitempty"` // epoch milliseconds
	UpdatedAt int64 `dynamodbav:"updatedAt,omitempty"` // epoch milliseconds

	GSI1PK string `dynamodbav:"gsi1pk,omitempty"` // InDoubtPartition or ClaimsPartition, else absent
	GSI1SK string `dynamodbav:"gsi1sk,omitempty"` // see AttrGSI1SK

	GSI2PK string `dynamodbav:"gsi2pk,omitempty"` // transfer.WalletHash of the request's wallet scope (request.account, else request.walletAddress)
	GSI2SK string `dynamodbav:"gsi2sk,omitempty"` // see AttrGSI2SK

	Audit *auditItem `dynamodbav:"audit,omitempty"` // an operator's resolution (internal/reconcile)

	Async bool `dynamodbav:"async,omitempty"` // BOOL: accepted with Prefer: respond-async (transfer.Record.Async)

	// Charges (L of M) are what the claim added to the limits' daily counters
	// (transfer.Record.Charges); absent without limits.
	Charges []chargeItem `dynamodbav:"charges,omitempty"`
	// Charged (BOOL true) marks an item with charges, for the stream's filter (template.yaml,
	// AlertFunction): a filter matches scalar attributes, not the elements of a list.
	Charged bool `dynamodbav:"charged,omitempty"`
	// Batch (M) is the key's operation in its batch's transaction (transfer.Record.Batch): index
	// (N, 0-based) and size (N); absent on the one-transfer path.
	Batch *batchRefItem `dynamodbav:"batch,omitempty"`
	// NotBefore (N, epoch seconds) is when a queued item may next be taken, written by a requeue
	// for a failure on the service's side (transfer.Record.NotBefore, transfer.RequeuedAfter);
	// absent: at once, as every item written without it.
	NotBefore int64 `dynamodbav:"notBefore,omitempty"`
}

// batchRefItem is transfer.BatchRef (map attribute "batch"); index 0 is written.
type batchRefItem struct {
	Index int `dynamodbav:"index"`
	Size  int `dynamodbav:"size"`
}

// chargeItem is transfer.Charge (an element of "charges").
type chargeItem struct {
	Counter string `dynamodbav:"counter"`
	Scope   string `dynamodbav:"scope"`
	Asset   string `dynamodbav:"asset"`
	Day     string `dynamodbav:"day"` // 2006-01-02, UTC
	Stroops int64  `dynamodbav:"stroops"`
	Cap     int64  `dynamodbav:"cap"` // stroops
}

// auditItem is transfer.Audit (map attribute "audit").
type auditItem struct {
	Action    string `dynamodbav:"action,omitempty"` // "resolve" or "discard"
	Operator  string `dynamodbav:"operator,omitempty"`
	RequestID string `dynamodbav:"requestId,omitempty"` // Lambda request ID
	Reason    string `dynamodbav:"reason,omitempty"`
	Forced    bool   `dynamodbav:"forced,omitempty"`
	At        int64  `dynamodbav:"at,omitempty"` // epoch milliseconds
}

// requestItem is the canonical request (map attribute "request").
type requestItem struct {
	OperationType string `dynamodbav:"operationType,omitempty"`
	WalletAddress string `dynamodbav:"walletAddress,omitempty"`
	Amount        string `dynamodbav:"amount,omitempty"` // canonical decimal string
	Asset         string `dynamodbav:"asset,omitempty"`
	Stroops       int64  `dynamodbav:"stroops,omitempty"`
	// Account and MuxedID: an M... walletAddress's G... account and id (transfer.Request).
	Account string    `dynamodbav:"account,omitempty"`
	MuxedID uint64    `dynamodbav:"muxedId,omitempty"` // N; absent for 0
	Memo    *memoItem `dynamodbav:"memo,omitempty"`
}

// memoItem is transfer.Memo (map attribute "request.memo"); value absent for an empty text memo.
type memoItem struct {
	Type  string `dynamodbav:"type"`
	Value string `dynamodbav:"value,omitempty"`
}

// resultItem is the stored outcome (map attribute "result"); names as transfer.Result's JSON.
type resultItem struct {
	TransactionHash   string   `dynamodbav:"transactionHash,omitempty"`
	Ledger            uint32   `dynamodbav:"ledger,omitempty"`
	Code              string   `dynamodbav:"code,omitempty"`
	HTTPStatus        int      `dynamodbav:"status,omitempty"` // read only: transfer.Result.HTTPStatus
	Detail            string   `dynamodbav:"detail,omitempty"`
	ResultCodes       []string `dynamodbav:"resultCodes,omitempty"` // L of S, in order
	FeeChargedStroops int64    `dynamodbav:"feeCharged,omitempty"`
	// OperationIndex (N, 0-based) is a batched key's operation in the transaction named
	// (transfer.OperationIndexOf), written beside "batch" for the wallet index; absent otherwise.
	OperationIndex *int `dynamodbav:"operationIndex,omitempty"`
}

// inDoubtSortKey is gsi1sk: a time (in doubt since, or the claim's lease expiry) in RFC 3339 UTC
// with milliseconds, then the key. Fixed width, so the index sorts by time.
func inDoubtSortKey(at time.Time, pk string) string {
	return at.UTC().Format(sortKeyTimeLayout) + "#" + pk
}

// historySortKey is gsi2sk: the claim's createdAt in the same fixed-width form as gsi1sk, then
// the key, so that descending order is newest first and two claims of one millisecond differ.
func historySortKey(createdAt time.Time, pk string) string {
	return inDoubtSortKey(createdAt, pk)
}

func validStatus(s transfer.Status) bool {
	switch s {
	case transfer.StatusInFlight, transfer.StatusReplayable, transfer.StatusRejected, transfer.StatusInDoubt, transfer.StatusQueued,
		transfer.StatusCancelled:
		return true
	}
	return false
}

// marshalRecord maps rec to its item. It refuses records that would break the store's invariants:
// an unknown status, an envelope without a hash, an unsettled envelope without XDR (unless it is a
// batch's, whose XDR the batch's item holds), a malformed batch reference (transfer.CheckBatchRef), and a TTL on
// an in_flight or in_doubt item (a claim could then overwrite an item whose envelope may still
// land; internal/transfer/doc.go, "The item"), a queued or cancelled item holding an
// envelope or a lease, and a notBefore on anything but a queued item that holds the failure it
// waits out (transfer.RequeuedAfter).
func marshalRecord(rec transfer.Record) (map[string]types.AttributeValue, error) {
	switch {
	case rec.StoreKey == "":
		return nil, fmt.Errorf("dynamo: record has no store key")
	case !validStatus(rec.Status):
		return nil, fmt.Errorf("dynamo: record %q: unknown status %q", rec.StoreKey, rec.Status)
	case rec.ExpiresAt != 0 && (rec.Status == transfer.StatusInFlight || rec.Status == transfer.StatusInDoubt):
		return nil, fmt.Errorf("dynamo: record %q: a %s item must not expire (expiresAt %d)", rec.StoreKey, rec.Status, rec.ExpiresAt)
	case rec.Envelope != nil && rec.Envelope.InnerHash == "":
		return nil, fmt.Errorf("dynamo: record %q: envelope without an inner hash", rec.StoreKey)
	case rec.Envelope != nil && rec.Envelope.XDR == "" && rec.Batch == nil && (rec.Status == transfer.StatusInFlight || rec.Status == transfer.StatusInDoubt):
		// A batched key's XDR is its batch's item's (transfer.BatchEnvelope).
		return nil, fmt.Errorf("dynamo: record %q: a %s envelope without XDR", rec.StoreKey, rec.Status)
	case rec.Status == transfer.StatusQueued && (rec.Envelope != nil || rec.LeaseOwner != "" || rec.ExpiresAt != 0 || !rec.Async):
		// A queued item has built nothing and is held by no invocation (transfer.Requeued).
		return nil, fmt.Errorf("dynamo: record %q: a queued item holds no envelope, lease or TTL and is async", rec.StoreKey)
	case rec.Status == transfer.StatusCancelled && (rec.Envelope != nil || rec.LeaseOwner != "" || !rec.Async ||
		rec.Audit == nil || rec.Audit.Action != transfer.AuditCancel):
		// A cancelled item was queued: it has built nothing and never will (transfer.Cancelled).
		return nil, fmt.Errorf("dynamo: record %q: a cancelled item holds no envelope or lease, is async and has its cancel audit", rec.StoreKey)
	case rec.NotBefore < 0 || rec.NotBefore != 0 && rec.Status != transfer.StatusQueued:
		// Only a queued item waits to be taken (transfer.Record.NotBefore).
		return nil, fmt.Errorf("dynamo: record %q: notBefore %d on a %s item; only a queued item is held back", rec.StoreKey, rec.NotBefore, rec.Status)
	case rec.Status == transfer.StatusQueued && rec.NotBefore != 0 && (rec.Result == nil || rec.Result.Code == ""),
		rec.Status == transfer.StatusQueued && rec.NotBefore == 0 && rec.Result != nil:
		// A queued item holds a result only as the failure its notBefore waits out
		// (transfer.RequeuedAfter), and is held back only with it.
		return nil, fmt.Errorf("dynamo: record %q: a queued item is held back (notBefore) exactly when it holds the failure it waits out", rec.StoreKey)
	}
	if err := transfer.CheckBatchRef(rec); err != nil {
		return nil, fmt.Errorf("dynamo: %w", err)
	}
	it := item{
		PK:          rec.StoreKey,
		ClaimID:     rec.ClaimID,
		Status:      string(rec.Status),
		Fingerprint: rec.Fingerprint,
		ClientKey:   rec.ClientKey,
		TraceID:     rec.TraceID,
		LeaseOwner:  rec.LeaseOwner,
		ExpiresAt:   rec.ExpiresAt,
		Version:     rec.Version,
		Async:       rec.Async,
		NotBefore:   rec.NotBefore,
	}
	it.LeaseExpiresAt = epochMillis(rec.LeaseExpiresAt)
	it.CreatedAt = epochMillis(rec.CreatedAt)
	it.UpdatedAt = epochMillis(rec.UpdatedAt)
	if r := rec.Request; r != (transfer.Request{}) {
		it.Request = &requestItem{
			OperationType: string(r.OperationType),
			WalletAddress: r.WalletAddress,
			Amount:        r.Amount,
			Asset:         r.Asset,
			Stroops:       r.Stroops,
			Account:       r.Account,
			MuxedID:       r.MuxedID,
		}
		if !r.Memo.IsZero() {
			it.Request.Memo = &memoItem{Type: string(r.Memo.Type), Value: r.Memo.Value}
		}
	}
	if e := rec.Envelope; e != nil {
		it.EnvelopeXDR = e.XDR
		it.InnerHash = e.InnerHash
		it.OuterHash = e.OuterHash
		if outers := e.Outers(); len(outers) > 1 {
			it.OuterHashes = outers
		}
		it.MaxTime = e.MaxTime
		it.SubmittedLedger = e.SubmittedLedger
		it.Channel = e.Channel
		it.FeeStroops = e.FeeStroops
	}
	if r := rec.Result; r != nil {
		it.Result = &resultItem{
			TransactionHash:   r.TransactionHash,
			Ledger:            r.Ledger,
			Code:              r.Code,
			HTTPStatus:        r.HTTPStatus,
			Detail:            r.Detail,
			ResultCodes:       r.ResultCodes,
			FeeChargedStroops: r.FeeChargedStroops,
		}
		// Copied into the result so that the wallet index (gsi2), which projects "result" but
		// not "batch", carries the index to a history entry.
		if i, ok := transfer.OperationIndexOf(rec); ok {
			it.Result.OperationIndex = &i
		}
	}
	if rec.Status == transfer.StatusInDoubt {
		at := rec.UpdatedAt
		if at.IsZero() {
			at = rec.CreatedAt
		}
		it.GSI1PK = InDoubtPartition
		it.GSI1SK = inDoubtSortKey(at, rec.StoreKey)
	}
	if rec.Status == transfer.StatusInFlight && !rec.LeaseExpiresAt.IsZero() {
		it.GSI1PK = ClaimsPartition
		it.GSI1SK = inDoubtSortKey(rec.LeaseExpiresAt, rec.StoreKey)
	}
	if rec.Status == transfer.StatusQueued {
		at := rec.UpdatedAt
		if at.IsZero() {
			at = rec.CreatedAt
		}
		it.GSI1PK = QueuedPartition
		it.GSI1SK = inDoubtSortKey(at, rec.StoreKey)
	}
	// Every write of a transfer item is the whole item (Claim and Replace are PutItem), so the
	// history keys are derived here from what every write carries: the request's wallet and the
	// claim's createdAt. An item without them (written by another writer) is not in the history.
	// A muxed wallet's items are its account's (transfer.Wallet.Scope), as their store keys are.
	if w := rec.Request.Wallet().Scope(); w != "" && !rec.CreatedAt.IsZero() {
		it.GSI2PK = transfer.WalletHash(w)
		it.GSI2SK = historySortKey(rec.CreatedAt, rec.StoreKey)
	}
	if a := rec.Audit; a != nil {
		it.Audit = &auditItem{Action: a.Action, Operator: a.Operator, RequestID: a.RequestID, Reason: a.Reason,
			Forced: a.Forced, At: epochMillis(a.At)}
	}
	if b := rec.Batch; b != nil {
		it.Batch = &batchRefItem{Index: b.Index, Size: b.Size}
	}
	it.Charged = len(rec.Charges) > 0
	for _, c := range rec.Charges {
		it.Charges = append(it.Charges, chargeItem{Counter: c.Counter, Scope: string(c.Scope), Asset: c.Asset, Day: c.Day,
			Stroops: c.Stroops, Cap: c.Cap})
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, fmt.Errorf("dynamo: marshal record %q: %w", rec.StoreKey, err)
	}
	return av, nil
}

// unmarshalRecord maps a stored item back to a record. A malformed item (missing or mistyped
// attribute, unknown status) is an error naming its key; it never panics. An empty result map
// (stored by a writer other than this package) reads as a nil Result.
func unmarshalRecord(av map[string]types.AttributeValue) (transfer.Record, error) {
	key := "<no pk>"
	if s, ok := av[AttrPK].(*types.AttributeValueMemberS); ok {
		key = s.Value
	}
	var it item
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return transfer.Record{}, fmt.Errorf("dynamo: malformed item %q: %w", key, err)
	}
	switch {
	case it.PK == "":
		return transfer.Record{}, fmt.Errorf("dynamo: malformed item %q: no string attribute %q", key, AttrPK)
	case !validStatus(transfer.Status(it.Status)):
		return transfer.Record{}, fmt.Errorf("dynamo: malformed item %q: unknown status %q", key, it.Status)
	}
	rec := transfer.Record{
		StoreKey:       it.PK,
		ClaimID:        it.ClaimID,
		Status:         transfer.Status(it.Status),
		Fingerprint:    it.Fingerprint,
		ClientKey:      it.ClientKey,
		TraceID:        it.TraceID,
		LeaseOwner:     it.LeaseOwner,
		LeaseExpiresAt: fromEpochMillis(it.LeaseExpiresAt),
		ExpiresAt:      it.ExpiresAt,
		Version:        it.Version,
		CreatedAt:      fromEpochMillis(it.CreatedAt),
		UpdatedAt:      fromEpochMillis(it.UpdatedAt),
		Async:          it.Async,
		NotBefore:      it.NotBefore,
	}
	if r := it.Request; r != nil {
		rec.Request = transfer.Request{
			OperationType: transfer.Operation(r.OperationType),
			WalletAddress: r.WalletAddress,
			Amount:        r.Amount,
			Asset:         r.Asset,
			Stroops:       r.Stroops,
			Account:       r.Account,
			MuxedID:       r.MuxedID,
		}
		if m := r.Memo; m != nil {
			rec.Request.Memo = transfer.Memo{Type: transfer.MemoType(m.Type), Value: m.Value}
		}
	}
	if it.InnerHash != "" {
		rec.Envelope = &transfer.Envelope{
			XDR:             it.EnvelopeXDR,
			InnerHash:       it.InnerHash,
			OuterHash:       it.OuterHash,
			OuterHashes:     it.OuterHashes,
			MaxTime:         it.MaxTime,
			SubmittedLedger: it.SubmittedLedger,
			Channel:         it.Channel,
			FeeStroops:      it.FeeStroops,
		}
	}
	if r := it.Result; r != nil && !r.empty() {
		rec.Result = &transfer.Result{
			TransactionHash:   r.TransactionHash,
			Ledger:            r.Ledger,
			Code:              r.Code,
			HTTPStatus:        r.HTTPStatus,
			Detail:            r.Detail,
			ResultCodes:       r.ResultCodes,
			FeeChargedStroops: r.FeeChargedStroops,
		}
		if it.Batch == nil && r.OperationIndex != nil {
			// An image without "batch" (the wallet index's projection): the copy is all there is.
			// A whole item derives it from "batch" (transfer.OperationIndexOf), so it reads back
			// as written.
			i := *r.OperationIndex
			rec.Result.OperationIndex = &i
		}
	}
	if rec.Status == transfer.StatusQueued && rec.NotBefore == 0 {
		// A queued item holds a result only as the failure its notBefore waits out. One without
		// notBefore was written back by a build older than it (a rollback, or a deploy under way:
		// it keeps the result it read and drops the attribute it does not know): it runs at once,
		// and read without the result it is an item every writer may write again (marshalRecord).
		rec.Result = nil
	}
	if b := it.Batch; b != nil {
		rec.Batch = &transfer.BatchRef{Index: b.Index, Size: b.Size}
	}
	if a := it.Audit; a != nil {
		rec.Audit = &transfer.Audit{Action: a.Action, Operator: a.Operator, RequestID: a.RequestID, Reason: a.Reason,
			Forced: a.Forced, At: fromEpochMillis(a.At)}
	}
	for _, c := range it.Charges {
		rec.Charges = append(rec.Charges, transfer.Charge{Counter: c.Counter, Scope: transfer.LimitScope(c.Scope), Asset: c.Asset,
			Day: c.Day, Stroops: c.Stroops, Cap: c.Cap})
	}
	return rec, nil
}

func (r *resultItem) empty() bool {
	return r.TransactionHash == "" && r.Ledger == 0 && r.Code == "" && r.HTTPStatus == 0 &&
		r.Detail == "" && len(r.ResultCodes) == 0 && r.FeeChargedStroops == 0
}

// storedTimes returns rec with its times as they read back: millisecond precision, UTC.
func storedTimes(rec transfer.Record) transfer.Record {
	rec.LeaseExpiresAt = fromEpochMillis(epochMillis(rec.LeaseExpiresAt))
	rec.CreatedAt = fromEpochMillis(epochMillis(rec.CreatedAt))
	rec.UpdatedAt = fromEpochMillis(epochMillis(rec.UpdatedAt))
	if rec.Audit != nil {
		a := *rec.Audit
		a.At = fromEpochMillis(epochMillis(a.At))
		rec.Audit = &a
	}
	return rec
}

// epochMillis is t in epoch milliseconds, 0 for the zero time.
func epochMillis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// fromEpochMillis is the UTC time of ms epoch milliseconds, the zero time for 0.
func fromEpochMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}
