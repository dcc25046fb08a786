package transfer

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// The submitter's batch path (doc.go, "Batches"): read the messages' items, form batches, take
// each key, build and persist the batch's envelope, attach it to every key in one transaction,
// send it, and judge each key by its own operation.

// Answer is what the submitter does with one message: its Delivery, and why (for the log).
type Answer struct {
	Delivery Delivery
	Err      error
}

// RunQueuedBatch runs msgs, the messages of one submitter event, and answers each as RunQueued
// would (answers[i] is msgs[i]'s). With Settings.BatchSize above 1, a Batches ledger and a
// BatchStore (or BatchSize 1 with a TransactionsPerInvocation: every key alone, at most that
// many), the items still queued under their message's incarnation, batchable (no memo) and
// whose destinations pass the check form batches (FormBatches) paid by one transaction each;
// everything else (a stale or taken message, a memo, a destination the check refuses, a batch
// left with one key) runs alone through RunQueued. At most Settings.TransactionsPerInvocation
// transactions are paid (0: no bound), in the messages' order: each batch formed and each queued
// key that runs alone (a memo, a refused destination, a batch left with one key) is one; an item
// that would take another is not touched, and its message is answered DeliveryRetry
// (CHANNELS_BUSY, Retry-After one ledger: overInvocation). A stale, taken or repeated message
// runs alone uncounted: RunQueued answers it without a transaction of its own unless it takes
// over an expired lease or runs the key its first copy left over. Otherwise
// every message runs through RunQueued: the one-transfer path, unchanged. Messages and batches
// run concurrently.
func (o *Orchestrator) RunQueuedBatch(ctx context.Context, msgs []QueueMessage) []Answer {
	answers := make([]Answer, len(msgs))
	// Every message alone and every batch runs at once, each in its own goroutine (Parallel), so
	// that their ledger waits overlap within the invocation's deadline (internal/queue's Submitter
	// does the same for single messages). Each writes only its own messages' answers.
	// A panic in one of them fails only its own messages (recoverRun), never the invocation: a
	// goroutine's panic would end the process and every message of the event with it.
	var runs []func()
	spawn := func(f func(), failed func(error)) {
		run := func() {
			defer o.recoverRun(ctx, failed)
			f()
		}
		if o.Serial {
			run()
			return
		}
		runs = append(runs, run)
	}
	alone := func(i int) {
		spawn(func() {
			d, err := o.RunQueued(ctx, msgs[i])
			answers[i] = Answer{Delivery: d, Err: err}
		}, func(err error) { answers[i] = Answer{Delivery: DeliveryRetry, Err: err} })
	}
	s := o.settings()
	bs, ok := o.Store.(BatchStore)
	// Batches of 1 (BATCH_OPS_PER_LEDGER's share at this channel count) still come an event of k
	// x BATCH_SIZE messages: with a bound, every key runs alone, and at most k of them.
	if s.Validate() != nil || o.Batches == nil || !ok || (s.BatchSize <= 1 && s.TransactionsPerInvocation <= 0) {
		for i := range msgs {
			alone(i)
		}
		o.parallel(runs)
		return answers
	}
	recs, errs := o.readItems(ctx, msgs)
	at := make(map[string]int, len(msgs)) // store key -> message index
	var items []Record
	for i, m := range msgs {
		rec, err := recs[i], errs[i]
		_, dup := at[m.StoreKey]
		if err != nil || dup || m.ClaimID == "" || rec.ClaimID != m.ClaimID || !rec.Async || rec.Status != StatusQueued ||
			rec.Expired(o.Clock.Now()) || (rec.Fingerprint != "" && rec.Request.Fingerprint() != rec.Fingerprint) ||
			heldBack(rec, o.Clock.Now()) {
			alone(i) // RunQueued answers it: stale, retry (held back: NotBefore), a take-over, a refusal
			continue
		}
		at[m.StoreKey] = i
		items = append(items, rec)
	}
	// A destination the check refuses runs alone, one of the invocation's transactions as a
	// batch is (formBatches), in its message's place.
	refused := map[string]bool{}
	if s.BatchSize > 1 {
		o.checkDestinations(ctx, items, func(rec Record) { refused[rec.StoreKey] = true })
	}
	batches, single, over := formBatches(items, s.BatchSize, s.TransactionsPerInvocation, func(rec Record) bool { return !refused[rec.StoreKey] })
	for _, rec := range single {
		alone(at[rec.StoreKey])
	}
	for _, rec := range over {
		answers[at[rec.StoreKey]] = Answer{Delivery: DeliveryRetry, Err: overInvocation()}
	}
	for _, b := range batches {
		if open, left := o.Breaker.Open(); open {
			for _, rec := range b {
				answers[at[rec.StoreKey]] = Answer{Delivery: DeliveryRetry, Err: circuitOpen(left)}
			}
			continue
		}
		spawn(func() {
			for key, ans := range o.runBatch(ctx, bs, b) {
				answers[at[key]] = ans
			}
		}, func(err error) {
			for _, rec := range b {
				answers[at[rec.StoreKey]] = Answer{Delivery: DeliveryRetry, Err: err}
			}
		})
	}
	o.parallel(runs)
	return answers
}

// overInvocation is the answer to a message whose item none of this invocation's batches could
// carry, nor pay alone: an invocation pays at most Settings.TransactionsPerInvocation
// transactions, a batch or a key alone each one (formBatches), because
// template.yaml gives it k x BATCH_SIZE messages and runs its event source's MaxConcurrency
// invocations at once so that k x MaxConcurrency transactions, one per source account, are in
// flight; more (BATCH_OPS_PER_LEDGER made the batches smaller than BATCH_SIZE, a destination met
// twice opened another, or keys with a memo or a refused destination each run alone) would wait
// for sources the other invocations hold. Nothing is written
// for it, and it comes back about a ledger later (DefaultLedgerInterval), when this invocation's
// sources are free again. Its item stays queued under the same claim, so the sweep still finds it
// if the message is lost.
func overInvocation() error {
	return &UnavailableError{Code: CodeChannelsBusy, RetryAfter: DefaultLedgerInterval,
		Detail: "this invocation's transactions are full; the transfer is delivered again in about a ledger"}
}

// readItems reads each message's item consistently (recs[i] and errs[i] are msgs[i]'s, as Get
// answers): with one GetMany when the Store is a ManyReader (BatchGetItem: one round trip for up
// to 100 items, where a Get each takes one per item), and with Get for the keys a failed GetMany
// may have left unread, or for every key when the Store has none.
func (o *Orchestrator) readItems(ctx context.Context, msgs []QueueMessage) ([]Record, []error) {
	recs, errs := make([]Record, len(msgs)), make([]error, len(msgs))
	var got map[string]Record
	read := false // every key absent from got holds no item
	if r, ok := o.Store.(ManyReader); ok && len(msgs) > 1 {
		keys := make([]string, len(msgs))
		for i, m := range msgs {
			keys[i] = m.StoreKey
		}
		var err error
		got, err = r.GetMany(ctx, keys)
		if err != nil {
			o.log().WarnContext(ctx, "reading an event's items together failed; reading the rest one by one", "keys", len(keys), "read", len(got), "err", err)
		}
		read = err == nil
	}
	for i, m := range msgs {
		if rec, ok := got[m.StoreKey]; ok {
			recs[i] = rec
			continue
		}
		if read {
			errs[i] = fmt.Errorf("transfer: read %q: %w", m.StoreKey, ErrNotFound)
			continue
		}
		recs[i], errs[i] = o.Store.Get(ctx, m.StoreKey)
	}
	return recs, errs
}

// checkDestinations keeps the items whose destination passes the check (BatchLedger.
// CheckDestinations) and hands each other to refused, which has it run alone, so the network judges
// it and its doomed operation fails no one else's transaction. The items are checked at most
// MaxBatchOperations at a time (checkChunks), the chunks concurrently (o.each): an event may carry
// several batches' worth (Settings.TransactionsPerInvocation), and one getLedgerEntries request
// holds at most 200 keys (a chunk's trustlines, then its missing accounts: internal/stellar's
// readDestinations). A chunk whose check fails keeps all its items.
func (o *Orchestrator) checkDestinations(ctx context.Context, items []Record, refused func(Record)) []Record {
	if len(items) < 2 {
		return items
	}
	codes := make([]string, len(items))
	chunks := checkChunks(items)
	o.each(len(chunks), func(c int) {
		reqs := make([]Request, len(chunks[c]))
		for j, i := range chunks[c] {
			reqs[j] = items[i].Request
		}
		got, err := o.Batches.CheckDestinations(ctx, reqs)
		if err != nil || len(got) != len(reqs) {
			o.log().WarnContext(ctx, "checking a batch's destinations failed; building it unchecked", "keys", len(reqs), "err", err)
			return
		}
		for j, i := range chunks[c] {
			codes[i] = got[j]
		}
	})
	var kept []Record
	for i, rec := range items {
		if codes[i] != "" {
			o.log().InfoContext(ctx, "destination refused by the check; the transfer runs alone", "storeKey", rec.StoreKey, "code", codes[i])
			refused(rec)
			continue
		}
		kept = append(kept, rec)
	}
	return kept
}

// checkChunks splits the indexes of items into chunks of at most MaxBatchOperations for the
// destination check, every payment to one line (destination account, the wallet's scope, and
// asset: FormBatches's) in the same chunk and in the items' order: the check counts a line's
// earlier payments in the call before judging the next (internal/stellar's judgeDestination),
// and the event's batches, which pay a line once each, land in the same ledger or the next, so a
// payment counted apart from the others to its line would fail its whole batch when they fill
// it. Only a line of more than MaxBatchOperations payments spans chunks, its first
// MaxBatchOperations together (an event's batches pay it at most k times).
func checkChunks(items []Record) [][]int {
	type line struct{ account, asset string }
	var order []line
	byLine := map[line][]int{}
	for i, rec := range items {
		l := line{rec.Request.Wallet().Scope(), rec.Request.Asset}
		if _, ok := byLine[l]; !ok {
			order = append(order, l)
		}
		byLine[l] = append(byLine[l], i)
	}
	var chunks [][]int
	var cur []int
	for _, l := range order {
		idx := byLine[l]
		if len(cur) > 0 && len(cur)+len(idx) > MaxBatchOperations {
			chunks, cur = append(chunks, cur), nil
		}
		for len(idx) > MaxBatchOperations {
			chunks, idx = append(chunks, idx[:MaxBatchOperations]), idx[MaxBatchOperations:]
		}
		cur = append(cur, idx...)
	}
	if len(cur) > 0 {
		chunks = append(chunks, cur)
	}
	return chunks
}

// runBatch takes the queued items of one batch and pays them with one transaction, answering
// each key's message by store key.
func (o *Orchestrator) runBatch(ctx context.Context, bs BatchStore, items []Record) map[string]Answer {
	answers := make(map[string]Answer, len(items))
	a := o.begin(ctx, Input{ClientKey: items[0].ClientKey, Request: items[0].Request, TraceID: items[0].TraceID})
	var cancel context.CancelFunc
	a.net, cancel = ctx, func() {}
	if dl, ok := ctx.Deadline(); ok {
		a.net, cancel = context.WithDeadline(ctx, dl.Add(-a.settings.DeadlineMargin))
	}
	defer cancel()

	// Take each key, conditional on its item as read: a key whose take fails (a cancel, a copy of
	// its message) drops out; its message is answered by reading the key again (RunQueued).
	took := make([]bool, len(items))
	tooks := make([]Record, len(items))
	lost := make([]*Answer, len(items))
	o.each(len(items), func(i int) {
		rec := items[i]
		next := a.taken(rec, o.Clock.Now())
		if err := ReplaceItem(ctx, o.Store, rec, next); err != nil {
			if isConflict(err) {
				d, rerr := o.RunQueued(ctx, QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
				lost[i] = &Answer{Delivery: d, Err: rerr}
			} else {
				lost[i] = &Answer{Delivery: DeliveryRetry, Err: storeUnavailable(err)}
			}
			return
		}
		took[i], tooks[i] = true, next
	})
	var taken []Record
	for i, rec := range items {
		if took[i] {
			taken = append(taken, tooks[i])
		} else {
			answers[rec.StoreKey] = *lost[i]
		}
	}
	if len(taken) < 2 {
		return o.runEachAlone(ctx, a, taken, answers) // a batch left with one key runs alone
	}

	// A vault short of the batch's sum pays the keys it covers; the others are answered there
	// (prepareBatch), and taken is what the envelope pays.
	env, taken, err := o.prepareBatch(ctx, a, taken, answers)
	if err == nil && len(taken) < 2 {
		return o.runEachAlone(ctx, a, taken, answers) // the vault covers one key: it runs alone
	}
	ops := make([]BatchOp, len(taken))
	for i, rec := range taken {
		ops[i] = BatchOp{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID}
	}
	if _, mistake := errors.AsType[*ValidationError](err); mistake {
		// A request the ledger refuses as the client's mistake (an asset no longer served): which
		// one the batch's error does not say, and requeued together they would meet it again at
		// every delivery. Each runs alone instead: its own Prepare refuses only the faulty one,
		// stored as its rejection (rejectQueued), and pays the others.
		o.log().WarnContext(ctx, "a batch was refused as a client's mistake; its keys run alone", "keys", len(taken), "err", err)
		return o.runEachAlone(ctx, a, taken, answers)
	}
	if err != nil {
		if code := underfundedCode(err); code != "" {
			o.pageUnderfunded(ctx, taken[0], code, fmt.Sprintf("a batch of %d refused before sending: %v", len(taken), err))
		}
		// Nothing was built or sent: every key is queued again, each alone.
		return o.requeueEach(ctx, taken, prepareFailure(err), answers)
	}
	now := o.Clock.Now()
	// No TTL until no key names it unsettled (ReleaseBatch; doc.go, "How long a batch item lives").
	b := BatchEnvelope{Envelope: env, Ops: ops, Version: 1, CreatedAt: now}
	if err := o.putBatch(ctx, bs, b); err != nil {
		o.Ledger.Done(ctx, env)
		o.releaseBatch(ctx, bs, b, nil, a.settings.KeyTTL) // it may have been written, its answer lost
		return o.requeueEach(ctx, taken, storeUnavailable(err), answers)
	}
	attached := make([]Record, len(taken))
	for i, rec := range taken {
		attached[i] = BatchAttached(rec, env, BatchRef{Index: i, Size: len(taken)}, now)
	}
	if err := ReplaceAllItems(ctx, bs, taken, attached); err != nil {
		if _, ok := errors.AsType[*BatchConditionError](err); ok {
			// A key was taken over meanwhile: nothing is sent and nothing names the envelope (its
			// TTL starts once the keys read back so: a transaction whose answer was lost and that a
			// take-over followed reads back as not ours).
			o.Ledger.Done(ctx, env)
			o.releaseBatch(ctx, bs, b, nil, a.settings.KeyTTL)
			return o.requeueEach(ctx, taken, &InProgressError{RetryAfter: time.Second}, answers)
		}
		// Unknown fate: nothing is sent; applied, every key names the envelope and a take-over
		// re-sends it; not applied, none does. The keys are left to their lease.
		o.log().ErrorContext(ctx, "attaching a batch failed; its keys are left to their lease", "innerHash", env.InnerHash, "keys", len(taken), "err", err)
		for _, rec := range taken {
			answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: storeUnavailableHeld(err)}
		}
		return answers
	}
	if err := o.hook(ctx, StepAttached, attached[0]); err != nil {
		for _, rec := range attached {
			answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: err}
		}
		return answers
	}

	f := o.awaitBatch(ctx, a, b, attached[0], false)
	b, env = f.batch, f.batch.Envelope
	if f.died != nil {
		for _, rec := range attached {
			answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: f.died}
		}
		return answers
	}
	switch {
	case f.refused != nil || f.neverSent:
		var why error = &UnavailableError{Code: CodeNetworkUnavailable, Detail: "the Stellar network could not be reached; nothing was submitted"}
		if f.refused != nil {
			refusal := refused(*f.refused, env)
			if isUnderfunded(refusal) {
				o.pageUnderfunded(ctx, attached[0], refusal.Code, "the network refused a batch's first send: "+f.refused.Code)
			}
			why = refusal
		}
		requeued, err := RequeueRefusedAfter(ctx, bs, attached, CodeSubmissionFailed, why, o.Clock.Now())
		if requeued {
			// Decided: no item names the envelope, so nobody can send it again. Otherwise a
			// taker may send it again (or will, once the leases end) and it can still land, so
			// its channel stays leased rather than go to a batch built on its sequence number.
			o.Ledger.Done(ctx, env)
			o.releaseBatch(ctx, bs, b, keysOf(attached), a.settings.KeyTTL)
		}
		for _, rec := range attached {
			switch {
			case requeued:
				answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: why}
			case err != nil:
				answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: storeUnavailableHeld(err)}
			default:
				// A key was taken over and its taker sends the envelope again: the refusal no
				// longer says "nothing moved", and the keys still held were parked in doubt.
				answers[rec.StoreKey] = Answer{Delivery: DeliveryDone, Err: &InDoubtError{FailingCode: CodeSubmissionFailed, RetryAfter: o.inDoubtRetryAfter(a, env)}}
			}
			o.finished(ctx, rec, answers[rec.StoreKey].Err)
		}
		return answers
	case f.lk == nil:
		for _, rec := range attached {
			err := o.settleInDoubt(ctx, a, rec, f.failing)
			answers[rec.StoreKey] = Answer{Delivery: DeliveryDone, Err: err}
			o.finished(ctx, rec, err)
		}
		return answers
	}
	judged := make([]Answer, len(attached))
	wrote := make([]bool, len(attached))
	o.each(len(attached), func(i int) {
		rec := attached[i]
		s, v, err := o.judgeBatched(ctx, rec, b, *f.lk, a.settings.KeyTTL)
		if err != nil {
			o.log().ErrorContext(ctx, "settling a batched key failed after the ledger decided", "storeKey", rec.StoreKey, "err", err)
		}
		wrote[i] = err == nil && v != VerdictUndecided
		out, _, answer := batchAnswer(rec, s, v, *f.lk, err, o.Clock.Now())
		judged[i] = o.answerOf(ctx, rec, out, answer)
	})
	var written []string
	for i, rec := range attached {
		answers[rec.StoreKey] = judged[i]
		if wrote[i] {
			written = append(written, rec.StoreKey)
		}
	}
	o.releaseBatch(ctx, bs, b, written, a.settings.KeyTTL)
	return answers
}

// releaseBatch is ReleaseBatch of b, whose keys in written the caller has just decided; a failure
// is logged and leaves b without a TTL (it outlives its keys, which is safe).
func (o *Orchestrator) releaseBatch(ctx context.Context, bs BatchStore, b BatchEnvelope, written []string, ttl time.Duration) {
	if _, err := ReleaseBatch(ctx, bs, b, written, o.Clock.Now(), ttl); err != nil {
		o.log().WarnContext(ctx, "starting a decided batch item's TTL failed; it is kept", "innerHash", b.Envelope.InnerHash, "err", err)
	}
}

// keysOf is the store keys of recs.
func keysOf(recs []Record) []string {
	keys := make([]string, len(recs))
	for i, rec := range recs {
		keys[i] = rec.StoreKey
	}
	return keys
}

// runEachAlone runs held, keys this batch took (in_flight under a's lease), each on the
// one-transfer path (execute) under a sibling of a (the same lease owner, lease and budget, its
// own counters), concurrently unless o.Serial, and answers each as RunQueued would.
func (o *Orchestrator) runEachAlone(ctx context.Context, a *attempt, held []Record, answers map[string]Answer) map[string]Answer {
	got := make([]Answer, len(held))
	o.each(len(held), func(i int) {
		sib := *a
		sib.freed, sib.provenDead, sib.lookups, sib.probes = "", false, 0, 0
		sib.in = Input{ClientKey: held[i].ClientKey, Request: held[i].Request, TraceID: held[i].TraceID}
		sib.key = held[i].StoreKey
		out, _, err := o.execute(ctx, &sib, held[i])
		got[i] = o.answerOf(ctx, held[i], out, err)
	})
	for i, rec := range held {
		answers[rec.StoreKey] = got[i]
	}
	return answers
}

// each runs f(0) to f(n-1), concurrently (o.parallel) unless o.Serial, and returns once all
// have: the takes and the per-key writes of a batch are one conditional write each, issued
// together (doc.go, "Batches": "one conditional write per key, issued concurrently"). A panic in
// one f is recovered in its goroutine and raised again, once all have returned, in the caller's
// (as *runPanic, with the stack where it was raised), so the caller's recoverRun answers the
// batch's messages rather than the process ending.
func (o *Orchestrator) each(n int, f func(i int)) {
	if o.Serial {
		for i := range n {
			f(i)
		}
		return
	}
	var mu sync.Mutex
	var first *runPanic
	fs := make([]func(), n)
	for i := range n {
		fs[i] = func() {
			defer func() {
				if v := recover(); v != nil {
					mu.Lock()
					if first == nil {
						first = asRunPanic(v)
					}
					mu.Unlock()
				}
			}()
			f(i)
		}
	}
	o.parallel(fs)
	if first != nil {
		panic(first)
	}
}

// runPanic is a panic recovered in one of a batch run's goroutines: its value and the stack where
// it was raised.
type runPanic struct {
	value any
	stack []byte
}

func asRunPanic(v any) *runPanic {
	if p, ok := v.(*runPanic); ok {
		return p
	}
	return &runPanic{value: v, stack: debug.Stack()}
}

// recoverRun, deferred at the top of one of RunQueuedBatch's goroutines (a message alone or a
// batch), turns a panic there into failed(err) for its messages: DeliveryRetry with
// INTERNAL_ERROR, so each is delivered again and its item decides what the next delivery does (a
// queued item runs; one held in_flight, a batch's envelope perhaps sent, waits for its lease and
// is taken over, the same envelope re-sent and judged, or the sweep judges it). Nothing is written
// here: the state the panic left is unknown. The log holds the value's type, its text only when it
// is a runtime error (the code's fault: a nil dereference, an index out of range, never a value
// the code held, which could be a secret), and the stack (function names and offsets).
func (o *Orchestrator) recoverRun(ctx context.Context, failed func(error)) {
	v := recover()
	if v == nil {
		return
	}
	p := asRunPanic(v)
	attrs := []any{"panicType", fmt.Sprintf("%T", p.value), "stack", string(p.stack)}
	if re, ok := p.value.(runtime.Error); ok {
		attrs = append(attrs, "panic", re.Error())
	}
	o.log().ErrorContext(ctx, "a batch run panicked; its messages will be delivered again", attrs...)
	failed(&UnavailableError{Code: CodeInternalError, RetryAfter: time.Second,
		Detail: "the run failed unexpectedly; a transfer under this key may already be under way: it is retried and never runs twice"})
}

// putBatch writes b, recognising a write of its own whose answer was lost (the same inner hash
// and operations read back).
func (o *Orchestrator) putBatch(ctx context.Context, bs BatchStore, b BatchEnvelope) error {
	err := bs.PutBatch(ctx, b)
	if err == nil {
		return nil
	}
	got, gerr := bs.GetBatch(ctx, b.Envelope.InnerHash)
	if gerr == nil && got.Envelope.XDR == b.Envelope.XDR && len(got.Ops) == len(b.Ops) {
		for i := range got.Ops {
			if got.Ops[i] != b.Ops[i] {
				return err
			}
		}
		return nil
	}
	return err
}

// requeueEach queues every key of held (taken, nothing sent for them) again, each alone,
// conditional on its item as taken, and answers each DeliveryRetry with why; held back for why's
// Retry-After when why pages (RequeuedAfter: a Prepare refused for a shortfall).
func (o *Orchestrator) requeueEach(ctx context.Context, held []Record, why error, answers map[string]Answer) map[string]Answer {
	for _, rec := range held {
		if err := ReplaceItem(ctx, o.Store, rec, RequeuedAfter(rec, o.Clock.Now(), why)); err != nil && !isConflict(err) {
			o.log().WarnContext(ctx, "requeueing a key of an unsent batch failed; its lease will expire", "storeKey", rec.StoreKey, "err", err)
		}
		answers[rec.StoreKey] = Answer{Delivery: DeliveryRetry, Err: why}
		o.finished(ctx, rec, why)
	}
	return answers
}

// finished reports the run of rec's message that ended with err to the observer, as RunQueued
// reports each run of a message alone: so a batch's answers count in the metrics as its keys'
// runs alone would, and a shortfall on the paying or the service's side (VAULT_UNDERFUNDED,
// FEE_ACCOUNT_UNDERFUNDED, SERVICE_SIDE_FAILURE) reaches the alarms on
// transfer_orchestration_failure_total that page for it (template.yaml), which read no log line.
func (o *Orchestrator) finished(ctx context.Context, rec Record, err error) {
	o.observer().Finished(ctx, report(rec.Request.OperationType, Outcome{}, err, 0))
}

// answerOf is the answer to the message of rec once its run ended with out and err, as RunQueued
// gives it: an item queued again (nothing moved) is delivered again, anything else is done. The
// call's Report goes to the observer.
func (o *Orchestrator) answerOf(ctx context.Context, rec Record, out Outcome, err error) Answer {
	o.observer().Finished(ctx, report(rec.Request.OperationType, out, err, 0))
	cur, gerr := o.Store.Get(ctx, rec.StoreKey)
	switch {
	case gerr != nil && !errors.Is(gerr, ErrNotFound):
		return Answer{Delivery: DeliveryRetry, Err: storeUnavailable(gerr)}
	case gerr == nil && cur.ClaimID == rec.ClaimID && cur.Status == StatusQueued:
		return Answer{Delivery: DeliveryRetry, Err: err}
	}
	return Answer{Delivery: DeliveryDone, Err: err}
}

// parallel runs fs at once and returns once all have returned (Orchestrator.Parallel): one alone
// on the caller's goroutine, more through o.Parallel when set, else a goroutine each.
func (o *Orchestrator) parallel(fs []func()) {
	switch {
	case len(fs) == 0:
	case len(fs) == 1:
		fs[0]()
	case o.Parallel != nil:
		o.Parallel(fs...)
	default:
		var wg sync.WaitGroup
		for _, f := range fs {
			wg.Go(f)
		}
		wg.Wait()
	}
}
