package chaos

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/queue"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The async mode with batches (Config.BatchSizes; internal/transfer doc.go, "Batches"). The
// service is assembled with BATCH_SIZE at the largest of the sizes, so the wiring gives the
// orchestrator its batch ledger; each wave then runs under one of the sizes, picked by the seed
// (a redeploy changing TransfersPerTransaction while keys are queued, in flight or in doubt): at
// 1 SubmitterFunction is queue.Submitter, one goroutine and one caller per record (async.go); above
// 1 it is queue.BatchSubmitter over the orchestrator's RunQueuedBatch, its events carrying up to
// BATCH_SIZE messages gathered for the batching window. Every fault of the campaign reaches the
// batched submissions: the DynamoDB writes of the batch item, the attach and the together-requeue
// (TransactWriteItems) and the batch item's TTL, each refused, throttled or answer-lost; the sends
// and look-ups of the batch's envelope; crashes at every step, which kill the whole invocation
// (every later step and request of its event); stale writers holding an attach; lost destination
// checks; and the queue's loss, copies, reordering and lateness.
//
// The batched invocation runs its messages and batches one after the other (Orchestrator.Serial):
// its steps then share one place on the virtual clock and one caller's dice. The clock could lend
// its place to concurrent goroutines (Orchestrator.Parallel: vclock.Parallel), but the caller
// cannot be shared: its dice (a math/rand source) and its applied flag (stale.go reads it after
// the caller's own write) belong to one goroutine, and the orchestrator's goroutines carry the
// invocation's context, so its one caller. Invocations still run beside each other, beside the
// callers, the sweep and the operators.

// batchingWindowInCampaign is SubmitterFunction's MaximumBatchingWindowInSeconds (template.yaml):
// a batched event source that received fewer messages than BATCH_SIZE waits this long for more.
const batchingWindowInCampaign = 2 * time.Second

// batchRun is a batched run's state.
type batchRun struct {
	sizes []int
	dice  *rand.Rand // the waves' choice of size, apart from the fault dice
	// size is the current wave's BATCH_SIZE (Settings.BatchSize, read at every RunQueuedBatch).
	size    atomic.Int64
	handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

	mu sync.Mutex
	// letGo are the envelopes keys let go of (requeued, released or rebuilt from an in_flight
	// or in_doubt item), each with who and when, by inner hash; judgeBatches holds each dead.
	letGo map[string][]string
	// ttlBroken lists each batch item given its TTL while a key named it unsettled.
	ttlBroken []string
}

// batchSizeEnv is the service's BATCH_SIZE: the largest of cfg.BatchSizes in the async mode, ""
// (the default, 1) otherwise.
func batchSizeEnv(cfg Config) string {
	if !cfg.Async || len(cfg.BatchSizes) == 0 {
		return ""
	}
	return strconv.Itoa(slices.Max(cfg.BatchSizes))
}

// startBatches sets a batched run up (Config.BatchSizes with a size above 1) once the rig's
// orchestrator, store and queue are assembled; nothing otherwise.
func (r *rig) startBatches() error {
	if len(r.cfg.BatchSizes) == 0 || slices.Max(r.cfg.BatchSizes) <= 1 {
		return nil
	}
	if r.orch.Batches == nil {
		return errors.New("chaos: BATCH_SIZE above 1 but the wiring built no batch ledger")
	}
	b := &batchRun{sizes: r.cfg.BatchSizes, dice: rand.New(rand.NewPCG(r.cfg.Seed, 1<<44)), letGo: map[string][]string{}}
	b.size.Store(1)
	base := r.orch.Settings
	r.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		if base != nil {
			s = base()
		}
		s.BatchSize = int(b.size.Load())
		return s
	}
	r.orch.Serial = true
	r.orch.Batches = &faultyBatches{BatchLedger: r.orch.Batches, r: r}
	b.handler = queue.BatchSubmitter(campaignBatchRunner{r}, queue.Visibility{Changer: r.queue, URL: "https://sqs.chaos.invalid/transfers"}, nil)
	r.batches = b
	r.held.batches = b
	return nil
}

// pickBatchSize sets the wave's BATCH_SIZE from the run's sizes and counts it.
func (r *rig) pickBatchSize() {
	if r.batches == nil {
		return
	}
	n := r.batches.sizes[r.batches.dice.IntN(len(r.batches.sizes))]
	r.batches.size.Store(int64(n))
	r.events.add(fmt.Sprintf("waves_at_batch_size_%03d", n))
}

// batched reports whether SubmitterFunction batches now (the wave's BATCH_SIZE above 1), and the
// size.
func (r *rig) batched() (int, bool) {
	if r.batches == nil {
		return 1, false
	}
	n := int(r.batches.size.Load())
	return n, n > 1
}

// eventSize is how many messages an event of SubmitterFunction carries at most now: BATCH_SIZE
// when batched (template.yaml's batched mapping), else submitterMapping's BatchSize.
func (r *rig) eventSize() int {
	if n, ok := r.batched(); ok {
		return n
	}
	batch, _ := r.submitterMapping()
	return batch
}

// receiveEvent is one event of the event source mapping: up to eventSize messages; when batched
// and short of BATCH_SIZE, it waits the batching window (from p, a participant of the clock)
// and takes what became visible meanwhile.
func (r *rig) receiveEvent(ctx context.Context) events.SQSEvent {
	size := r.eventSize()
	ev := r.queue.receive(size)
	if _, ok := r.batched(); ok && len(ev.Records) > 0 && len(ev.Records) < size {
		_ = r.clock.Sleep(ctx, batchingWindowInCampaign)
		ev.Records = append(ev.Records, r.queue.receive(size-len(ev.Records)).Records...)
	}
	return ev
}

// campaignBatchRunner is the queue.BatchRunner of the campaign's batched SubmitterFunction: the
// orchestrator's RunQueuedBatch with one caller (its fault and crash dice) for the invocation in
// ctx.
type campaignBatchRunner struct{ r *rig }

func (cr campaignBatchRunner) RunQueuedBatch(ctx context.Context, msgs []transfer.QueueMessage) []transfer.Answer {
	inv := invocationOf(ctx)
	h := fnv.New64a()
	for _, m := range msgs {
		_, _ = h.Write([]byte(m.StoreKey + "\x00" + m.ClaimID + "\x00"))
	}
	c := &caller{name: fmt.Sprintf("submitter %d (an event of %d)", inv.n, len(msgs)), faulty: inv.faulty, inv: inv,
		rng: rand.New(rand.NewPCG(cr.r.cfg.Seed, 1<<45+uint64(inv.n)<<20^h.Sum64()))}
	answers := cr.r.orch.RunQueuedBatch(withCaller(ctx, c), msgs)
	cr.r.events.add("batched_events")
	crashed := 0
	for _, a := range answers {
		if errors.Is(a.Err, errCrash) {
			crashed++
		}
	}
	// One step crashed the invocation; its event's other messages died with it.
	cr.r.events.addN("delivery_killed_with_its_invocation", crashed-1)
	for i, a := range answers {
		cr.r.events.add("delivery_" + string(a.Delivery))
		switch {
		case errors.Is(a.Err, errCrash):
			cr.r.events.add("delivery_crashed")
		case a.Delivery == transfer.DeliveryRetry:
			cr.r.events.add("delivery_retry_" + retryCause(a.Err))
		}
		if inv.seen != nil && i < len(msgs) {
			inv.seen(msgs[i], a.Delivery, a.Err)
		}
	}
	return answers
}

// faultyBatches is the orchestrator's batch ledger with the campaign's faults and records: a
// destination check lost like a look-up (the batch is then built unchecked), nothing from an
// invocation that died, and every batch's hashes, operations and maxTime recorded as
// faultyLedger records a single envelope's.
type faultyBatches struct {
	transfer.BatchLedger
	r *rig
}

func (f *faultyBatches) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]string, error) {
	c := callerOf(ctx)
	if c.gone() {
		return nil, errCrash
	}
	if c.roll(f.r.ledger.lookupRate) {
		f.r.faults.add("check_destinations_lost")
		return nil, fmt.Errorf("%w: getLedgerEntries timed out", errInjected)
	}
	return f.BatchLedger.CheckDestinations(ctx, reqs)
}

func (f *faultyBatches) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	if callerOf(ctx).gone() {
		return transfer.Envelope{}, errCrash
	}
	env, err := f.BatchLedger.PrepareBatch(ctx, reqs, terms)
	if err != nil || len(reqs) == 0 {
		return env, err
	}
	f.r.events.add("batches_prepared")
	f.r.events.addN("batch_operations_prepared", len(reqs))
	f.r.ledger.prepared(env, reqs)
	return env, nil
}

// noteLetGo records that a write let go of the envelope whose inner hash the condition names
// (cond, the item as read, was in_flight or in_doubt with it; next has no envelope or another):
// a requeue, a release or a rebuild. The envelope must never land SUCCESS (judgeBatches).
func (b *batchRun) noteLetGo(inner, line string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.letGo[inner] = append(b.letGo[inner], line)
}

// letsGo reports whether a write from cond to next (nil: a delete) lets go of cond's envelope.
func letsGo(cond transfer.Condition, next *transfer.Record) bool {
	if cond.InnerHash == "" || (cond.Status != transfer.StatusInFlight && cond.Status != transfer.StatusInDoubt) {
		return false
	}
	if next == nil {
		return true
	}
	switch next.Status {
	case transfer.StatusReplayable, transfer.StatusRejected:
		return false // the envelope's own outcome (judge checks it on the ledger)
	}
	return next.Envelope == nil || next.Envelope.InnerHash != cond.InnerHash
}

// checkTTL holds the batch item rule after innerHash's item was given its TTL: no key may name
// the batch in_flight or in_doubt (transfer doc.go, "How long a batch item lives"). It reads
// without a caller, so no fault meets it.
func (s *heldStore) checkTTL(innerHash string) {
	ctx := context.Background()
	b, err := s.Store.GetBatch(ctx, innerHash)
	if err != nil {
		return
	}
	for i, op := range b.Ops {
		rec, err := s.Store.Get(ctx, op.StoreKey)
		if err != nil || rec.ClaimID != op.ClaimID || rec.Envelope == nil || rec.Envelope.InnerHash != innerHash {
			continue
		}
		if rec.Status == transfer.StatusInFlight || rec.Status == transfer.StatusInDoubt {
			s.batches.mu.Lock()
			s.batches.ttlBroken = append(s.batches.ttlBroken, fmt.Sprintf("batch %s: given its TTL at +%v while key %s (operation %d) names it %s",
				short(innerHash), s.clock.Now().Sub(s.t0), op.StoreKey, i, rec.Status))
			s.batches.mu.Unlock()
		}
	}
}

// ReplaceAll holds the write if the caller's dice say so (by its first key), then writes: a
// batch's attach or its keys' requeue together, traced per key.
func (s *heldStore) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	held, newer := false, false
	if len(writes) > 0 {
		held = s.hold(ctx, writes[0].Next.StoreKey, writes[0].Cond.ClaimID, false)
		newer = held && s.newIncarnation(writes[0].Next.StoreKey, writes[0].Cond.ClaimID)
	}
	unapplied(ctx)
	err := s.Store.ReplaceAll(ctx, writes)
	applied := s.applied(ctx, err)
	s.judge(held, newer, applied)
	if applied {
		for _, w := range writes {
			next, cond := w.Next, w.Cond
			s.count(next.StoreKey, next.Status, cond.Status)
			s.record(ctx, next.StoreKey, held, newer, "replace all (%d items) claim %s %s v%d owner %s env %s -> %s v%d owner %s env %s (%s)",
				len(writes), short(cond.ClaimID), cond.Status, cond.Version, short(cond.LeaseOwner), short(condHash(cond)), next.Status, next.Version,
				short(next.LeaseOwner), short(envHash(next)), answer(err))
			s.noteLetGo(ctx, next.StoreKey, cond, &next)
		}
	}
	return err
}

// ExpireBatch sets the batch item's TTL, then holds the rule that no key names it unsettled.
func (s *heldStore) ExpireBatch(ctx context.Context, innerHash string, expiresAt int64) error {
	unapplied(ctx)
	err := s.Store.ExpireBatch(ctx, innerHash, expiresAt)
	if s.applied(ctx, err) && s.batches != nil {
		s.events.add("batch_items_given_their_ttl")
		s.checkTTL(innerHash)
	}
	return err
}

// noteLetGo records a write that let go of cond's envelope (letsGo) with the batch run.
func (s *heldStore) noteLetGo(ctx context.Context, key string, cond transfer.Condition, next *transfer.Record) {
	if s.batches == nil || !letsGo(cond, next) {
		return
	}
	who := "?"
	if c := callerOf(ctx); c != nil {
		who = c.name
	}
	to := "deleted"
	if next != nil {
		to = string(next.Status)
	}
	s.batches.noteLetGo(cond.InnerHash, fmt.Sprintf("%s %s -> %s at +%v by %s", key, cond.Status, to, s.clock.Now().Sub(s.t0), who))
}

// judgeBatches holds the rules a batched run adds, per envelope and per batch item: every
// envelope a key let go of (requeued, released or rebuilt) never landed SUCCESS, and, when it
// did not land at all, can land no more (its maxTime passed, or its source's sequence number
// went past it); no batch item was given its TTL while a key named it unsettled.
func (r *rig) judgeBatches() []string {
	if r.batches == nil {
		return nil
	}
	b := r.batches
	b.mu.Lock()
	defer b.mu.Unlock()
	bad := slices.Clone(b.ttlBroken)
	received := map[string][2]any{}
	for _, e := range r.net.Envelopes() {
		if e.InnerHash != "" && e.Source != "" {
			received[e.InnerHash] = [2]any{e.Source, e.Sequence}
		}
	}
	now := r.clock.Now()
	hashes := make([]string, 0, len(b.letGo))
	for h := range b.letGo {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		why := b.letGo[h]
		tx, ok := r.net.Transaction(h)
		switch {
		case ok && tx.Status == "SUCCESS":
			bad = append(bad, fmt.Sprintf("envelope %s landed SUCCESS (ledger %d) after a key let go of it: %v", short(h), tx.Ledger, why))
		case ok:
			// FAILED: its sequence number is consumed and nothing of it moved.
		default:
			maxTime, known := r.ledger.maxTimeOf(h)
			if known && now.Unix() > maxTime {
				continue
			}
			src, sent := received[h]
			if !sent {
				continue // never reached the network, and nothing sends it after healing
			}
			acct, found := r.net.Account(src[0].(string))
			if !found || acct.Sequence < src[1].(int64) {
				bad = append(bad, fmt.Sprintf("envelope %s can still land (maxTime %d, its source's sequence %d below its %d) after a key let go of it: %v",
					short(h), maxTime, acct.Sequence, src[1].(int64), why))
			}
		}
	}
	return bad
}

// deauthorizeDuring, in a batched run, takes the trustline authorization of one wallet paid by
// wave w's keys away for a minute, at 1 to 6 s into the wave (while its batches are being
// checked, built and sent), in three waves of every ten: a key of that wallet meets
// op_not_authorized on chain, alone or in a batch that then lands FAILED (its destination check
// passed before, or was lost), and is rejected; its batch's other keys are requeued and paid by
// a later transaction. The authorization comes back before the next such wave.
func (r *rig) deauthorizeDuring(w int, wg *sync.WaitGroup) {
	if r.batches == nil || r.usdc.Code == "" {
		return
	}
	switch (w / r.cfg.Wave) % 10 {
	case 2, 4, 7:
	default:
		return
	}
	k := w + r.batches.dice.IntN(r.cfg.Wave)
	at := time.Duration(1000+r.batches.dice.IntN(5000)) * time.Millisecond
	wallet := r.walletOf(k)
	r.clock.Go(wg, func() {
		ctx := context.Background()
		_ = r.clock.Sleep(ctx, at)
		if err := r.net.SetTrustlineAuth(wallet, r.usdc, stellarsim.Unauthorized); err != nil {
			return
		}
		r.faults.add("destination_deauthorized")
		_ = r.clock.Sleep(ctx, time.Minute)
		_ = r.net.SetTrustlineAuth(wallet, r.usdc, stellarsim.Authorized)
	})
}
