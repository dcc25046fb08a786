package transfer

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The pieces of batches (doc.go, "Batches") that the stores and the judges share: the reference
// an item holds to its batch, the batch's persisted envelope, the store's writes over many items,
// and the rule that judges one key by its own operation. Nothing on the one-transfer path uses
// them: an item without a BatchRef is judged, written and stored as before.

// MaxBatchOperations is the most operations one batch's transaction holds: stellar-xdr's
// MAX_OPS_PER_TX (Stellar-transaction.x: `Operation operations<MAX_OPS_PER_TX>`), which is also the
// most items one TransactWriteItems writes (the DynamoDB API Reference, TransactWriteItems), so one
// transaction attaches a batch's envelope to every key.
const MaxBatchOperations = 100

// BatchPrefix starts the store key of a batch's envelope item: "batch:<inner hash>" (BatchKey).
const BatchPrefix = "batch:"

// BatchKey is the store key of the batch envelope whose inner hash is innerHash (hex).
func BatchKey(innerHash string) string { return BatchPrefix + innerHash }

// BatchRef is held by the item of a key whose envelope is a batch's: the key's operation in the
// batch's transaction. The item's Envelope then holds the batch's hashes, maxTime, submitted
// ledger and channel but no XDR (the batch's item holds it once: BatchEnvelope).
type BatchRef struct {
	// Index is the key's operation index in the transaction, 0-based, below Size.
	Index int
	// Size is the batch's number of operations, 1 to MaxBatchOperations.
	Size int
}

// CheckBatchRef reports what makes rec's batch reference unfit to store: a BatchRef on an item
// without an envelope (a queued or cancelled item holds neither: Requeued and Cancelled drop it)
// or on a synchronous item (only the submitter batches), an index outside 0 to Size-1, or a size
// outside 1 to MaxBatchOperations. nil when rec has none.
func CheckBatchRef(rec Record) error {
	b := rec.Batch
	switch {
	case b == nil:
		return nil
	case rec.Envelope == nil:
		return fmt.Errorf("record %q: a batch reference without an envelope", rec.StoreKey)
	case !rec.Async:
		return fmt.Errorf("record %q: a batch reference on a synchronous item", rec.StoreKey)
	case b.Size < 1 || b.Size > MaxBatchOperations || b.Index < 0 || b.Index >= b.Size:
		return fmt.Errorf("record %q: operation %d of a batch of %d", rec.StoreKey, b.Index, b.Size)
	}
	return nil
}

// BatchOp is one operation of a batch: the key it pays and the incarnation it was built for.
type BatchOp struct {
	StoreKey string
	ClaimID  string
}

// BatchEnvelope is a batch's persisted envelope, the item BatchKey(Envelope.InnerHash): written
// once, before any key's item names it, and read by whoever re-sends or judges a batched key (the
// submitter, a take-over, an inline reconciler, the sweep, an operator).
type BatchEnvelope struct {
	// Envelope is the signed fee bump (XDR) with its hashes, maxTime, submitted ledger, channel
	// and fee. OuterHashes grows when the batch is replaced by fee.
	Envelope Envelope
	// Ops are the batch's operations in the transaction's order: Ops[i] is operation i.
	Ops []BatchOp
	// Version is 1 when written; a replacement by fee writes the next, conditional on the one it
	// read.
	Version   int64
	CreatedAt time.Time
	// ExpiresAt is the item's TTL, epoch seconds (0: never). A batch is written without one and
	// keeps none while any key names it unsettled (in_flight or in_doubt: such a key never
	// expires and is judged from this item); ReleaseBatch sets it once none does (doc.go,
	// "Batches", "How long a batch item lives").
	ExpiresAt int64
}

// Index returns the operation index of storeKey in b, or -1.
func (b BatchEnvelope) Index(storeKey string) int {
	return slices.IndexFunc(b.Ops, func(op BatchOp) bool { return op.StoreKey == storeKey })
}

// Validate reports what makes b unfit to store: no inner hash or XDR, no operations or more than
// MaxBatchOperations, an operation without a store key or claim ID, a store key twice, or a
// version below 1. Errors name the first fault.
func (b BatchEnvelope) Validate() error {
	switch {
	case b.Envelope.InnerHash == "":
		return errors.New("transfer: batch without an inner hash")
	case b.Envelope.XDR == "":
		return fmt.Errorf("transfer: batch %s without its signed XDR", b.Envelope.InnerHash)
	case len(b.Ops) == 0 || len(b.Ops) > MaxBatchOperations:
		return fmt.Errorf("transfer: batch %s has %d operations, want 1 to %d", b.Envelope.InnerHash, len(b.Ops), MaxBatchOperations)
	case b.Version < 1:
		return fmt.Errorf("transfer: batch %s has version %d", b.Envelope.InnerHash, b.Version)
	}
	seen := make(map[string]bool, len(b.Ops))
	for i, op := range b.Ops {
		if op.StoreKey == "" || op.ClaimID == "" {
			return fmt.Errorf("transfer: batch %s: operation %d names no key or claim", b.Envelope.InnerHash, i)
		}
		if seen[op.StoreKey] {
			return fmt.Errorf("transfer: batch %s: key %s has two operations", b.Envelope.InnerHash, op.StoreKey)
		}
		seen[op.StoreKey] = true
	}
	return nil
}

// BatchMinTime is the minTime of a batch's envelope built for the claims claimIDs, in operation
// order: ClaimMinTime of their IDs joined, so two batches of different claims never sign
// byte-identical envelopes (Terms.MinTime says why that matters), and a batch of one claim has
// the minTime that claim's own envelope would.
func BatchMinTime(claimIDs []string) time.Time {
	if len(claimIDs) == 1 {
		return ClaimMinTime(claimIDs[0])
	}
	sum := sha256.Sum256([]byte(strings.Join(claimIDs, ",")))
	n := int64(binary.BigEndian.Uint32(sum[:4]) >> 2)
	return time.Unix(1+n, 0).UTC()
}

// ItemWrite is one item's write in a transaction over many items: Next in place of the stored
// item, if the stored item matches Cond (Condition.Matches).
type ItemWrite struct {
	Next Record
	Cond Condition
}

// BatchConditionError is a transaction over many items that wrote nothing because the conditions
// of the items in Failed (store keys) did not hold. It is ErrConditionFailed (errors.Is).
type BatchConditionError struct {
	Failed []string
}

func (e *BatchConditionError) Error() string {
	return fmt.Sprintf("transfer: conditional write of %d items failed on %s", len(e.Failed), strings.Join(e.Failed, ", "))
}

// Is makes a BatchConditionError match ErrConditionFailed.
func (e *BatchConditionError) Is(target error) bool { return target == ErrConditionFailed }

// BatchStore is what a Store offers batches beside Store (internal/dynamo, transfertest). The
// one-transfer path never calls it.
type BatchStore interface {
	ItemWriter
	// PutBatch writes b if no item holds BatchKey(b.Envelope.InnerHash) (b must Validate).
	// Errors: ErrConditionFailed (wrapped) when one does (a write of its own whose answer was
	// lost, or another batch of the same hash: read it with GetBatch and compare).
	PutBatch(ctx context.Context, b BatchEnvelope) error
	// GetBatch reads the batch whose inner hash is innerHash, consistently. Errors: ErrNotFound.
	GetBatch(ctx context.Context, innerHash string) (BatchEnvelope, error)
	// ReplaceAll writes every w.Next in one transaction, all or nothing, each if its stored item
	// matches w.Cond (1 to MaxBatchOperations writes, one per store key). Errors:
	// *BatchConditionError naming the items whose condition failed (nothing was written), or the
	// store's errors (the transaction may then have applied or not).
	ReplaceAll(ctx context.Context, writes []ItemWrite) error
	// ReplaceBatch writes next's envelope (XDR, outer hash, every outer hash, fee) and version to
	// the batch item of next.Envelope.InnerHash, if that item holds version next.Version-1 (a
	// replacement by fee: doc.go, "Batches"); the operations, maxTime, channel and TTL are kept.
	// Errors: ErrConditionFailed (wrapped) when it holds another version or none (another writer
	// replaced it, or this write applied and its answer was lost: ReplaceBatchItem reads it back),
	// the store's errors otherwise (the write may then have applied or not).
	ReplaceBatch(ctx context.Context, next BatchEnvelope) error
	// ExpireBatch sets the TTL (ExpiresAt, epoch seconds) of the batch whose inner hash is
	// innerHash, never creating one. Errors: ErrNotFound (wrapped) when no batch item holds it.
	ExpireBatch(ctx context.Context, innerHash string, expiresAt int64) error
}

// ManyReader is what a Store may offer beside Store to read many items in one request
// (internal/dynamo: BatchGetItem; transfertest). Optional: RunQueuedBatch reads its messages'
// items with it when the Store has it, else with one Get per item.
type ManyReader interface {
	// GetMany reads the items at storeKeys, each consistently as Get does (not one snapshot: each
	// item as it was when the store read it), in as few requests as the store can (internal/dynamo:
	// one BatchGetItem per 100 keys). It returns each item found by its store key; a key that holds
	// no item is absent from the map, never an error, and a key given twice is read once. Errors:
	// the store's; the map then holds the items read before it failed (perhaps none), and a key
	// absent from it may hold an item (read it with Get).
	GetMany(ctx context.Context, storeKeys []string) (map[string]Record, error)
}

// BatchKeep is how long a batch item outlives the replay window (Settings.KeyTTL) of its last key
// settled: ReleaseBatch sets its TTL to now + KeyTTL + BatchKeep.
const BatchKeep = 24 * time.Hour

// unsettledIn reports whether rec names b's envelope in a state a judge must still decide
// (in_flight or in_doubt under the incarnation op): such a key reads b's item when judged.
func unsettledIn(rec Record, b BatchEnvelope, op BatchOp) bool {
	return rec.ClaimID == op.ClaimID && rec.Envelope != nil && rec.Envelope.InnerHash == b.Envelope.InnerHash &&
		(rec.Status == StatusInFlight || rec.Status == StatusInDoubt)
}

// ReleaseBatch starts the TTL of b's item (now + ttl + BatchKeep, ttl the keys' Settings.KeyTTL)
// once no key names b unsettled (doc.go, "Batches", "How long a batch item lives"). written are
// the store keys the caller has just written out of that state (settled, rejected, requeued),
// which it does not read again; every other operation's item is read consistently, in order from
// the one after the last written (around the batch), and the first that is still in_flight or
// in_doubt under its operation's incarnation with b's inner hash keeps b without a TTL. A b read with a TTL already is left as is. Sound under concurrent
// judges: each reads after its own write, so the last of them to write sees every other key
// written, and no key enters that state again once out of it (only the attach, before any judge,
// puts it there). It reports whether it set the TTL. Errors: the store's (b keeps no TTL then: it
// outlives its keys, which is safe).
func ReleaseBatch(ctx context.Context, s BatchStore, b BatchEnvelope, written []string, now time.Time, ttl time.Duration) (bool, error) {
	if b.ExpiresAt != 0 {
		return false, nil
	}
	// From the operation after the last one written, around: judges that go through a batch's
	// keys in order (the sweep) find the next one still unsettled at its first read.
	start := 0
	for i, op := range b.Ops {
		if slices.Contains(written, op.StoreKey) {
			start = i + 1
		}
	}
	for j := range b.Ops {
		op := b.Ops[(start+j)%len(b.Ops)]
		if slices.Contains(written, op.StoreKey) {
			continue
		}
		rec, err := s.Get(ctx, op.StoreKey)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return false, err
		case unsettledIn(rec, b, op):
			return false, nil
		}
	}
	if err := s.ExpireBatch(ctx, b.Envelope.InnerHash, now.Add(ttl+BatchKeep).Unix()); err != nil && !errors.Is(err, ErrNotFound) {
		return false, err
	}
	return true, nil
}

// ReplaceAllItems writes next[i] in place of cur[i], the items as the caller read them, in one
// transaction on the conditions Expect(cur[i]) (BatchStore.ReplaceAll). As ReplaceItem does, it
// recognises a transaction of its own whose answer was lost: on any error it reads every item
// back, and if each is next[i] as written (sameWrite) the transaction applied. A transaction is all
// or nothing, so a read-back that finds some written and some not means another writer came after
// it, and the error stands. A retry the store could not tell from a new request fails its
// conditions against the items it wrote itself, which is why a *BatchConditionError is read back
// too. Each next[i] must keep cur[i]'s ClaimID and have Version cur[i].Version+1. Errors:
// *BatchConditionError, or the store's errors (the transaction may then have applied or not).
func ReplaceAllItems(ctx context.Context, s BatchStore, cur, next []Record) error {
	if len(cur) != len(next) {
		return fmt.Errorf("transfer: ReplaceAllItems with %d items read and %d to write", len(cur), len(next))
	}
	writes := make([]ItemWrite, len(cur))
	for i := range cur {
		if cur[i].StoreKey != next[i].StoreKey {
			return fmt.Errorf("transfer: ReplaceAllItems: item %d read %s and writes %s", i, cur[i].StoreKey, next[i].StoreKey)
		}
		writes[i] = ItemWrite{Next: next[i], Cond: Expect(cur[i])}
	}
	err := s.ReplaceAll(ctx, writes)
	if err == nil {
		return nil
	}
	for _, n := range next {
		stored, gerr := s.Get(ctx, n.StoreKey)
		if gerr != nil || !sameWrite(stored, n) {
			return err
		}
	}
	return nil
}

// OperationVerdict is what the ledger's answer for a batch means for one of its keys (doc.go,
// "Batches", "Outcomes, per key").
type OperationVerdict string

const (
	// VerdictUndecided: the batch is neither included nor proven dead; nothing is written.
	VerdictUndecided OperationVerdict = "undecided"
	// VerdictLanded: the batch landed with SUCCESS: the key is replayable.
	VerdictLanded OperationVerdict = "landed"
	// VerdictRejected: the batch failed on this key's own operation, for a reason of its own (its
	// destination's, as a rule): the key is a stored rejection.
	VerdictRejected OperationVerdict = "rejected"
	// VerdictRequeue: the batch failed, not on this key's own operation or on the paying side, or
	// is proven dead: nothing of it moved and it can never land, so the key is queued again.
	VerdictRequeue OperationVerdict = "requeue"
)

// JudgeOperation judges the key whose operation is index in env's batch from lk, the ledger's
// answer for the batch's hashes. A FAILED batch follows a single transfer's rule (SourceShortfall;
// doc.go, "Proof rules") for every code: a key is queued again with a new envelope only when the
// included transaction consumed its sequence number and moved nothing, so that nothing holding its
// operation can land any more. lk.ResultCodes is the transaction's code, then one code per
// operation in order (internal/stellar's ResultCodes, as Horizon lists them; under a fee bump the
// inner transaction's):
//
//   - tx_failed: stellar-core's TransactionFrame::applyOperations ran, after commonPreApply
//     consumed the sequence number, and rolled every operation back, giving each a result. This
//     operation's own code decides: VerdictRejected when it faults the destination or the request
//     (clientSideOpCode: op_no_trust, op_line_full and the other destination-side codes,
//     op_no_issuer), as a single transfer's FAILED would store it; any other (op_success: another
//     operation failed; a source-side or service-side code such as op_underfunded, op_bad_auth,
//     op_no_source_account; an unknown one; no result for this operation) is VerdictRequeue.
//   - A transaction-level code a single transfer releases (SourceShortfall: tx_insufficient_balance
//     and the service-side codes tx_bad_auth, tx_bad_auth_extra, tx_bad_minseq_age_or_gap,
//     tx_bad_sponsorship, tx_internal_error, all set after the sequence check): VerdictRequeue
//     for every key.
//   - Any other transaction-level code (tx_too_early, tx_too_late, tx_bad_seq, tx_no_account,
//     tx_insufficient_fee, tx_malformed, tx_missing_operation, an unknown one, or no code): set
//     before the sequence check (commonValidPreSeqNum, isBadSeq), so nothing proves the envelope
//     cannot apply later, and a single transfer stores it as the rejection rather than release
//     the key: VerdictRejected for every key, naming the transaction. Requeued, the key would be
//     paid by a new envelope while this one could still land.
//
// shortfall is batchShortfall of the batch (which pages, once for the batch), "" when the paying
// side did not fail. A NOT_FOUND that ProvenDead proves is VerdictRequeue; anything else is
// VerdictUndecided. A batch refused on its first send is not this rule's to judge: its keys are
// requeued together (doc.go, "Batches").
func JudgeOperation(env Envelope, lk Lookup, index int) (v OperationVerdict, shortfall string) {
	switch lk.Status {
	case LookupSuccess:
		return VerdictLanded, ""
	case LookupFailed:
		shortfall = batchShortfall(env, lk)
		switch {
		case appliedOperations(lk):
			if index >= 0 && index+1 < len(lk.ResultCodes) && clientSideOpCode(lk.ResultCodes[index+1]) {
				return VerdictRejected, shortfall
			}
			return VerdictRequeue, shortfall
		case SourceShortfall(env, lk) != "":
			return VerdictRequeue, shortfall
		}
		return VerdictRejected, ""
	}
	if ProvenDead(env, lk) {
		return VerdictRequeue, ""
	}
	return VerdictUndecided, ""
}

// appliedOperations reports whether lk, a FAILED answer, failed in applyOperations (tx_failed):
// the sequence number was consumed and every operation has a result.
func appliedOperations(lk Lookup) bool {
	return len(lk.ResultCodes) > 0 && lk.ResultCodes[0] == "tx_failed"
}

// batchShortfall is the service-side failure of a FAILED batch that pages, as SourceShortfall is
// a single transfer's: for tx_failed, VAULT_UNDERFUNDED when an operation says the vault could not
// pay (vaultSideOpCodes); else SERVICE_SIDE_FAILURE when an operation failed for a code that is
// neither the destination's nor the request's (clientSideOpCode) nor op_success, or when no
// operation says why the transaction failed; else "" (every failing operation is its own key's
// rejection). Any other code: SourceShortfall's answer. It differs from SourceShortfall only where
// a batch holds several keys' operations: a neighbour's destination-side code does not hide
// another operation's op_bad_auth.
func batchShortfall(env Envelope, lk Lookup) string {
	if lk.Status != LookupFailed || !appliedOperations(lk) {
		return SourceShortfall(env, lk)
	}
	ops := lk.ResultCodes[1:]
	clientSide := false
	for _, op := range ops {
		if slices.Contains(vaultSideOpCodes, op) {
			return CodeVaultUnderfunded
		}
	}
	for _, op := range ops {
		switch {
		case clientSideOpCode(op):
			clientSide = true
		case op != "op_success":
			return CodeServiceSideFailure
		}
	}
	if !clientSide {
		return CodeServiceSideFailure
	}
	return ""
}

// destinationSideOpCodes are the payment results (Horizon's spelling) that fault the destination,
// whatever the source holds: stellar-core's PathPaymentStrictReceiveOpFrame::doApply
// (op_no_destination: the account does not exist) and PathPaymentOpFrameBase::updateDestBalance
// (op_no_trust, op_not_authorized, op_line_full), which a payment runs before it debits its source.
var destinationSideOpCodes = []string{"op_no_destination", "op_no_trust", "op_not_authorized", "op_line_full"}

// DestinationSide reports whether code, one operation's result code, faults its destination: what
// the check of destinations before a batch is built looks for (doc.go, "Batches").
func DestinationSide(code string) bool { return slices.Contains(destinationSideOpCodes, code) }

// BatchAttached is rec, an item the submitter took (in_flight under its lease), with its batch's
// envelope attached as operation ref of it: the envelope's hashes, maxTime, submitted ledger,
// channel and fee without the XDR (the batch's item holds it once), the next Version. It is written
// for every key of the batch together (ReplaceAllItems) before the envelope is sent.
func BatchAttached(rec Record, env Envelope, ref BatchRef, now time.Time) Record {
	next := rec
	env.XDR = ""
	env.OuterHashes = slices.Clone(env.OuterHashes)
	next.Envelope = &env
	next.Batch = &ref
	next.Version++
	next.UpdatedAt = now
	return next
}

// RequeueRefused frees held, the items of one batch as this invocation attached them, once the
// batch's first send was refused (RefusedBeforeInclusion) or no send ever left. That proves only
// that this invocation's sends did not enter the network: a take-over of any key of the batch sends
// the same envelope again, and a key's own condition cannot see another key taken over. So the keys
// are requeued together, in one transaction conditional on every item as attached (none taken
// over, so nobody else can have sent it; once it applied no item names the envelope, so nobody
// ever will). If a condition fails, some key was taken over and the envelope may yet land: each key
// still as attached is parked in_doubt with failing (InDoubtRecord), to be settled by the batch's
// proof. It reports whether the keys were requeued. Errors: the store's, when the transaction's
// fate is unknown (nothing is parked then: the items stay in_flight under this lease, whose expiry
// hands them to a take-over or the sweep), or when parking a key failed.
func RequeueRefused(ctx context.Context, s BatchStore, held []Record, failing string, now time.Time) (bool, error) {
	return RequeueRefusedAfter(ctx, s, held, failing, nil, now)
}

// RequeueRefusedAfter is RequeueRefused for keys answered why: when why pages (the first send
// refused as the paying or the service's side: txINSUFFICIENT_BALANCE, txBAD_AUTH), each key is
// requeued held back for its Retry-After (RequeuedAfter), as one transfer's refusal is.
func RequeueRefusedAfter(ctx context.Context, s BatchStore, held []Record, failing string, why error, now time.Time) (bool, error) {
	next := make([]Record, len(held))
	for i, rec := range held {
		next[i] = RequeuedAfter(rec, now, why)
	}
	err := ReplaceAllItems(ctx, s, held, next)
	if err == nil {
		return true, nil
	}
	if _, ok := errors.AsType[*BatchConditionError](err); !ok {
		return false, err
	}
	var errs []error
	for _, rec := range held {
		if perr := ReplaceItem(ctx, s, rec, InDoubtRecord(rec, failing, now)); perr != nil && !isConflict(perr) {
			errs = append(errs, perr)
		}
	}
	return false, errors.Join(errs...)
}

// FormBatches groups items, the queued items of one submitter's event in the order of its
// messages, into batches of at most size (1 to MaxBatchOperations; outside that, 1) as doc.go's
// "Batches" forms them: an item whose request carries a memo (a transaction has one) or that
// batchable refuses (a Soroban asset: one operation per transaction) runs alone, and a batch holds
// at most one payment per (destination account, asset), the account being the wallet's scope, so
// an M... wallet and its G... account share one. An item that would be a second payment to a
// destination already in every open batch starts a new one. A batch left with one item runs
// alone too, on the one-transfer path. Every item comes back exactly once, a batch's in the order
// given.
func FormBatches(items []Record, size int, batchable func(Request) bool) (batches [][]Record, alone []Record) {
	batches, alone, _ = formBatches(items, size, 0, func(rec Record) bool { return batchable == nil || batchable(rec.Request) })
	return batches, alone
}

// formBatches is FormBatches for at most most transactions (0 or less: no bound), batchable
// judging the item: each batch opened and each item that runs alone is one, in the items' order,
// since each pays its own transaction from its own source; an item that would take one more goes
// to over instead, in order, neither in a batch nor alone.
func formBatches(items []Record, size, most int, batchable func(Record) bool) (batches [][]Record, alone, over []Record) {
	if size < 1 || size > MaxBatchOperations {
		size = 1
	}
	type dest struct{ account, asset string }
	var open [][]Record
	var taken []map[dest]bool
	full := func() bool { return most > 0 && len(open)+len(alone) >= most }
	for _, rec := range items {
		if size == 1 || !rec.Request.Memo.IsZero() || !batchable(rec) {
			if full() {
				over = append(over, rec)
				continue
			}
			alone = append(alone, rec)
			continue
		}
		d := dest{rec.Request.Wallet().Scope(), rec.Request.Asset}
		placed := false
		for i := range open {
			if len(open[i]) < size && !taken[i][d] {
				open[i] = append(open[i], rec)
				taken[i][d] = true
				placed = true
				break
			}
		}
		switch {
		case placed:
		case full():
			over = append(over, rec)
		default:
			open = append(open, []Record{rec})
			taken = append(taken, map[dest]bool{d: true})
		}
	}
	for _, b := range open {
		if len(b) == 1 {
			alone = append(alone, b[0])
			continue
		}
		batches = append(batches, b)
	}
	return batches, alone, over
}

// ReplaceBatchItem writes next in place of cur, the batch item as the caller read it
// (BatchStore.ReplaceBatch, conditional on cur.Version; next must have the same inner hash and
// Version cur.Version+1). As ReplaceItem does for a key's item, on any error the batch item is
// read back, and if it holds next's version with next's outer hash, XDR and every outer hash the
// write applied (its answer was lost). Errors: ErrConditionFailed (wrapped) when another writer
// changed it first, or the store's errors (the write may then have applied or not).
func ReplaceBatchItem(ctx context.Context, s BatchStore, cur, next BatchEnvelope) error {
	if next.Envelope.InnerHash != cur.Envelope.InnerHash || next.Version != cur.Version+1 {
		return fmt.Errorf("transfer: replacing batch %s v%d with %s v%d: not the next version of the same batch",
			cur.Envelope.InnerHash, cur.Version, next.Envelope.InnerHash, next.Version)
	}
	err := s.ReplaceBatch(ctx, next)
	if err == nil {
		return nil
	}
	got, gerr := s.GetBatch(ctx, next.Envelope.InnerHash)
	if gerr == nil && got.Version == next.Version && got.Envelope.OuterHash == next.Envelope.OuterHash &&
		got.Envelope.XDR == next.Envelope.XDR && slices.Equal(got.Envelope.Outers(), next.Envelope.Outers()) {
		return nil
	}
	return err
}
