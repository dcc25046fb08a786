package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Judging a batched key (doc.go, "Batches", "Outcomes, per key"): every judge (the submitter, a
// take-over, an inline reconciler, the sweep, an operator's discard) reads the batch item, looks
// the batch's hashes up, and writes this key alone, conditional on its item as read.

// ErrBatchMismatch marks a batched item whose batch item does not hold its operation: the batch
// item is missing, or its operation at the item's index names another key or incarnation, or
// another inner hash. Nothing is judged or written: an item that cannot be tied to its operation
// is left for an operator.
var ErrBatchMismatch = errors.New("transfer: the batch item does not hold this key's operation")

// BatchReader reads a batch's persisted envelope (BatchStore.GetBatch); the read side of a store
// that keeps batches, all a judge outside the submitter needs (internal/reconcile).
type BatchReader interface {
	GetBatch(ctx context.Context, innerHash string) (BatchEnvelope, error)
}

// BatchOf reads the batch whose envelope holds rec's operation (rec.Batch set, rec.Envelope its
// hashes) from s (a BatchReader; any other store keeps no batches) and checks that its operation rec.Batch.Index is rec's key and incarnation and
// its inner hash rec's. Errors: ErrBatchMismatch (wrapped) when it does not, or when no batch item
// holds that hash; the store's errors otherwise (never ErrNotFound, which callers read as "no
// such transfer").
func BatchOf(ctx context.Context, s any, rec Record) (BatchEnvelope, error) {
	if rec.Batch == nil || rec.Envelope == nil {
		return BatchEnvelope{}, fmt.Errorf("%w: %s holds no batch reference", ErrBatchMismatch, rec.StoreKey)
	}
	bs, ok := s.(BatchReader)
	if !ok {
		return BatchEnvelope{}, fmt.Errorf("%w: %s is batched and the store keeps no batches", ErrBatchMismatch, rec.StoreKey)
	}
	b, err := bs.GetBatch(ctx, rec.Envelope.InnerHash)
	switch {
	case errors.Is(err, ErrNotFound):
		return BatchEnvelope{}, fmt.Errorf("%w: no batch item %s for %s", ErrBatchMismatch, rec.Envelope.InnerHash, rec.StoreKey)
	case err != nil:
		return BatchEnvelope{}, fmt.Errorf("transfer: reading batch %s: %v", rec.Envelope.InnerHash, err)
	}
	i := rec.Batch.Index
	if b.Envelope.InnerHash != rec.Envelope.InnerHash || i < 0 || i >= len(b.Ops) ||
		b.Ops[i].StoreKey != rec.StoreKey || b.Ops[i].ClaimID != rec.ClaimID {
		return BatchEnvelope{}, fmt.Errorf("%w: batch %s, operation %d, key %s", ErrBatchMismatch, rec.Envelope.InnerHash, i, rec.StoreKey)
	}
	return b, nil
}

// batchSettled is rec, a batched key whose batch the ledger included, settled by its own
// operation (v VerdictLanded or VerdictRejected): replayable naming the inner hash and ledger
// (the item keeps its BatchRef, the operation's index), or rejected with the transaction's code
// and this operation's own code, naming the transaction and the index.
//
// The fee the ledger charged is the whole transaction's; each key's result holds its share
// (FeeShare), so the events and records of a batch's keys sum to what the ledger charged.
func batchSettled(rec Record, lk Lookup, v OperationVerdict, now time.Time, ttl time.Duration) Record {
	lk.FeeChargedStroops = FeeShare(lk.FeeChargedStroops, rec.Batch.Index, rec.Batch.Size)
	if v == VerdictLanded {
		lk.Status = LookupSuccess
		return settled(rec, lk, now, ttl)
	}
	lk.Status = LookupFailed
	i := rec.Batch.Index
	if !appliedOperations(lk) {
		// A transaction-level code: no operation ran (JudgeOperation).
		next := settled(rec, lk, now, ttl)
		next.Result.Detail = fmt.Sprintf("the transaction was included in ledger %d and failed before its operations ran (this transfer's is operation %d)", lk.Ledger, i)
		return next
	}
	codes := []string{lk.ResultCodes[0]}
	if i+1 < len(lk.ResultCodes) {
		codes = append(codes, lk.ResultCodes[i+1])
	}
	lk.ResultCodes = codes
	next := settled(rec, lk, now, ttl)
	next.Result.Detail = fmt.Sprintf("the transaction was included in ledger %d and its operation %d (this transfer's) failed", lk.Ledger, i)
	if len(codes) == 1 { // a transaction-level code (JudgeOperation): no operation ran
		next.Result.Detail = fmt.Sprintf("the transaction was included in ledger %d and failed before its operations ran (%s)", lk.Ledger, codes[0])
	}
	return next
}

// FeeShare is operation index's share of fee (stroops), the fee charged for a batch of size
// operations: fee/size each, operation 0 carrying the remainder, so the shares sum to fee.
func FeeShare(fee int64, index, size int) int64 {
	if size < 1 {
		return fee
	}
	share := fee / int64(size)
	if index == 0 {
		share += fee % int64(size)
	}
	return share
}

// pagesShortfall reports whether the judge of operation index of a batch that failed on the
// service's side (lk FAILED, batchShortfall set) pages it: the first key the failure requeues (the
// first operation whose code is not its own key's rejection), or operation 0 when the failure
// carries no operation results (a transaction-level code). So the submitter, which judges every
// key, pages once per batch, and a later judge of the other keys does not.
func pagesShortfall(lk Lookup, index int) bool {
	if appliedOperations(lk) {
		for i := 1; i < len(lk.ResultCodes); i++ {
			if !clientSideOpCode(lk.ResultCodes[i]) {
				return index == i-1
			}
		}
		return index == len(lk.ResultCodes)-1 // the first operation without a result
	}
	return index == 0
}

// judgeBatched writes what lk, the ledger's answer for b's hashes, means for rec, one key of b
// (JudgeOperation), conditional on rec as read: landed -> replayable; its own failure -> rejected;
// a neighbour's failure, the paying side's or a proof of death -> requeued; undecided -> rec as
// it stands (the caller parks it or leaves it). Ledger.Done is called once the batch is decided.
// Errors: the store's (ErrConditionFailed when another judge wrote first).
func (o *Orchestrator) judgeBatched(ctx context.Context, rec Record, b BatchEnvelope, lk Lookup, ttl time.Duration) (Settlement, OperationVerdict, error) {
	v, shortfall := JudgeOperation(b.Envelope, lk, rec.Batch.Index)
	now := o.Clock.Now()
	var s Settlement
	switch v {
	case VerdictUndecided:
		return Settlement{Resolution: Unresolved, Lookup: &lk}, v, nil
	case VerdictLanded, VerdictRejected:
		next := batchSettled(rec, lk, v, now, ttl)
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			return Settlement{Lookup: &lk}, v, err
		}
		s = Settlement{Resolution: ResolvedLanded, Record: next, Lookup: &lk}
		if v == VerdictRejected {
			s.Resolution = ResolvedFailed
		}
	case VerdictRequeue:
		next := Requeued(rec, now)
		if shortfall != "" {
			next = RequeuedAfter(rec, now, shortfallAnswer(shortfall, lk)) // held back: doc.go, "The item", requeue
		}
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			return Settlement{Lookup: &lk}, v, err
		}
		s = Settlement{Resolution: ResolvedRequeued, Record: next, Lookup: &lk, Shortfall: shortfall}
		if shortfall != "" && pagesShortfall(lk, rec.Batch.Index) {
			o.pageUnderfunded(ctx, rec, shortfall, fmt.Sprintf("batch %s included FAILED in ledger %d %v", b.Envelope.InnerHash, lk.Ledger, lk.ResultCodes))
			// The alarm reads transfer_orchestration_failure_total, never the log line: Settle
			// counts this page for the sweep and a discard (settle.go), every other caller
			// through the key's own answer.
		}
	}
	o.Ledger.Done(ctx, b.Envelope)
	return s, v, nil
}

// settleBatched is Settle of rec, a batched key (rec.Batch set): judged by its own operation from
// the batch item's envelope (its hashes, every outer one included), conditional on rec as read.
// An expired claim the ledger cannot judge yet is parked in_doubt, and so is one whose batch item
// does not hold its operation (its Settlement ResolvedInDoubt with the error ErrBatchMismatch, so
// the sweep counts and logs it): nothing is sent or judged, and the key is left for an operator
// in the in-doubt list, which an item left in_flight never reaches (list and resolve read only
// in_doubt items).
func (o *Orchestrator) settleBatched(ctx context.Context, rec Record) (Settlement, error) {
	b, err := BatchOf(ctx, o.Store, rec)
	if errors.Is(err, ErrBatchMismatch) && rec.Status == StatusInFlight {
		o.log().ErrorContext(ctx, "an expired batched claim cannot be tied to its batch; parked in doubt for an operator", "storeKey", rec.StoreKey, "err", err)
		next := InDoubtRecord(rec, CodeLeaseExpired, o.Clock.Now())
		if werr := ReplaceItem(ctx, o.Store, rec, next); werr != nil {
			return Settlement{}, werr
		}
		return Settlement{Resolution: ResolvedInDoubt, Record: next}, err
	}
	if err != nil {
		return Settlement{}, err
	}
	lk, err := o.lookup(ctx, b.Envelope)
	if err != nil {
		return Settlement{}, err
	}
	s, v, err := o.judgeBatched(ctx, rec, b, lk, o.settings().KeyTTL)
	if err != nil || v != VerdictUndecided {
		if err == nil {
			o.releaseJudged(ctx, b, rec.StoreKey)
		}
		return s, err
	}
	if rec.Status == StatusInFlight {
		next := InDoubtRecord(rec, CodeLeaseExpired, o.Clock.Now())
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			return Settlement{Lookup: &lk}, err
		}
		return Settlement{Resolution: ResolvedInDoubt, Record: next, Lookup: &lk}, nil
	}
	return Settlement{Resolution: Unresolved, Lookup: &lk}, nil
}

// releaseJudged is releaseBatch of b once one judge decided its key storeKey.
func (o *Orchestrator) releaseJudged(ctx context.Context, b BatchEnvelope, storeKey string) {
	if bs, ok := o.Store.(BatchStore); ok {
		o.releaseBatch(ctx, bs, b, []string{storeKey}, o.settings().KeyTTL)
	}
}

// batchFate is how awaitBatch left a batch's envelope: exactly one of lk, refused, neverSent,
// failing and died is set.
type batchFate struct {
	// lk: the ledger decided (SUCCESS or FAILED), or proved the envelope dead.
	lk *Lookup
	// refused: the first send was refused before inclusion (RefusedBeforeInclusion).
	refused *SendResult
	// neverSent: the budget ended and no send ever left.
	neverSent bool
	// failing: the budget ended with the envelope undecided; its failing code.
	failing string
	// died is a hook's error (a process death at StepReplacingBatch): nothing more is written.
	died error
	// batch is the batch item as the await last wrote or read it: its envelope (a replacement by
	// fee, with every outer hash) is the one judged.
	batch BatchEnvelope
}

// awaitBatch sends b's envelope (from its batch item) and awaits the ledger as submit does for one
// envelope: re-sent, the same one, two ledgers after its last send; a failed send that may have
// left makes every later refusal prove nothing. maybeDelivered says an earlier send may have
// reached the network (a take-over). It writes no key: the caller judges each one.
//
// An envelope the network queued and has not included ReplaceAfterLedgers after its first send,
// while its lane is surge priced, is replaced by fee as submit replaces one (replaceBatchByFee):
// the same inner transaction in a new fee bump, whose outer hash is on the batch item (a
// conditional write on its version) before it is sent (doc.go, "Batches"). rec is the key the
// await runs for (hooks, pages).
func (o *Orchestrator) awaitBatch(ctx context.Context, a *attempt, b BatchEnvelope, rec Record, maybeDelivered bool) batchFate {
	env := b.Envelope
	failing := CodeTimeout
	needSend := true
	w := o.newLedgerWait()
	var sentAt uint32
	rbf := o.newReplacement(env)
	bs, ok := o.Store.(BatchStore)
	if !ok {
		rbf.done = true
	}
	if maybeDelivered {
		// A take-over: the envelope may have been queued by the call before; a replacement
		// must outbid the newest one the batch item names.
		rbf.taken(env)
	}
	for o.Clock.Now().Before(a.deadline) {
		if needSend {
			first := !maybeDelivered
			if maybeDelivered && bs != nil {
				// Every key has its own judge, and another may have replaced the batch by fee
				// since this one read it: re-send the newest fee bump the batch item names, never
				// an older one, which stellar-core refuses ERROR txINSUFFICIENT_FEE naming 10x the
				// queued replacement's fee (TransactionQueue::canAdd, canReplaceByFee), a refusal
				// the Ledger learns as the lane's price. Unread, the one held is sent: the batch
				// item names it too.
				if got, err := bs.GetBatch(ctx, env.InnerHash); err == nil && got.Version > b.Version && got.Envelope.InnerHash == env.InnerHash {
					b, env = got, got.Envelope
					rbf.taken(env) // the other judge's replacement is the one a replacement must outbid
				}
			}
			res, err := o.send(a.net, env)
			needSend = false
			w.sent(res, err, first, o.Clock.Now())
			if err == nil {
				sentAt = res.LatestLedger
				if rbf.firstSentAt == 0 {
					rbf.firstSentAt = res.LatestLedger
				}
			}
			switch {
			case err == nil && res.Status == SendIncluded && res.Included != nil:
				return batchFate{lk: res.Included, batch: b}
			case err == nil && RefusedBeforeInclusion(res, maybeDelivered):
				return batchFate{refused: &res, batch: b}
			case err == nil:
				maybeDelivered = true
				if res.Status == SendPending || res.Status == SendDuplicate {
					rbf.taken(env)
				}
			case notSent(err):
				needSend = true
			default:
				maybeDelivered = true
				needSend = true
				failing = sendFailure(err)
				o.log().WarnContext(ctx, "batch send failed; will re-send the same envelope", "innerHash", env.InnerHash, "err", err)
			}
		}
		if maybeDelivered && o.due(a, w) {
			a.lookups++
			lk, err := o.lookup(a.net, env)
			w.looked(lk, err, o.Clock.Now())
			if err == nil {
				if lk.Status == LookupSuccess || lk.Status == LookupFailed || ProvenDead(env, lk) {
					return batchFate{lk: &lk, batch: b}
				}
				if rbf.due(lk.LatestLedger) {
					next, ok, herr := o.replaceBatchByFee(ctx, a, rbf, bs, b, rec, lk.LatestLedger)
					if herr != nil {
						return batchFate{died: herr, batch: b}
					}
					if ok {
						b, env = next, next.Envelope
						needSend = true
					}
				}
				if sentAt == 0 {
					sentAt = lk.LatestLedger
				}
				if lk.LatestLedger >= sentAt+2 {
					needSend = true
				}
			}
		}
		d := w.next(o.Clock.Now())
		if needSend && !maybeDelivered {
			d = w.tight()
		}
		if err := o.sleep(ctx, a, d); err != nil {
			break
		}
	}
	if !maybeDelivered {
		return batchFate{neverSent: true, batch: b}
	}
	return batchFate{failing: failing, batch: b}
}

// takeOverBatched re-sends and judges the batch envelope that rec, a batched key this call took
// over (in_flight under its lease), names: read from the batch item, never rebuilt, and judged for
// rec alone (doc.go, "Batches", "Synchronous callers and cancels"). A refusal proves nothing (the
// envelope may have been sent before); undecided when the budget ends, rec is parked in_doubt.
// freed reports rec requeued (nothing of the batch moved, or it is proven dead).
func (o *Orchestrator) takeOverBatched(ctx context.Context, a *attempt, rec Record) (Outcome, bool, error) {
	b, err := BatchOf(ctx, o.Store, rec)
	if err != nil {
		// The key cannot be tied to its operation: nothing is sent or written; its lease expires
		// and the sweep parks it in_doubt for an operator.
		o.log().ErrorContext(ctx, "taking over a batched key: its batch cannot be read", "storeKey", rec.StoreKey, "err", err)
		return Outcome{}, false, storeUnavailableHeld(err)
	}
	if err := o.hook(ctx, StepClaimed, rec); err != nil {
		return Outcome{}, false, err
	}
	f := o.awaitBatch(ctx, a, b, rec, true)
	b = f.batch
	if f.died != nil {
		return Outcome{}, false, f.died
	}
	if f.lk == nil {
		return Outcome{}, false, o.settleInDoubt(ctx, a, rec, f.failing)
	}
	if err := o.hook(ctx, StepSettling, rec); err != nil {
		return Outcome{}, false, err
	}
	s, v, err := o.judgeBatched(ctx, rec, b, *f.lk, a.settings.KeyTTL)
	if err != nil {
		o.log().ErrorContext(ctx, "settling a batched key failed after the ledger decided", "storeKey", rec.StoreKey, "err", err)
	} else {
		o.releaseJudged(ctx, b, rec.StoreKey)
	}
	return batchAnswer(rec, s, v, *f.lk, err, o.Clock.Now())
}

// batchAnswer is the answer to a caller of rec, a batched key judged v from lk (s what was
// written, werr the write's error): the landed transaction, its rejection, or freed (requeued)
// with TRANSACTION_EXPIRED or, when the paying side could not pay, its shortfall.
func batchAnswer(rec Record, s Settlement, v OperationVerdict, lk Lookup, werr error, now time.Time) (Outcome, bool, error) {
	switch v {
	case VerdictLanded:
		out := Outcome{TransactionHash: rec.Envelope.InnerHash, Ledger: lk.Ledger}
		if rec.Batch != nil {
			i := rec.Batch.Index
			out.OperationIndex = &i
		}
		return out, false, nil
	case VerdictRejected:
		next := s.Record
		if werr != nil {
			next = batchSettled(rec, lk, v, now, 0)
		}
		return Outcome{}, false, storedRejection(next)
	}
	if code := batchShortfall(*rec.Envelope, lk); code != "" {
		return Outcome{}, werr == nil, shortfallAnswer(code, lk)
	}
	return Outcome{}, werr == nil, expired()
}
