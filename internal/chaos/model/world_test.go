package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The shared state of one run: the key's item (an in-memory store with the conditional semantics
// of internal/dynamo), the envelopes on the model network, and the clock. Only one actor runs at
// a time (run_test.go), and every hand-over is a channel operation, so no lock is needed.

// t0 is the model's start; a tick moves the clock by tickStep, past every lease (Timeout +
// DeadlineMargin, 47 s by default) and budget begun before it.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const tickStep = time.Minute

// The ledger facts every answer carries: the envelopes are built at submittedLedger; a proof of
// death comes with a ledger closed after maxTime and history back to ledger 1.
const (
	submittedLedger = 100
	landedLedger    = 102
)

// fate is what the model network did with an envelope.
type fate int

const (
	// built: signed, not on the network (never sent, or every send was refused). A later send of
	// the same envelope may still be accepted.
	built fate = iota
	// queued: accepted by a send and not yet decided: it can still land.
	queued
	// landed: included in a ledger with SUCCESS.
	landed
	// dead: a ledger closed after its maxTime without it; it can never land.
	dead
	// failed: included FAILED (the batch models): its sequence number is consumed, nothing of it
	// moved, and it can never land.
	failed
)

func (f fate) String() string {
	return [...]string{"built", "queued", "landed", "dead", "failed"}[f]
}

type envelope struct {
	name string
	env  transfer.Envelope
	fate fate
	// ops are the store keys the envelope pays, one operation each, in order (the batch models;
	// nil for the one-transfer envelopes the real code builds).
	ops []string
	// failure says why a failed envelope failed: the store key whose operation failed on the
	// destination's side, or failedSource.
	failure string
}

type world struct {
	items map[string]transfer.Record
	envs  map[string]*envelope // by inner hash
	order []string             // inner hashes in the order built
	ticks int
	// holds decides whether a conditional write's condition holds for the stored item.
	holds func(transfer.Condition, transfer.Record) bool
	// violations found by the writes themselves (a delete of an item that can still land); the
	// state invariants are checked by check.
	violations []violation
	// batch: the invariants are checked per key and per operation (batchCheck).
	batch bool
	// batches are the batch items PutBatch wrote, by inner hash.
	batches map[string]transfer.BatchEnvelope
}

type violation struct {
	kind   string // a short name, one per invariant
	detail string
}

func newWorld() *world {
	return &world{items: map[string]transfer.Record{}, envs: map[string]*envelope{}, holds: conditionHolds, batches: map[string]transfer.BatchEnvelope{}}
}

func (w *world) now() time.Time { return t0.Add(time.Duration(w.ticks) * tickStep) }

// clone copies a record with its pointed-to parts, so no two copies share an envelope.
func clone(r transfer.Record) transfer.Record {
	if r.Envelope != nil {
		e := *r.Envelope
		r.Envelope = &e
	}
	if r.Result != nil {
		res := *r.Result
		res.ResultCodes = append([]string(nil), res.ResultCodes...)
		r.Result = &res
	}
	if r.Audit != nil {
		a := *r.Audit
		r.Audit = &a
	}
	if r.Batch != nil {
		b := *r.Batch
		r.Batch = &b
	}
	return r
}

// --- the store ---

func (w *world) claim(rec transfer.Record, now time.Time) (transfer.Record, bool) {
	if cur, ok := w.items[rec.StoreKey]; ok && !cur.Expired(now) {
		return clone(cur), false
	}
	w.items[rec.StoreKey] = clone(rec)
	return clone(rec), true
}

func (w *world) get(key string) (transfer.Record, error) {
	cur, ok := w.items[key]
	if !ok {
		return transfer.Record{}, fmt.Errorf("model: get %q: %w", key, transfer.ErrNotFound)
	}
	return clone(cur), nil
}

func (w *world) replace(next transfer.Record, cond transfer.Condition) error {
	cur, ok := w.items[next.StoreKey]
	if !ok || !w.holds(cond, cur) {
		return fmt.Errorf("model: replace: %w", transfer.ErrConditionFailed)
	}
	w.items[next.StoreKey] = clone(next)
	return nil
}

func (w *world) delete(key string, cond transfer.Condition) error {
	cur, ok := w.items[key]
	if !ok || !w.holds(cond, cur) {
		return fmt.Errorf("model: delete: %w", transfer.ErrConditionFailed)
	}
	delete(w.items, key)
	if cur.Envelope != nil {
		if e := w.envs[cur.Envelope.InnerHash]; e != nil && (e.fate == queued || e.fate == landed) {
			w.violations = append(w.violations, violation{"delete-live",
				fmt.Sprintf("deleted the item (%s) whose envelope %s is %s", summary(cur, w), e.name, e.fate)})
		}
	}
	return nil
}

func (w *world) list(match func(transfer.Record) bool) []transfer.Record {
	var out []transfer.Record
	for _, r := range w.items {
		if match(r) {
			out = append(out, clone(r))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StoreKey < out[j].StoreKey })
	return out
}

// --- the network ---

// build signs a new envelope named name (the actor's name and its count of envelopes, so a name
// depends only on that actor's history).
func (w *world) build(name string, maxTime time.Time) transfer.Envelope {
	env := transfer.Envelope{
		XDR: "xdr-" + name, InnerHash: hashOf(name), MaxTime: maxTime.Unix(),
		SubmittedLedger: submittedLedger, Channel: "GCHANNEL", FeeStroops: 100,
	}
	w.envs[env.InnerHash] = &envelope{name: name, env: env, fate: built}
	w.order = append(w.order, env.InnerHash)
	return env
}

func (w *world) envelope(env transfer.Envelope) *envelope {
	e := w.envs[env.InnerHash]
	if e == nil {
		panic(fmt.Sprintf("model: an envelope the model did not build: %s", env.InnerHash))
	}
	return e
}

// Send answers, by the envelope's fate: built -> accepted (queued) or refused before inclusion
// (TRY_AGAIN_LATER, still built); queued -> DUPLICATE; landed -> TRY_AGAIN_LATER (stellar-core
// bans an applied transaction while the last closed ledger is N..N+8: internal/stellarsim/doc.go,
// "Modelled"); dead -> ERROR txTOO_LATE.
var sendVariants = map[fate][]string{
	built:  {"accepted", "refused"},
	queued: {"duplicate"},
	landed: {"banned"},
	dead:   {"too late"},
}

func (w *world) send(env transfer.Envelope, variant string) transfer.SendResult {
	e := w.envelope(env)
	res := transfer.SendResult{LatestLedger: submittedLedger, LatestLedgerCloseTime: time.Unix(env.MaxTime-10, 0).UTC()}
	switch variant {
	case "accepted":
		e.fate = queued
		res.Status = transfer.SendPending
	case "refused", "banned":
		res.Status = transfer.SendTryAgainLater
	case "duplicate":
		res.Status = transfer.SendDuplicate
	case "too late":
		res.Status, res.Code = transfer.SendError, "txTOO_LATE"
	default:
		panic("model: send variant " + variant)
	}
	return res
}

// pruned adds, for built and queued envelopes, the answer of a ledger past maxTime whose history
// no longer reaches the submission.
func pruned(vs []string) []string {
	return append(vs[:len(vs):len(vs)], "expired, history pruned")
}

// Lookup answers, by the envelope's fate: built or queued -> not found yet (no ledger past
// maxTime), or proven dead (a ledger past maxTime, history back to the submission); queued may
// also land; landed -> SUCCESS; dead -> proven dead. A fate decided here is kept.
var lookupVariants = map[fate][]string{
	built:  {"pending", "proven dead"},
	queued: {"pending", "landed", "proven dead"},
	landed: {"landed"},
	dead:   {"proven dead"},
}

func (w *world) lookup(env transfer.Envelope, variant string) transfer.Lookup {
	e := w.envelope(env)
	lk := transfer.Lookup{Status: transfer.LookupNotFound, OldestLedger: 1}
	switch variant {
	case "pending":
		lk.LatestLedger, lk.LatestLedgerCloseTime = submittedLedger+1, time.Unix(env.MaxTime-5, 0).UTC()
	case "proven dead":
		e.fate = dead
		lk.LatestLedger, lk.LatestLedgerCloseTime = landedLedger+10, time.Unix(env.MaxTime+1, 0).UTC()
	case "expired, history pruned":
		// A ledger closed after maxTime, but the history no longer reaches the submission: the
		// envelope can no longer land, and the ledger cannot prove it never did (only a forced
		// discard releases it; the model has it not landed).
		e.fate = dead
		lk.LatestLedger, lk.LatestLedgerCloseTime, lk.OldestLedger = landedLedger+10, time.Unix(env.MaxTime+1, 0).UTC(), submittedLedger+5
	case "landed":
		e.fate = landed
		lk.Status, lk.Hash, lk.Ledger, lk.FeeChargedStroops = transfer.LookupSuccess, env.InnerHash, landedLedger, 100
		lk.LatestLedger, lk.LatestLedgerCloseTime = landedLedger+1, time.Unix(env.MaxTime-1, 0).UTC()
	default:
		panic("model: lookup variant " + variant)
	}
	return lk
}

// hashOf is the inner hash of the envelope named name: 64 hex characters.
func hashOf(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

// --- the invariants (README.md, "What the service guarantees") ---

// check returns the violations of the state invariants, and those the writes found.
func (w *world) check() []violation {
	if w.batch {
		return append(append([]violation(nil), w.violations...), w.batchCheck()...)
	}
	out := append([]violation(nil), w.violations...)
	var live, done []string
	for _, h := range w.order {
		switch e := w.envs[h]; e.fate {
		case queued:
			live = append(live, e.name)
		case landed:
			done = append(done, e.name)
		}
	}
	if len(live) > 1 {
		out = append(out, violation{"two-live", "envelopes " + strings.Join(live, " and ") + " can both still land"})
	}
	if len(done) > 1 {
		out = append(out, violation{"two-landed", "envelopes " + strings.Join(done, " and ") + " both landed"})
	}
	// A cancelled item never has an envelope that can land: it holds none and no lease, and no
	// envelope of the key is queued or landed.
	for _, r := range w.items {
		if r.Status != transfer.StatusCancelled {
			continue
		}
		if r.Envelope != nil || r.LeaseOwner != "" || len(live)+len(done) > 0 {
			out = append(out, violation{"cancelled-live", fmt.Sprintf("the item is cancelled (%s) while envelopes %s can land or landed",
				summary(r, w), strings.Join(append(live, done...), " and "))})
		}
	}
	// Every envelope that can still land or has landed is the one the key's item holds: otherwise
	// the next call builds another.
	for _, h := range w.order {
		e := w.envs[h]
		if e.fate != queued && e.fate != landed {
			continue
		}
		held := false
		for _, r := range w.items {
			held = held || r.Envelope != nil && r.Envelope.InnerHash == h
		}
		if !held {
			out = append(out, violation{"orphan", fmt.Sprintf("envelope %s is %s but no item holds it (item: %s)", e.name, e.fate, w.itemSummary())})
		}
	}
	return out
}

// cancelTrue checks a cancel's answer against the item when the actor returns: "cancelled" needs
// the item cancelled, "not cancellable" an item past queued that is not cancelled.
func (w *world) cancelTrue(who string, res result) *violation {
	cur, ok := w.items[storeKey]
	switch {
	case res.cancelled && (!ok || cur.Status != transfer.StatusCancelled):
		return &violation{"false-cancel", fmt.Sprintf("%s answered cancelled, but the item is %s", who, w.itemSummary())}
	case res.notCancelled && (!ok || cur.Status == transfer.StatusCancelled || cur.Status == transfer.StatusQueued):
		return &violation{"false-cancel", fmt.Sprintf("%s answered not cancellable, but the item is %s", who, w.itemSummary())}
	}
	return nil
}

// answerTrue checks an answer that names a landed transaction.
func (w *world) answerTrue(who, hash string) *violation {
	e := w.envs[hash]
	switch {
	case e == nil:
		return &violation{"false-answer", fmt.Sprintf("%s answered 200 with %s, an envelope the model never built", who, hash)}
	case e.fate != landed:
		return &violation{"false-answer", fmt.Sprintf("%s answered 200 with %s, which is %s", who, e.name, e.fate)}
	}
	return nil
}

// --- describing it ---

func (w *world) envName(hash string) string {
	if e := w.envs[hash]; e != nil {
		return e.name
	}
	if hash == "" {
		return "-"
	}
	return hash[:8]
}

func (w *world) itemSummary() string {
	var parts []string
	for _, r := range w.list(func(transfer.Record) bool { return true }) {
		parts = append(parts, summary(r, w))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// summary is a record in one line: incarnation, status, version, owner, envelope.
func summary(r transfer.Record, w *world) string {
	var b strings.Builder
	if id := incarnation(r); id != "" {
		fmt.Fprintf(&b, "claim %s ", id)
	}
	fmt.Fprintf(&b, "%s v%d", r.Status, r.Version)
	if r.LeaseOwner != "" {
		exp := ""
		if r.LeaseExpired(w.now()) {
			exp = " (expired)"
		}
		fmt.Fprintf(&b, " owner %s%s", r.LeaseOwner, exp)
	}
	if r.Envelope != nil {
		fmt.Fprintf(&b, " envelope %s", w.envName(r.Envelope.InnerHash))
	}
	if r.Result != nil && r.Result.TransactionHash != "" {
		fmt.Fprintf(&b, " result %s", w.envName(r.Result.TransactionHash))
	}
	return b.String()
}

func (w *world) ledgerSummary() string {
	var parts []string
	for _, h := range w.order {
		e := w.envs[h]
		f := e.fate.String()
		if e.failure != "" {
			f += "(" + w.keyName(e.failure) + ")"
		}
		parts = append(parts, e.name+":"+f)
	}
	if len(parts) == 0 {
		return "no envelopes"
	}
	return strings.Join(parts, " ")
}

// stateKey is the shared state in canonical form, for the explorer's cache.
func (w *world) stateKey() string {
	var b strings.Builder
	keys := make([]string, 0, len(w.items))
	for k := range w.items {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		j, _ := json.Marshal(w.items[k])
		b.Write(j)
	}
	// Envelopes by name, not by the order they were built in: a name depends only on its
	// builder's history, and the order in which two actors built theirs changes nothing.
	names := make([]string, 0, len(w.envs))
	for _, e := range w.envs {
		names = append(names, fmt.Sprintf("%s=%d%s", e.name, e.fate, e.failure))
	}
	sort.Strings(names)
	fmt.Fprintf(&b, "|%s|t%d", strings.Join(names, ","), w.ticks)
	return b.String()
}
