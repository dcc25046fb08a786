package chaos

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// heldStore is the store every actor of the campaign writes through: the callers' orchestrator,
// the sweep and the operators. It holds a faulty caller's conditional writes back on
// the virtual clock, so that the read the write was built from goes stale: other callers meanwhile
// take the claim over, prove its envelope dead, release the key and claim it again, and the held
// write then meets a later incarnation of the key. Two kinds of hold:
//
//   - any Replace or Delete, with probability holdRate: for a random time up to maxHold, or (half
//     of them) until a new incarnation of the key appears and a few seconds more;
//   - a take-over (a Replace of an in_flight item that hands its lease to a new owner), with
//     probability takeOverRate: until a new incarnation appears, at most maxTakeOverHold.
//
// An incarnation is told apart by its ClaimID (internal/transfer, "Incarnations"), which every
// condition names. The hold counts what it did in stale: how many writes were held, how many went out
// while a newer incarnation held the key, and how many of those the store applied (a stale write
// that changed an item its writer never read: the pay-twice hole that incarnation-safe conditional writes close).
//
// It also counts the in-doubt transitions that were written, whatever their caller was told, and
// times each in_doubt episode from the write that opened it to the one that settled the item.
type heldStore struct {
	*dynamo.Store
	clock        *vclock.Clock
	holdRate     float64
	takeOverRate float64
	events       *counter
	stale        *counter
	t0           time.Time // the campaign's start, for traces
	// batches, in a batched run, records the envelopes keys let go of and checks the batch items'
	// TTL rule (batches.go); nil otherwise.
	batches *batchRun

	traceMu sync.Mutex
	trace   map[string][]string // every write that changed an item, by store key

	doubtMu sync.Mutex
	inDoubt map[string]time.Time // when each item's current in_doubt episode opened, by store key
	settled []time.Duration      // each settled episode's length
}

// Holds are bounded so a wave ends: a take-over waits at most maxTakeOverHold for a new
// incarnation, any other held write at most maxHold.
const (
	maxHold         = 60 * time.Second
	maxTakeOverHold = 120 * time.Second
	holdPoll        = time.Second
)

// Replace holds the write if the caller's dice say so, then writes.
func (s *heldStore) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	held := s.hold(ctx, next.StoreKey, cond.ClaimID, isTakeOver(next, cond))
	newer := held && s.newIncarnation(next.StoreKey, cond.ClaimID)
	unapplied(ctx)
	err := s.Store.Replace(ctx, next, cond)
	applied := s.applied(ctx, err)
	s.judge(held, newer, applied)
	if applied {
		s.count(next.StoreKey, next.Status, cond.Status)
		s.record(ctx, next.StoreKey, held, newer, "replace claim %s %s v%d owner %s env %s -> claim %s %s v%d owner %s env %s (%s)",
			short(cond.ClaimID), cond.Status, cond.Version, short(cond.LeaseOwner), short(condHash(cond)), short(next.ClaimID), next.Status, next.Version,
			short(next.LeaseOwner), short(envHash(next)), answer(err))
		s.noteLetGo(ctx, next.StoreKey, cond, &next)
	}
	return err
}

// Claim claims and records a won claim in the trace.
func (s *heldStore) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	held, won, err := s.Store.Claim(ctx, rec, now)
	if err == nil && (won || held.LeaseOwner == rec.LeaseOwner) {
		s.record(ctx, rec.StoreKey, false, false, "claim %s v1 owner %s (won %v)", short(rec.ClaimID), short(rec.LeaseOwner), won)
	}
	return held, won, err
}

// Delete holds the release if the caller's dice say so, then deletes.
func (s *heldStore) Delete(ctx context.Context, storeKey string, cond transfer.Condition) error {
	held := s.hold(ctx, storeKey, cond.ClaimID, false)
	newer := held && s.newIncarnation(storeKey, cond.ClaimID)
	unapplied(ctx)
	err := s.Store.Delete(ctx, storeKey, cond)
	applied := s.applied(ctx, err)
	s.judge(held, newer, applied)
	if applied {
		s.count(storeKey, "", cond.Status)
		s.record(ctx, storeKey, held, newer, "delete claim %s %s v%d owner %s env %s (%s)",
			short(cond.ClaimID), cond.Status, cond.Version, short(cond.LeaseOwner), short(condHash(cond)), answer(err))
		s.noteLetGo(ctx, storeKey, cond, nil)
	}
	return err
}

// record adds one applied write to the key's trace: when (virtual, from the start), who, whether
// it was held and met a newer incarnation, and what it changed.
func (s *heldStore) record(ctx context.Context, key string, held, newer bool, format string, args ...any) {
	who := "?"
	if c := callerOf(ctx); c != nil {
		who = c.name
	}
	tag := ""
	switch {
	case newer:
		tag = " [HELD, met a newer incarnation]"
	case held:
		tag = " [held]"
	}
	line := fmt.Sprintf("+%v %s: %s%s", s.clock.Now().Sub(s.t0), who, fmt.Sprintf(format, args...), tag)
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	if s.trace == nil {
		s.trace = map[string][]string{}
	}
	s.trace[key] = append(s.trace[key], line)
}

// traceOf returns the key's trace.
func (s *heldStore) traceOf(key string) []string {
	s.traceMu.Lock()
	defer s.traceMu.Unlock()
	return append([]string(nil), s.trace[key]...)
}

// answer is what the writer of an applied write was told, for traces.
func answer(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, transfer.ErrConditionFailed):
		return "applied, but answered condition failed: the retry met its own write"
	}
	return "applied, but its answer was lost"
}

// envHash is the inner hash of the envelope a record holds ("" for none).
func envHash(rec transfer.Record) string {
	if rec.Envelope == nil {
		return ""
	}
	return rec.Envelope.InnerHash
}

// short cuts a hash or an owner ID to 8 characters for traces; "-" for none.
func short(s string) string {
	switch {
	case s == "":
		return "-"
	case len(s) > 8:
		return s[:8]
	}
	return s
}

// isTakeOver reports whether a Replace hands an in_flight claim to another lease owner.
func isTakeOver(next transfer.Record, cond transfer.Condition) bool {
	return cond.Status == transfer.StatusInFlight && next.Status == transfer.StatusInFlight &&
		next.LeaseOwner != "" && next.LeaseOwner != cond.LeaseOwner
}

// hold delays a faulty caller's write on the virtual clock and reports whether it did. read is the
// ClaimID of the incarnation the writer read.
func (s *heldStore) hold(ctx context.Context, key, read string, takeOver bool) bool {
	c := callerOf(ctx)
	if c == nil || !c.faulty {
		return false
	}
	var untilNew bool
	var limit time.Duration
	switch {
	case takeOver && c.rng.Float64() < s.takeOverRate:
		s.stale.add("takeover_writes_held")
		untilNew, limit = true, maxTakeOverHold
	case c.rng.Float64() < s.holdRate:
		s.stale.add("writes_held")
		untilNew, limit = c.rng.IntN(2) == 0, time.Second+time.Duration(c.rng.Int64N(int64(maxHold-time.Second)))
	default:
		return false
	}
	end := s.clock.Now().Add(limit)
	for now := s.clock.Now(); now.Before(end); now = s.clock.Now() {
		_ = s.clock.Sleep(ctx, min(holdPoll, end.Sub(now)))
		if untilNew && s.newIncarnation(key, read) {
			// A few seconds more, so that the new incarnation may attach its envelope and send.
			_ = s.clock.Sleep(ctx, time.Duration(c.rng.IntN(8000))*time.Millisecond)
			break
		}
	}
	return true
}

// newIncarnation reports whether the key holds an item of another claim than read. It reads
// without a caller, so no fault meets it (an outage may still fail it: then it says no).
func (s *heldStore) newIncarnation(key, read string) bool {
	cur, err := s.Store.Get(context.Background(), key)
	return err == nil && cur.ClaimID != read
}

// applied reports whether the write changed the table, whatever the caller was told.
func (s *heldStore) applied(ctx context.Context, err error) bool {
	if err == nil {
		return true
	}
	c := callerOf(ctx)
	return c != nil && c.applied
}

// unapplied clears the caller's record of its last write before a new one (the store may fail
// before it sends any request).
func unapplied(ctx context.Context) {
	if c := callerOf(ctx); c != nil {
		c.applied = false
	}
}

// judge counts what a held write met.
func (s *heldStore) judge(held, newer, applied bool) {
	switch {
	case !held || !newer:
	case applied:
		s.stale.add("stale_writes_applied_to_a_newer_incarnation")
	default:
		s.stale.add("stale_writes_refused_by_a_newer_incarnation")
	}
}

// count files an in-doubt transition that was written ("" for a release) and times the episode:
// it opens at the item's first in_doubt write and ends when the item is settled (replayable) or
// released, not when a re-judging caller takes it back in_flight.
func (s *heldStore) count(key string, to, from transfer.Status) {
	switch {
	case to == transfer.StatusInDoubt && from != transfer.StatusInDoubt:
		s.events.add("in_doubt_opened")
	case from == transfer.StatusInDoubt && to != transfer.StatusInDoubt:
		s.events.add("in_doubt_closed")
	}
	now := s.clock.Now()
	s.doubtMu.Lock()
	defer s.doubtMu.Unlock()
	opened, open := s.inDoubt[key]
	switch {
	case to == transfer.StatusInDoubt && !open:
		if s.inDoubt == nil {
			s.inDoubt = map[string]time.Time{}
		}
		s.inDoubt[key] = now
	case open && to != transfer.StatusInDoubt && to != transfer.StatusInFlight:
		s.settled = append(s.settled, now.Sub(opened))
		delete(s.inDoubt, key)
	}
}

// settleTimes returns the lengths of the settled in_doubt episodes, sorted, and how many are
// still open.
func (s *heldStore) settleTimes() ([]time.Duration, int) {
	s.doubtMu.Lock()
	defer s.doubtMu.Unlock()
	out := slices.Clone(s.settled)
	slices.Sort(out)
	return out, len(s.inDoubt)
}

// condHash is the inner hash of the envelope a condition names.
func condHash(cond transfer.Condition) string { return cond.InnerHash }
