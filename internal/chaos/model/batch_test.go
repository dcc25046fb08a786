package model

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The batch models: the protocol of internal/transfer/doc.go, "Batches", for two queued keys paid
// by one transaction. Its actors are the real code (batchreal_test.go: the submitter
// RunQueuedBatch, a synchronous caller on key A Transfer, the sweep Settle, a cancel of A
// Cancel); the actors written here step by step (handSubmitter, handCaller, handSweep) run only
// the mutants that break a rule of the domain code itself (TestBatchModelFindsBrokenRules).
// The ledger may answer a batch SUCCESS, FAILED on either key's destination or on the source,
// pending, or proven dead; a send may be accepted, refused, or accepted with the answer lost.
// Faults: a conditional write (or the attach transaction) that applies and loses its answer, and
// the submitter's process dying at any of its points.
//
// The invariants, per key and per operation (batchCheck, opAnswerTrue): of the envelopes holding a
// key's operation at most one can still land and at most one has landed, and each of them is the
// one the key's item names; a replayable item names a landed envelope holding its operation, a
// rejected one an envelope that failed on its own operation's destination; a cancelled item has no
// envelope holding its operation that can land or landed; and every answer that names an operation
// (a 200, a stored rejection) is true of the ledger.

// batchKey is one key of the batch models: its name in traces, its store key and the claim of
// its queued item.
type batchKey struct {
	name, key, claim string
	in               transfer.Input
}

// batchKeys are A (the one-key models' key, so the cancel and the synchronous caller use it) and
// B, another wallet's key.
var batchKeys = func() []batchKey {
	const walletB = "GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3"
	inB := transfer.Input{ClientKey: "model-key-2",
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: walletB, Amount: "7", Asset: "USDC", Stroops: 70_000_000}}
	return []batchKey{
		{name: "A", key: storeKey, claim: "claim-EA", in: input},
		{name: "B", key: transfer.StoreKey(walletB, inB.ClientKey), claim: "claim-EB", in: inB},
	}
}()

// failedSource is envelope.failure for a batch that failed on the paying side.
const failedSource = "source"

// batchItem is the queued item of b, as Enqueue writes it.
func batchItem(b batchKey) transfer.Record {
	return transfer.Record{
		StoreKey: b.key, ClaimID: b.claim, Status: transfer.StatusQueued, Fingerprint: b.in.Request.Fingerprint(),
		Request: b.in.Request, ClientKey: b.in.ClientKey, Version: 1, CreatedAt: t0, UpdatedAt: t0, Async: true,
	}
}

// keyName is a store key's name in traces.
func (w *world) keyName(key string) string {
	for _, b := range batchKeys {
		if b.key == key {
			return b.name
		}
	}
	return key
}

// --- the network, for batches ---

// batchSendVariants: as sendVariants, and an envelope not yet on the network may be accepted with
// the answer lost (the send may have reached the network: every later refusal proves nothing).
var batchSendVariants = map[fate][]string{
	built:  {"accepted", "refused", "accepted, answer lost"},
	queued: {"duplicate"},
	landed: {"banned"},
	failed: {"banned"},
	dead:   {"too late"},
}

// buildBatch signs a new envelope named name paying one operation to each of keys, in order.
func (w *world) buildBatch(name string, keys []string, maxTime time.Time) transfer.Envelope {
	env := w.build(name, maxTime)
	w.envs[env.InnerHash].ops = slices.Clone(keys)
	return env
}

// batchLookupVariants are what a look-up of e may find: pending or proven dead while not on the
// network; once accepted also landed, or included FAILED on one operation's destination or on the
// source; a decided fate is kept.
func (w *world) batchLookupVariants(e *envelope) []string {
	switch e.fate {
	case built:
		return []string{"pending", "proven dead"}
	case queued:
		vs := []string{"pending", "landed"}
		for _, k := range e.ops {
			vs = append(vs, "failed: "+w.keyName(k)+"'s destination")
		}
		return append(vs, "failed: source", "proven dead")
	case landed:
		return []string{"landed"}
	case failed:
		return []string{"failed"}
	}
	return []string{"proven dead"}
}

func (w *world) batchLookup(e *envelope, variant string) {
	switch {
	case variant == "landed":
		e.fate = landed
	case variant == "proven dead":
		e.fate = dead
	case variant == "failed: source":
		e.fate, e.failure = failed, failedSource
	case strings.HasPrefix(variant, "failed: ") && variant != "failed":
		e.fate = failed
		for _, k := range e.ops {
			if variant == "failed: "+w.keyName(k)+"'s destination" {
				e.failure = k
			}
		}
	}
}

// --- the invariants, per key and per operation ---

// opAnswer is an answer that names key's operation in the envelope hash at index: landed (a 200, a
// settlement) or rejected (a stored rejection on its destination).
type opAnswer struct {
	key, hash string
	index     int
	rejected  bool
}

func (w *world) batchCheck() []violation {
	var out []violation
	for _, b := range batchKeys {
		var live, done []string
		for _, h := range w.order {
			e := w.envs[h]
			if !slices.Contains(e.ops, b.key) {
				continue
			}
			switch e.fate {
			case queued:
				live = append(live, e.name)
			case landed:
				done = append(done, e.name)
			default:
				continue
			}
			if cur, ok := w.items[b.key]; !ok || cur.Envelope == nil || cur.Envelope.InnerHash != h {
				out = append(out, violation{"orphan", fmt.Sprintf("envelope %s holds %s's operation and is %s, but %s's item does not name it (%s)",
					e.name, b.name, e.fate, b.name, w.itemSummary())})
			}
		}
		if len(live) > 1 {
			out = append(out, violation{"two-live", fmt.Sprintf("envelopes %s, each holding %s's operation, can all still land", strings.Join(live, " and "), b.name)})
		}
		if len(done) > 1 {
			out = append(out, violation{"two-landed", fmt.Sprintf("envelopes %s, each holding %s's operation, landed", strings.Join(done, " and "), b.name)})
		}
		cur, ok := w.items[b.key]
		if !ok {
			continue
		}
		switch cur.Status {
		case transfer.StatusCancelled:
			if len(live)+len(done) > 0 || cur.Envelope != nil {
				out = append(out, violation{"cancelled-live", fmt.Sprintf("%s is cancelled (%s) while envelopes %s hold its operation",
					b.name, summary(cur, w), strings.Join(append(live, done...), " and "))})
			}
		case transfer.StatusReplayable, transfer.StatusRejected:
			ans := opAnswer{key: b.key, rejected: cur.Status == transfer.StatusRejected, index: -1}
			if cur.Result != nil {
				ans.hash = cur.Result.TransactionHash
			}
			if cur.Batch != nil {
				ans.index = cur.Batch.Index // the operation the item says is its own
			}
			if v := w.opAnswerTrue(b.name+"'s item", ans); v != nil {
				out = append(out, violation{"false-settlement", v.detail})
			}
		}
	}
	return out
}

// opAnswerTrue checks an answer that names an operation: the envelope holds the key's operation at
// that index, and landed (a 200) or failed on that operation's destination (a rejection).
func (w *world) opAnswerTrue(who string, a opAnswer) *violation {
	e := w.envs[a.hash]
	what := "200"
	if a.rejected {
		what = "a rejection"
	}
	switch {
	case e == nil:
		return &violation{"false-answer", fmt.Sprintf("%s answered %s for %s naming %q, an envelope the model never built", who, what, w.keyName(a.key), a.hash)}
	case a.index < 0 && len(e.ops) == 1 && e.ops[0] == a.key:
		// A transfer that ran alone: its item names no operation, its transaction holds one.
		return w.opAnswerTrue(who, opAnswer{key: a.key, hash: a.hash, index: 0, rejected: a.rejected})
	case a.index < 0 || a.index >= len(e.ops) || e.ops[a.index] != a.key:
		return &violation{"false-answer", fmt.Sprintf("%s answered %s for %s naming operation %d of %s, which is not %s's", who, what, w.keyName(a.key), a.index, e.name, w.keyName(a.key))}
	case !a.rejected && e.fate != landed:
		return &violation{"false-answer", fmt.Sprintf("%s answered 200 for %s naming %s, which is %s", who, w.keyName(a.key), e.name, e.fate)}
	case a.rejected && (e.fate != failed || e.failure != a.key):
		return &violation{"false-answer", fmt.Sprintf("%s answered a rejection for %s naming %s, which is %s (%s)", who, w.keyName(a.key), e.name, e.fate, w.keyName(e.failure))}
	}
	return nil
}

// --- the protocol ---

// The mutations: each breaks one rule of the design, and TestBatchModelFindsBrokenRules shows the
// check finds what that does.
const (
	// mutRejectBatch: a FAILED batch rejects every key, not only the one whose operation failed on
	// its destination.
	mutRejectBatch = "reject the whole batch"
	// mutAttachOneByOne: the envelope is attached key by key, not in one transaction.
	mutAttachOneByOne = "attach key by key"
	// mutRequeueInDoubt: a batch still pending when the budget ends is requeued, not in doubt.
	mutRequeueInDoubt = "requeue a batch in doubt"
	// mutRequeueKeyByKey: a batch refused on its first send is requeued key by key, each on its
	// own item's condition.
	mutRequeueKeyByKey = "requeue a refused batch key by key"
)

// lookupOf is the ledger's answer for e as a transfer.Lookup: SUCCESS; FAILED with the
// transaction's code and one code per operation in order (op_no_trust on the failed key's, or
// op_underfunded on the last for the source, op_success on the others), as internal/stellar's
// ResultCodes lists them; NOT_FOUND with the facts of a proof of death; or NOT_FOUND with none.
func (w *world) lookupOf(e *envelope) transfer.Lookup {
	env := e.env
	switch e.fate {
	case landed:
		return transfer.Lookup{Status: transfer.LookupSuccess, Hash: env.InnerHash, Ledger: landedLedger, FeeChargedStroops: 100}
	case failed:
		codes := []string{"tx_failed"}
		for i, k := range e.ops {
			switch {
			case e.failure == k:
				codes = append(codes, "op_no_trust")
			case e.failure == failedSource && i == len(e.ops)-1:
				codes = append(codes, "op_underfunded")
			default:
				codes = append(codes, "op_success")
			}
		}
		return transfer.Lookup{Status: transfer.LookupFailed, Hash: env.InnerHash, Ledger: landedLedger, ResultCodes: codes, FeeChargedStroops: 100}
	case dead:
		return transfer.Lookup{Status: transfer.LookupNotFound, OldestLedger: 1,
			LatestLedger: landedLedger + 10, LatestLedgerCloseTime: time.Unix(env.MaxTime+1, 0).UTC()}
	}
	return transfer.Lookup{Status: transfer.LookupNotFound, OldestLedger: 1,
		LatestLedger: submittedLedger + 1, LatestLedgerCloseTime: time.Unix(env.MaxTime-5, 0).UTC()}
}

// judge is the real per-key rule (transfer.JudgeOperation) for rec, an item holding e as its
// batch, by the operation its item names (under mutRejectBatch a FAILED batch is the key's own
// rejection whatever its operation did).
func (k *kit) judge(rec transfer.Record, e *envelope) transfer.OperationVerdict {
	index := -1
	if rec.Batch != nil {
		index = rec.Batch.Index
	}
	v, _ := transfer.JudgeOperation(e.env, k.r.w.lookupOf(e), index)
	if k.r.lim.mutation == mutRejectBatch && e.fate == failed {
		return transfer.VerdictRejected
	}
	return v
}

// settledRecord is rec once its envelope e landed or failed (transfer.SettledRecord).
func (k *kit) settledRecord(rec transfer.Record, e *envelope) transfer.Record {
	return transfer.SettledRecord(rec, k.r.w.lookupOf(e), k.r.w.now(), 24*time.Hour)
}

// answerOf is the answer a settled item gives for its key: the transaction and the operation its
// item names.
func (k *kit) answerOf(rec transfer.Record) opAnswer {
	a := opAnswer{key: rec.StoreKey, index: -1, rejected: rec.Status == transfer.StatusRejected}
	if rec.Result != nil {
		a.hash = rec.Result.TransactionHash
	}
	if rec.Batch != nil {
		a.index = rec.Batch.Index
	}
	return a
}

// write is the real conditional write of one key (transfer.ReplaceItem: on the item exactly as
// read, recognising its own write whose answer was lost).
func (k *kit) write(ctx context.Context, cur, next transfer.Record) bool {
	return transfer.ReplaceItem(ctx, store{k}, cur, next) == nil
}

// lookupBatch is one look-up of the envelope named by hash: a point whose variants are the ledger's
// possible answers now.
func (k *kit) lookupBatch(hash string) *envelope {
	w := k.r.w
	e := w.envs[hash]
	p := point{kind: "Lookup", envHash: hash, opts: func() []string { return w.batchLookupVariants(e) }}
	if k.r.tracing {
		p.desc = "Lookup " + e.name
	}
	v := k.r.point(k.a, p)
	w.batchLookup(e, v)
	k.r.observe(k.a, v, fmt.Sprintf("%d%s", e.fate, e.failure), func() string { return e.fate.String() })
	return e
}

// sendBatch is one send of env: reports whether the network took it or may have (a refusal of a
// first send proves it never will).
func (k *kit) sendBatch(env transfer.Envelope, maybeDelivered bool) (refusedFirst bool) {
	w := k.r.w
	e := w.envs[env.InnerHash]
	p := point{kind: "Send", envHash: env.InnerHash}
	if k.r.tracing {
		p.desc = "Send " + e.name
	}
	v := k.r.point(k.a, p)
	switch v {
	case "accepted", "accepted, answer lost":
		e.fate = queued
	}
	k.r.observe(k.a, v, v, func() string { return v })
	return (v == "refused") && !maybeDelivered
}

// sleep is a Clock sleep: whether the budget is left (wake) or over.
func (k *kit) sleep(ctx context.Context) bool {
	return clock{k}.Sleep(ctx, time.Second) == nil
}

// attach writes env onto every taken item (transfer.BatchAttached) in one transaction
// (transfer.ReplaceAllItems, which recognises its own transaction whose answer was lost), each
// conditional on the item as taken; or key by key under mutAttachOneByOne. It returns the items
// as attached, or false when the envelope must not be sent.
func (k *kit) attach(ctx context.Context, taken []transfer.Record, env transfer.Envelope) ([]transfer.Record, bool) {
	w := k.r.w
	next := make([]transfer.Record, len(taken))
	for i, rec := range taken {
		next[i] = transfer.BatchAttached(rec, env, transfer.BatchRef{Index: i, Size: len(taken)}, w.now())
	}
	if k.r.lim.mutation == mutAttachOneByOne {
		for i := range taken {
			if !k.write(ctx, taken[i], next[i]) {
				return nil, false
			}
		}
		return next, true
	}
	return next, transfer.ReplaceAllItems(ctx, store{k}, taken, next) == nil
}

// requeueRefused frees held, a batch's items as attached, after its first send was refused: the
// real transfer.RequeueRefused (requeued together in one transaction, or parked in doubt once a
// key was taken over), or key by key under mutRequeueKeyByKey.
func (k *kit) requeueRefused(ctx context.Context, held []transfer.Record) string {
	w := k.r.w
	if k.r.lim.mutation == mutRequeueKeyByKey {
		for _, rec := range held {
			k.write(ctx, rec, transfer.Requeued(rec, w.now()))
		}
		return "requeued"
	}
	requeued, err := transfer.RequeueRefused(ctx, store{k}, held, transfer.CodeSubmissionFailed, w.now())
	switch {
	case requeued:
		return "requeued"
	case err != nil:
		return "left in flight: " + okOr(err)
	}
	var texts []string
	for _, rec := range held {
		if cur, ok := w.items[rec.StoreKey]; ok && cur.Status == transfer.StatusInDoubt && cur.Version == rec.Version+1 {
			texts = append(texts, w.keyName(rec.StoreKey)+" in_doubt")
		}
	}
	return "a key was taken over: " + strings.Join(texts, ", ")
}

// GetMany is the store's read of many items (transfer.ManyReader: BatchGetItem), one point per
// item: a BatchGetItem reads each item consistently but not all at one instant, so another actor
// may write between two of its reads.
func (s store) GetMany(ctx context.Context, keys []string) (map[string]transfer.Record, error) {
	out := make(map[string]transfer.Record, len(keys))
	for _, k := range keys {
		if _, seen := out[k]; seen {
			continue
		}
		if rec, err := s.Get(ctx, k); err == nil {
			out[k] = rec
		}
	}
	return out, nil
}

// ReplaceAll is the store's transaction over many items (transfer.BatchStore): a point that
// writes every item if every condition holds, else none and names the failed keys. With
// limits.lost it may apply and lose its answer: the retry, which the store cannot tell from a new
// request, fails its conditions against the items it wrote (transfer.ReplaceAllItems reads them
// back).
func (s store) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	w := s.k.r.w
	if m := s.k.r.lim.mutation; m == mutAttachOneByOne || m == mutRequeueKeyByKey {
		// The mutants: no transaction, each item written alone on its own condition.
		var failed []string
		for _, wr := range writes {
			if s.Replace(ctx, wr.Next, wr.Cond) != nil {
				failed = append(failed, wr.Next.StoreKey)
			}
		}
		if len(failed) > 0 {
			return &transfer.BatchConditionError{Failed: failed}
		}
		return nil
	}
	failedKeys := func() []string {
		var out []string
		for _, wr := range writes {
			if cur, ok := w.items[wr.Next.StoreKey]; !ok || !w.holds(wr.Cond, cur) {
				out = append(out, wr.Next.StoreKey)
			}
		}
		return out
	}
	p := point{kind: "Transact", opts: func() []string {
		if s.k.r.lost < s.k.r.lim.lost && len(failedKeys()) == 0 {
			return []string{"", lostAnswer}
		}
		return []string{""}
	}}
	if s.k.r.tracing {
		var parts []string
		for _, wr := range writes {
			parts = append(parts, w.keyName(wr.Next.StoreKey)+" -> "+summary(wr.Next, w))
		}
		p.desc = "transaction: " + strings.Join(parts, "; ")
	}
	v := s.k.r.point(s.k.a, p)
	failed := failedKeys()
	if len(failed) == 0 {
		for _, wr := range writes {
			w.items[wr.Next.StoreKey] = clone(wr.Next)
		}
	}
	var err error
	switch {
	case v == lostAnswer:
		for _, wr := range writes {
			failed = append(failed, wr.Next.StoreKey)
		}
		err = &transfer.BatchConditionError{Failed: failed}
	case len(failed) > 0:
		err = &transfer.BatchConditionError{Failed: failed}
	}
	s.k.r.observe(s.k.a, v, errText(err), func() string {
		if v == lostAnswer {
			return "applied, answer lost"
		}
		return okOr(err)
	})
	return err
}

// PutBatch and GetBatch complete transfer.BatchStore. PutBatch is no scheduling point: no key names
// the batch before the attach, so its write changes nothing any actor can see until then.
func (s store) PutBatch(_ context.Context, b transfer.BatchEnvelope) error {
	w := s.k.r.w
	if _, ok := w.batches[b.Envelope.InnerHash]; ok {
		return fmt.Errorf("model: batch %s: %w", w.envName(b.Envelope.InnerHash), transfer.ErrConditionFailed)
	}
	b.Ops = slices.Clone(b.Ops)
	w.batches[b.Envelope.InnerHash] = b
	return nil
}

// GetBatch reads a batch as PutBatch wrote it (a consistent read: a point).
func (s store) GetBatch(_ context.Context, innerHash string) (transfer.BatchEnvelope, error) {
	s.k.r.point(s.k.a, point{kind: "Get", desc: "GetBatch"})
	b, ok := s.k.r.w.batches[innerHash]
	if !ok {
		return transfer.BatchEnvelope{}, transfer.ErrNotFound
	}
	b.Ops = slices.Clone(b.Ops)
	return b, nil
}

// ReplaceBatch writes a replacement's envelope at the next version (a conditional write on the
// version read). The model's ledger never outbids a batch, so no actor calls it; it completes
// transfer.BatchStore.
func (s store) ReplaceBatch(_ context.Context, next transfer.BatchEnvelope) error {
	b, ok := s.k.r.w.batches[next.Envelope.InnerHash]
	if !ok || b.Version != next.Version-1 {
		return transfer.ErrConditionFailed
	}
	b.Envelope, b.Version = next.Envelope, next.Version
	s.k.r.w.batches[next.Envelope.InnerHash] = b
	return nil
}

// ExpireBatch records a batch's TTL; the model never deletes a batch, so it is no scheduling point.
func (s store) ExpireBatch(_ context.Context, innerHash string, expiresAt int64) error {
	b, ok := s.k.r.w.batches[innerHash]
	if !ok {
		return transfer.ErrNotFound
	}
	b.ExpiresAt = expiresAt
	s.k.r.w.batches[innerHash] = b
	return nil
}

// runBatch builds one envelope for taken (items this actor holds in_flight), attaches it, sends
// it, awaits the ledger and judges each key; it returns the answers for the keys it settled.
func (k *kit) runBatch(ctx context.Context, taken []transfer.Record) result {
	w := k.r.w
	keys := make([]string, len(taken))
	for i, rec := range taken {
		keys[i] = rec.StoreKey
	}
	env := w.buildBatch(k.name("envelope"), keys, w.now().Add(30*time.Second))
	attached, ok := k.attach(ctx, taken, env)
	if !ok {
		// Nothing was sent: every key still held goes back to the queue, each on its item as taken.
		for _, rec := range taken {
			k.write(ctx, rec, transfer.Requeued(rec, w.now()))
		}
		return result{text: "attach failed; requeued, nothing sent"}
	}
	return k.await(ctx, attached, env, false)
}

// await sends env (again, when maybeDelivered), looks it up and judges each of held, items this
// actor holds in_flight with env attached.
func (k *kit) await(ctx context.Context, held []transfer.Record, env transfer.Envelope, maybeDelivered bool) result {
	w := k.r.w
	if k.sendBatch(env, maybeDelivered) {
		return result{text: "refused on its first send: " + k.requeueRefused(ctx, held)}
	}
	for {
		e := k.lookupBatch(env.InnerHash)
		if k.judge(held[0], e) != transfer.VerdictUndecided {
			return k.judgeAll(ctx, held, e)
		}
		if !k.sleep(ctx) {
			break
		}
	}
	var texts []string
	for _, rec := range held {
		next := transfer.InDoubtRecord(rec, transfer.CodeTimeout, w.now())
		if k.r.lim.mutation == mutRequeueInDoubt {
			next = transfer.Requeued(rec, w.now())
		}
		if k.write(ctx, rec, next) {
			texts = append(texts, w.keyName(rec.StoreKey)+" "+string(next.Status))
		}
	}
	return result{text: "budget over: " + strings.Join(texts, ", ")}
}

// judgeAll writes each key of held (as read) by the ledger's answer e, one conditional write per
// key, and answers for those it settled.
func (k *kit) judgeAll(ctx context.Context, held []transfer.Record, e *envelope) result {
	w := k.r.w
	var res result
	var texts []string
	for _, rec := range held {
		switch k.judge(rec, e) {
		case transfer.VerdictLanded, transfer.VerdictRejected:
			next := k.settledRecord(rec, e)
			if k.write(ctx, rec, next) {
				res.ops = append(res.ops, k.answerOf(next))
				texts = append(texts, w.keyName(rec.StoreKey)+" "+string(next.Status))
			}
		case transfer.VerdictRequeue:
			if k.write(ctx, rec, transfer.Requeued(rec, w.now())) {
				texts = append(texts, w.keyName(rec.StoreKey)+" requeued")
			}
		}
	}
	res.text = e.fate.String() + ": " + strings.Join(texts, ", ")
	return res
}

// take is the submitter's take of one queued key: queued -> in_flight under its lease, on the item
// exactly as read.
func (k *kit) take(ctx context.Context, rec transfer.Record, owner string) (transfer.Record, bool) {
	next := rec
	next.Status = transfer.StatusInFlight
	next.LeaseOwner, next.LeaseExpiresAt = owner, k.r.w.now().Add(47*time.Second)
	next.Version++
	next.UpdatedAt = k.r.w.now()
	return next, k.write(ctx, rec, next)
}

// handSubmitter is the submitter written step by step as the design says (mutants only): it reads
// each item, takes the queued ones of the message's incarnation one conditional write each, and pays them
// with one envelope.
func handSubmitter(ctx context.Context, k *kit) result {
	owner := k.name("owner")
	var taken []transfer.Record
	for _, b := range batchKeys {
		rec, err := store{k}.Get(ctx, b.key)
		if err != nil || rec.Status != transfer.StatusQueued || rec.ClaimID != b.claim {
			continue
		}
		if next, ok := k.take(ctx, rec, owner); ok {
			taken = append(taken, next)
		}
	}
	if len(taken) == 0 {
		return result{text: "nothing to take"}
	}
	return k.runBatch(ctx, taken)
}

// handCaller is a synchronous call with A's key written step by step (mutants only), as it meets
// a batched key: it waits on a queued or held item, takes over an expired lease (with no envelope the key
// runs alone; with the batch's, that envelope is re-sent and judged for A only), settles an
// in-doubt item inline, and replays a settled one.
func handCaller(ctx context.Context, k *kit) result {
	w := k.r.w
	a := batchKeys[0]
	for range 3 {
		rec, err := store{k}.Get(ctx, a.key)
		if err != nil {
			return result{text: "not found"}
		}
		switch {
		case rec.Status == transfer.StatusReplayable:
			return result{text: "200 " + w.envName(rec.Result.TransactionHash), ops: []opAnswer{k.answerOf(rec)}}
		case rec.Status == transfer.StatusRejected:
			return result{text: "422 " + w.envName(rec.Result.TransactionHash), ops: []opAnswer{k.answerOf(rec)}}
		case rec.Status == transfer.StatusCancelled:
			return result{text: "409 TRANSFER_CANCELLED"}
		case rec.Status == transfer.StatusInDoubt:
			e := k.lookupBatch(rec.Envelope.InnerHash)
			switch k.judge(rec, e) {
			case transfer.VerdictUndecided:
				return result{text: "409 TRANSFER_IN_DOUBT"}
			case transfer.VerdictLanded, transfer.VerdictRejected:
				next := k.settledRecord(rec, e)
				if !k.write(ctx, rec, next) {
					continue
				}
				return result{text: "inline " + string(next.Status), ops: []opAnswer{k.answerOf(next)}}
			case transfer.VerdictRequeue:
				k.write(ctx, rec, transfer.Requeued(rec, w.now()))
				continue
			}
		case rec.Status == transfer.StatusInFlight && rec.LeaseExpired(w.now()):
			next, ok := k.take(ctx, rec, k.name("owner"))
			if !ok {
				continue
			}
			if next.Envelope == nil {
				return k.runBatch(ctx, []transfer.Record{next})
			}
			return k.await(ctx, []transfer.Record{next}, w.envs[next.Envelope.InnerHash].env, true)
		default:
			// queued, or held under a live lease: wait for its holder.
			if !k.sleep(ctx) {
				return result{text: "409 TRANSFER_IN_PROGRESS"}
			}
		}
	}
	return result{text: "409 TRANSFER_IN_PROGRESS"}
}

// handSweep is the sweep over both keys written step by step (mutants only): an expired claim with no envelope is requeued; one with
// the batch's envelope, or an in-doubt key, is judged by the batch's proof, each key alone.
func handSweep(ctx context.Context, k *kit) result {
	w := k.r.w
	var texts []string
	var res result
	for _, b := range batchKeys {
		rec, err := store{k}.Get(ctx, b.key)
		if err != nil || !(rec.Status == transfer.StatusInDoubt || rec.LeaseExpired(w.now())) {
			continue
		}
		if rec.Envelope == nil {
			if rec.Status == transfer.StatusInFlight && k.write(ctx, rec, transfer.Requeued(rec, w.now())) {
				texts = append(texts, b.name+" requeued")
			}
			continue
		}
		e := k.lookupBatch(rec.Envelope.InnerHash)
		switch k.judge(rec, e) {
		case transfer.VerdictUndecided:
			if rec.Status == transfer.StatusInFlight && k.write(ctx, rec, transfer.InDoubtRecord(rec, transfer.CodeLeaseExpired, w.now())) {
				texts = append(texts, b.name+" in_doubt")
			}
		case transfer.VerdictLanded, transfer.VerdictRejected:
			next := k.settledRecord(rec, e)
			if k.write(ctx, rec, next) {
				res.ops = append(res.ops, k.answerOf(next))
				texts = append(texts, b.name+" "+string(next.Status))
			}
		case transfer.VerdictRequeue:
			if k.write(ctx, rec, transfer.Requeued(rec, w.now())) {
				texts = append(texts, b.name+" requeued")
			}
		}
	}
	res.text = "sweep: " + strings.Join(texts, ", ")
	return res
}

// batchActors are the batch models' actors.
var batchActors = []spec{
	{name: "Q", role: "batch submitter", mortal: true, body: batchSubmitter},
	// P is a second invocation with the same messages: SQS delivers at least once, and a message
	// whose visibility timeout ended is delivered again while the first may still run.
	{name: "P", role: "batch submitter, the same messages again", body: batchSubmitter},
	{name: "C", role: "synchronous caller on A", body: batchCaller},
	{name: "S", role: "sweep", late: true, body: batchSweep},
	{name: "X", role: "cancel of A", body: cancelBody},
}

// handActors are the actors written step by step, for the mutants that break a rule of the domain
// code itself (mutRejectBatch, mutRequeueInDoubt), which the real code cannot be made to break.
var handActors = []spec{
	{name: "Q", role: "batch submitter (written out)", mortal: true, body: handSubmitter},
	{name: "C", role: "synchronous caller on A (written out)", body: handCaller},
	{name: "S", role: "sweep (written out)", late: true, body: handSweep},
	{name: "X", role: "cancel of A", body: cancelBody},
}

func batchSpecs(names string) []spec { return specsOf(batchActors, names) }

func specsOf(actors []spec, names string) []spec {
	var out []spec
	for _, a := range actors {
		if strings.Contains(names, a.name) {
			out = append(out, a)
		}
	}
	return out
}

// batchModels are explored by TestBatchInterleavings, each completely within its bounds (one clock
// tick, at most one preemption): the submitter with its process dying at any point beside the
// synchronous caller, beside the sweep and beside a cancel of A; and the submitter alone with one
// conditional write (or transaction) applying and losing its answer, which it must recognise.
var batchModels = []model{
	{"batch beside a synchronous caller, process death", "QC", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
	{"batch beside the sweep, process death", "QS", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
	{"batch beside a cancel, process death", "QX", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
	{"batch, lost answer", "Q", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, lost: 1}},
}

// fullBatchModels are explored as well when MODEL_FULL is set (about 2.6 million distinct states
// on the real code, about 10 minutes without -race on a shared 2-core machine, the two submitters
// 8 of them: run with -timeout 30m): the submitter, the synchronous caller and the sweep together, with a death or a
// lost answer; the caller and the sweep each with a lost answer; the cancel beside the sweep; and
// two submitters given the same messages.
var fullBatchModels = []model{
	{"batch, caller and sweep, process death", "QCS", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
	{"batch, caller and sweep, lost answer", "QCS", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, lost: 1}},
	{"batch beside a synchronous caller, lost answer", "QC", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, lost: 1}},
	{"batch beside the sweep, lost answer", "QS", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, lost: 1}},
	{"batch beside a cancel and the sweep, process death", "QXS", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
	{"two submitters, process death", "QP", limits{ticks: 1, preemptions: 1, maxSteps: 100, batch: true, deaths: 1}},
}

// TestBatchInterleavings explores every interleaving of each batch model and fails with the first
// interleaving that breaks each invariant.
func TestBatchInterleavings(t *testing.T) {
	run := batchModels
	if os.Getenv("MODEL_FULL") != "" {
		run = append(run, fullBatchModels...)
	}
	for _, m := range run {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			if testing.Short() {
				m.lim.preemptions = 0
			}
			specs := batchSpecs(m.actors)
			st := explore(specs, m.lim)
			t.Logf("%s: %s; answers given:\n%s", m.actors, st, st.answerList())
			for _, kind := range st.kinds() {
				f := st.found[kind]
				t.Errorf("%s (%d states): %s; the first interleaving:\n%s", kind, f.states, f.detail,
					strings.Join(replay(specs, m.lim, f.path), "\n"))
			}
		})
	}
}

// TestBatchModelFindsBrokenRules shows the batch check can fail: each mutation breaks one rule of
// the design, and the model finds the violation it leads to.
func TestBatchModelFindsBrokenRules(t *testing.T) {
	for _, tc := range []struct {
		mutation, actors string
		lim              limits
		want             []string
	}{
		// A FAILED batch rejecting every key stores a rejection for the key whose operation did
		// not fail.
		{mutRejectBatch, "Q", limits{deaths: 0}, []string{"false-settlement", "false-answer"}},
		// Attached key by key, the submitter dies between the two attaches; the caller takes A's
		// expired lease over and re-sends the envelope, which holds B's operation while B's item
		// does not name it.
		{mutAttachOneByOne, "QC", limits{deaths: 1}, []string{"orphan"}},
		// A batch requeued while pending can still land while its keys are queued again.
		{mutRequeueInDoubt, "Q", limits{deaths: 0}, []string{"orphan"}},
		// Refused on its first send, the submitter is slow to requeue: the caller takes A's
		// expired lease over and sends the same envelope again, which is accepted; B's own
		// condition still holds, and B is requeued while the envelope holding its operation can
		// land.
		{mutRequeueKeyByKey, "QC", limits{deaths: 0}, []string{"orphan"}},
	} {
		t.Run(tc.mutation, func(t *testing.T) {
			t.Parallel()
			lim := tc.lim
			lim.ticks, lim.preemptions, lim.maxSteps, lim.batch, lim.stopAtFirst, lim.mutation = 1, 1, 100, true, true, tc.mutation
			specs := batchSpecs(tc.actors)
			if tc.mutation == mutRejectBatch || tc.mutation == mutRequeueInDoubt {
				specs = specsOf(handActors, tc.actors)
			}
			st := explore(specs, lim)
			var f *found
			for _, kind := range tc.want {
				if f == nil {
					f = st.found[kind]
				}
			}
			if f == nil {
				t.Fatalf("with %q the model found %v, not %v", tc.mutation, st.kinds(), tc.want)
			}
			t.Logf("%s:\n%s", f.detail, strings.Join(replay(specs, lim, f.path), "\n"))
		})
	}
}
