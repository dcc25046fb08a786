package transfertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// StoreContract checks that a transfer.Store keeps the rules of the DynamoDB store
// (internal/dynamo's Store: its ConditionExpressions and the checks it makes before writing), one
// subtest per rule. open returns an empty store for one subtest; subtests run in parallel, so
// each gets its own. Run it against every implementation: the in-memory Store
// (transfertest's own tests) and dynamo.Store on each emulator (internal/dynamo's tests), so that
// what the orchestrator's tests learn from the in-memory store holds on DynamoDB.
//
// The listing is read once, as both emulators and the in-memory store update the index with the
// write; on DynamoDB itself the index is eventually consistent and the listing subtests would
// need to retry.
func StoreContract(t *testing.T, open func(t *testing.T) transfer.Store) {
	ctx := context.Background()
	archiveContract(t, open)

	t.Run("a claim on a free key wins and reads back as written", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		rec := claimRecord("contract-free-key", "owner-a")
		// Times below the millisecond and in another zone: stored at millisecond precision in UTC.
		rec.LeaseExpiresAt = t0.Add(30*time.Second + 123456789*time.Nanosecond)
		rec.CreatedAt = t0.Add(987654321 * time.Nanosecond).In(time.FixedZone("X", 3600))
		rec.UpdatedAt = rec.CreatedAt.Add(time.Millisecond)
		got, won, err := s.Claim(ctx, rec, t0)
		if err != nil || !won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		equal(t, "returned by Claim", got, asStored(rec))
		equal(t, "read by Get", mustGet(t, s, rec.StoreKey), asStored(rec))
	})

	t.Run("a live claim refuses another and returns the holder", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		first := claimRecord("contract-live-claim", "owner-a")
		mustClaim(t, s, first)
		got, won, err := s.Claim(ctx, claimRecord("contract-live-claim", "owner-b"), t0.Add(time.Second))
		if err != nil || won {
			t.Fatalf("second Claim: won=%v err=%v", won, err)
		}
		equal(t, "holder returned by the lost claim", got, asStored(first))
		equal(t, "item after the lost claim", mustGet(t, s, first.StoreKey), asStored(first))
	})

	t.Run("of concurrent claims exactly one wins and every loser is told the winner", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const n = 8
		type outcome struct {
			rec transfer.Record
			won bool
			err error
		}
		results := make([]outcome, n)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range n {
			wg.Go(func() {
				<-start
				rec, won, err := s.Claim(ctx, claimRecord("contract-concurrent", fmt.Sprintf("owner-%d", i)), t0)
				results[i] = outcome{rec, won, err}
			})
		}
		close(start)
		wg.Wait()
		winner := ""
		for i, r := range results {
			if r.err != nil {
				t.Fatalf("claim %d: %v", i, r.err)
			}
			if r.won {
				if winner != "" {
					t.Fatalf("two winners: %s and owner-%d", winner, i)
				}
				winner = r.rec.LeaseOwner
			}
		}
		if winner == "" {
			t.Fatal("nobody won")
		}
		for i, r := range results {
			if r.rec.LeaseOwner != winner || r.rec.ClaimID != "claim-"+winner || r.rec.Version != 1 || r.rec.Status != transfer.StatusInFlight {
				t.Errorf("claim %d returned owner %q claim %q version %d status %s, want the winner %s's in_flight claim at version 1",
					i, r.rec.LeaseOwner, r.rec.ClaimID, r.rec.Version, r.rec.Status, winner)
			}
		}
	})

	t.Run("a settled item whose TTL passed can be claimed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		now := t0.Add(48 * time.Hour)
		for _, status := range []transfer.Status{transfer.StatusReplayable, transfer.StatusRejected} {
			k := "contract-expired-" + string(status)
			put(t, s, settle(claimRecord(k, "owner-a"), status, now.Unix()-1))
			rec := claimRecord(k, "owner-b")
			got, won, err := s.Claim(ctx, rec, now)
			if err != nil || !won {
				t.Fatalf("%s: Claim over an item expired at now-1s: won=%v err=%v holder=%+v", status, won, err, got)
			}
			equal(t, string(status)+": item after the claim", mustGet(t, s, rec.StoreKey), asStored(rec))
		}
	})

	t.Run("a settled item is held until its TTL has passed", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		now := t0.Add(time.Hour)
		for _, tc := range []struct {
			name      string
			status    transfer.Status
			expiresAt int64
		}{
			{"replayable-for-an-hour", transfer.StatusReplayable, now.Unix() + 3600},
			{"replayable-expiring-this-second", transfer.StatusReplayable, now.Unix()}, // expiresAt < now is false
			{"rejected-for-a-second", transfer.StatusRejected, now.Unix() + 1},
		} {
			k := "contract-" + tc.name
			old := settle(claimRecord(k, "owner-a"), tc.status, tc.expiresAt)
			put(t, s, old)
			got, won, err := s.Claim(ctx, claimRecord(k, "owner-b"), now)
			if err != nil || won {
				t.Fatalf("%s: Claim: won=%v err=%v", tc.name, won, err)
			}
			equal(t, tc.name+": holder", got, asStored(old))
		}
	})

	t.Run("an in_flight or in_doubt item is never taken by a claim", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		farFuture := time.Date(2999, 1, 1, 0, 0, 0, 0, time.UTC)
		flight := claimRecord("contract-never-in-flight", "owner-a")
		doubt := settle(withEnvelope(claimRecord("contract-never-in-doubt", "owner-a")), transfer.StatusInDoubt, 0)
		for _, old := range []transfer.Record{flight, doubt} {
			put(t, s, old)
			got, won, err := s.Claim(ctx, claimRecord(old.ClientKey, "owner-b"), farFuture)
			if err != nil || won {
				t.Fatalf("%s: Claim in the year 2999: won=%v err=%v", old.Status, won, err)
			}
			equal(t, string(old.Status)+": holder", got, asStored(old))
		}
	})

	t.Run("Replace applies only when claim, status, version, lease owner and inner hash all match", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		cur := claimRecord("contract-replace-cond", "owner-a")
		mustClaim(t, s, cur)
		next := withEnvelope(cur)
		next.Version = 2
		edit := func(f func(*transfer.Condition)) transfer.Condition { c := transfer.Expect(cur); f(&c); return c }
		for name, bad := range map[string]transfer.Condition{
			"another status":               edit(func(c *transfer.Condition) { c.Status = transfer.StatusInDoubt }),
			"another version":              edit(func(c *transfer.Condition) { c.Version = 2 }),
			"another lease owner":          edit(func(c *transfer.Condition) { c.LeaseOwner = "owner-b" }),
			"no lease owner":               edit(func(c *transfer.Condition) { c.LeaseOwner = "" }),
			"another claim":                edit(func(c *transfer.Condition) { c.ClaimID = "claim-of-a-later-incarnation" }),
			"no claim":                     edit(func(c *transfer.Condition) { c.ClaimID = "" }),
			"an envelope it does not hold": edit(func(c *transfer.Condition) { c.InnerHash = strings.Repeat("ef", 32) }),
		} {
			n := next
			n.ClaimID, n.Version = bad.ClaimID, bad.Version+1 // a write keeps the incarnation and bumps the version its condition names
			if err := s.Replace(ctx, n, bad); !errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Replace expecting %s: err=%v, want ErrConditionFailed", name, err)
			}
		}
		missing := next
		missing.StoreKey = transfer.StoreKey(wallet, "contract-replace-missing")
		if err := s.Replace(ctx, missing, transfer.Expect(cur)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace of a missing item: err=%v, want ErrConditionFailed", err)
		}
		equal(t, "item after refused replaces", mustGet(t, s, cur.StoreKey), asStored(cur))

		if err := s.Replace(ctx, next, transfer.Expect(cur)); err != nil {
			t.Fatalf("Replace with the condition as read: %v", err)
		}
		equal(t, "item after the replace", mustGet(t, s, cur.StoreKey), asStored(next))
		// Once the item holds an envelope, a condition must name its inner hash.
		doubt := settle(next, transfer.StatusInDoubt, 0)
		noEnvelope := transfer.Expect(next)
		noEnvelope.InnerHash = ""
		if err := s.Replace(ctx, doubt, noEnvelope); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Replace naming no envelope of an item holding one: err=%v, want ErrConditionFailed", err)
		}
		if err := s.Replace(ctx, doubt, transfer.Expect(next)); err != nil {
			t.Fatalf("Replace to in_doubt naming the envelope: %v", err)
		}
		// A stale writer, holding the state before, loses.
		if err := s.Replace(ctx, next, transfer.Expect(cur)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("stale Replace: err=%v, want ErrConditionFailed", err)
		}
		equal(t, "item after the stale replace", mustGet(t, s, cur.StoreKey), asStored(doubt))
	})

	t.Run("Replace refuses a version other than the condition's plus one and another claim's ID", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		cur := claimRecord("contract-replace-shape", "owner-a")
		mustClaim(t, s, cur)
		same := cur // no version bump
		skip := cur
		skip.Version = 3
		other := cur
		other.Version, other.ClaimID = 2, "claim-of-another-incarnation"
		for name, next := range map[string]transfer.Record{"the same version": same, "a version skipped": skip, "another claim ID": other} {
			err := s.Replace(ctx, next, transfer.Expect(cur))
			if err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Replace with %s: err=%v, want an error that is not ErrConditionFailed", name, err)
			}
		}
		equal(t, "item after refused replaces", mustGet(t, s, cur.StoreKey), asStored(cur))
	})

	t.Run("Delete applies only when claim, status, version, lease owner and inner hash all match", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		cur := withEnvelope(claimRecord("contract-delete-cond", "owner-a"))
		mustClaim(t, s, cur)
		edit := func(f func(*transfer.Condition)) transfer.Condition { c := transfer.Expect(cur); f(&c); return c }
		for name, bad := range map[string]transfer.Condition{
			"another status":      edit(func(c *transfer.Condition) { c.Status = transfer.StatusReplayable }),
			"another version":     edit(func(c *transfer.Condition) { c.Version = 2 }),
			"another lease owner": edit(func(c *transfer.Condition) { c.LeaseOwner = "owner-b" }),
			"another claim":       edit(func(c *transfer.Condition) { c.ClaimID = "claim-of-a-later-incarnation" }),
			"no claim":            edit(func(c *transfer.Condition) { c.ClaimID = "" }),
			"no envelope":         edit(func(c *transfer.Condition) { c.InnerHash = "" }),
		} {
			if err := s.Delete(ctx, cur.StoreKey, bad); !errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Delete expecting %s: err=%v, want ErrConditionFailed", name, err)
			}
		}
		if err := s.Delete(ctx, transfer.StoreKey(wallet, "contract-delete-missing"), transfer.Expect(cur)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("Delete of a missing item: err=%v, want ErrConditionFailed", err)
		}
		equal(t, "item after refused deletes", mustGet(t, s, cur.StoreKey), asStored(cur))
		if err := s.Delete(ctx, cur.StoreKey, transfer.Expect(cur)); err != nil {
			t.Fatalf("Delete with the condition as read: %v", err)
		}
		if _, err := s.Get(ctx, cur.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		// Released: the key can be claimed again, by a new incarnation.
		mustClaim(t, s, claimRecord("contract-delete-cond", "owner-b"))
	})

	t.Run("a queued item is cancelled once, only from queued, and then neither taken nor cancelled again", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		queued := queuedRecord("contract-cancel")
		mustClaim(t, s, queued)
		by := transfer.Canceller{Caller: "arn:aws:iam::123456789012:user/ops", RequestID: "req-1"}
		cancelled := transfer.Cancelled(queued, by, t0.Add(time.Second), time.Hour)
		taken := queued
		taken.Status, taken.LeaseOwner, taken.LeaseExpiresAt, taken.Version = transfer.StatusInFlight, "owner-a", t0.Add(30*time.Second), 2

		// Of a cancel and a take of the same queued state, the first wins and the other fails its
		// condition, whichever comes first (two stores: one order each).
		if err := s.Replace(ctx, cancelled, transfer.Expect(queued)); err != nil {
			t.Fatalf("cancel of the queued item: %v", err)
		}
		if err := s.Replace(ctx, taken, transfer.Expect(queued)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("take after the cancel: err=%v, want ErrConditionFailed", err)
		}
		if err := s.Replace(ctx, cancelled, transfer.Expect(queued)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("the same cancel again (its answer lost): err=%v, want ErrConditionFailed (ReplaceItem reads it back)", err)
		}
		got := mustGet(t, s, queued.StoreKey)
		equal(t, "the cancelled item", got, asStored(cancelled))
		if got.Audit == nil || got.Audit.Operator != by.Caller || got.Audit.Action != transfer.AuditCancel || !got.Audit.At.Equal(t0.Add(time.Second)) {
			t.Errorf("audit of the cancelled item: %+v, want who and when", got.Audit)
		}
		// A claim before its TTL finds it; after its TTL the key is free.
		if holder, won, err := s.Claim(ctx, claimRecord("contract-cancel", "owner-b"), t0.Add(time.Minute)); err != nil || won || holder.Status != transfer.StatusCancelled {
			t.Errorf("claim within the TTL: won=%v status=%s err=%v, want lost to the cancelled item", won, holder.Status, err)
		}
		if _, won, err := s.Claim(ctx, claimRecord("contract-cancel", "owner-b"), t0.Add(2*time.Hour)); err != nil || !won {
			t.Errorf("claim after the TTL: won=%v err=%v, want won", won, err)
		}

		// The other order: taken first, the cancel loses.
		q2 := queuedRecord("contract-cancel-taken")
		mustClaim(t, s, q2)
		t2 := q2
		t2.Status, t2.LeaseOwner, t2.LeaseExpiresAt, t2.Version = transfer.StatusInFlight, "owner-a", t0.Add(30*time.Second), 2
		if err := s.Replace(ctx, t2, transfer.Expect(q2)); err != nil {
			t.Fatalf("take: %v", err)
		}
		if err := s.Replace(ctx, transfer.Cancelled(q2, by, t0, time.Hour), transfer.Expect(q2)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Errorf("cancel after the take: err=%v, want ErrConditionFailed", err)
		}
		equal(t, "the taken item", mustGet(t, s, q2.StoreKey), asStored(t2))

		// Cancelling anything but a queued item is refused before writing, whatever the item
		// holds: in_flight (taken, perhaps sending), in_doubt, settled.
		for _, st := range []transfer.Status{transfer.StatusInFlight, transfer.StatusInDoubt, transfer.StatusReplayable, transfer.StatusRejected} {
			cur := t2
			cur.Status = st
			c := transfer.Cancelled(cur, by, t0, time.Hour)
			if err := s.Replace(ctx, c, transfer.Expect(cur)); err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("cancel of a %s item: err=%v, want a refusal before the write", st, err)
			}
		}
		equal(t, "the taken item after refused cancels", mustGet(t, s, q2.StoreKey), asStored(t2))

		// A cancelled item holding what could land, or not saying who cancelled it, is refused;
		// so is a claim that writes one.
		q3 := queuedRecord("contract-cancel-shape")
		mustClaim(t, s, q3)
		c3 := transfer.Cancelled(q3, by, t0, time.Hour)
		withEnv := withEnvelope(c3)
		leased := c3
		leased.LeaseOwner, leased.LeaseExpiresAt = "owner-a", t0.Add(30*time.Second)
		noAudit := c3
		noAudit.Audit = nil
		sync := c3
		sync.Async = false
		for name, bad := range map[string]transfer.Record{"an envelope": withEnv, "a lease": leased, "no audit": noAudit, "not async": sync} {
			if err := s.Replace(ctx, bad, transfer.Expect(q3)); err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("cancelled item with %s: err=%v, want a refusal", name, err)
			}
		}
		equal(t, "the queued item after refused cancels", mustGet(t, s, q3.StoreKey), asStored(q3))
		direct := c3
		direct.StoreKey, direct.Version = transfer.StoreKey(wallet, "contract-cancel-claimed"), 1
		if _, _, err := s.Claim(ctx, direct, t0); err == nil {
			t.Error("a claim wrote a cancelled item")
		}
	})

	t.Run("Get of a missing key is ErrNotFound", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		if _, err := s.Get(ctx, transfer.StoreKey(wallet, "contract-nothing-here")); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("Get: %v, want ErrNotFound", err)
		}
	})

	t.Run("a write that would break an item's invariant is refused and changes nothing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		expiringFlight := claimRecord("contract-invariant-a", "owner-a")
		expiringFlight.ExpiresAt = t0.Unix() + 60
		noXDR := claimRecord("contract-invariant-b", "owner-a")
		noXDR.Envelope = &transfer.Envelope{InnerHash: strings.Repeat("ab", 32), MaxTime: t0.Unix() + 40}
		noHash := claimRecord("contract-invariant-c", "owner-a")
		noHash.Envelope = &transfer.Envelope{XDR: "AAAA", MaxTime: t0.Unix() + 40}
		unknown := claimRecord("contract-invariant-d", "owner-a")
		unknown.Status = "exploded"
		leasedQueue := claimRecord("contract-invariant-e", "owner-a")
		leasedQueue.Status, leasedQueue.Async = transfer.StatusQueued, true
		noKey := claimRecord("contract-invariant-f", "owner-a")
		noKey.StoreKey = ""
		for name, rec := range map[string]transfer.Record{
			"an in_flight item with a TTL": expiringFlight, "an envelope without XDR": noXDR,
			"an envelope without an inner hash": noHash, "an unknown status": unknown,
			"a queued item with a lease": leasedQueue, "no store key": noKey,
		} {
			if _, _, err := s.Claim(ctx, rec, t0); err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Claim of %s: err=%v, want a refusal", name, err)
			}
			if rec.StoreKey == "" {
				continue
			}
			if _, err := s.Get(ctx, rec.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
				t.Errorf("after the refused claim of %s: Get: %v, want ErrNotFound", name, err)
			}
		}
		rec := claimRecord("contract-invariant-g", "owner-a")
		mustClaim(t, s, rec)
		if err := s.Replace(ctx, settle(rec, transfer.StatusInDoubt, t0.Unix()+60), transfer.Expect(rec)); err == nil {
			t.Error("stored an in_doubt item with a TTL")
		}
		equal(t, "item after the refused replace", mustGet(t, s, rec.StoreKey), asStored(rec))
	})

	t.Run("a queued item held back keeps its notBefore and failure, and only a queued item holds one", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		taken := queuedRecord("contract-held")
		mustClaim(t, s, taken)
		taken = mustGet(t, s, taken.StoreKey)
		flight := taken
		flight.Status, flight.LeaseOwner, flight.LeaseExpiresAt, flight.Version = transfer.StatusInFlight, "owner-a", t0.Add(30*time.Second), taken.Version+1
		if err := s.Replace(ctx, flight, transfer.Expect(taken)); err != nil {
			t.Fatal(err)
		}
		failure := &transfer.UnavailableError{Code: transfer.CodeServiceSideFailure, Detail: "op_bad_auth", RetryAfter: time.Minute}
		held := transfer.RequeuedAfter(flight, t0.Add(time.Second), failure)
		if held.NotBefore != t0.Add(61*time.Second).Unix() || held.Result == nil || held.Result.Code != transfer.CodeServiceSideFailure {
			t.Fatalf("RequeuedAfter = notBefore %d, result %+v; want t0+61s and the failure", held.NotBefore, held.Result)
		}
		if err := s.Replace(ctx, held, transfer.Expect(flight)); err != nil {
			t.Fatalf("the held requeue: %v", err)
		}
		equal(t, "the held item", mustGet(t, s, held.StoreKey), asStored(held))

		// Held back on any other status, held without its failure, or a failure without the
		// hold: refused, and the item unchanged.
		onFlight := held
		onFlight.Status, onFlight.LeaseOwner, onFlight.LeaseExpiresAt, onFlight.Version = transfer.StatusInFlight, "owner-b", t0.Add(time.Minute), held.Version+1
		noFailure := held
		noFailure.Result, noFailure.Version = nil, held.Version+1
		noHold := held
		noHold.NotBefore, noHold.Version = 0, held.Version+1
		for name, bad := range map[string]transfer.Record{
			"an in_flight item held back": onFlight, "a hold without its failure": noFailure, "a failure without a hold": noHold,
		} {
			if err := s.Replace(ctx, bad, transfer.Expect(held)); err == nil || errors.Is(err, transfer.ErrConditionFailed) {
				t.Errorf("Replace with %s: err=%v, want a refusal", name, err)
			}
		}
		equal(t, "the held item after the refusals", mustGet(t, s, held.StoreKey), asStored(held))

		// An item written without it (every item before it existed) reads back at once: 0.
		plain := queuedRecord("contract-not-held")
		mustClaim(t, s, plain)
		if got := mustGet(t, s, plain.StoreKey); got.NotBefore != 0 || got.Result != nil {
			t.Fatalf("a plain queued item reads notBefore %d, result %+v; want neither", got.NotBefore, got.Result)
		}
	})

	t.Run("ListInDoubt pages oldest first through exactly the in_doubt items", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		var want []string
		for i := range 5 {
			rec := claimRecord(fmt.Sprintf("contract-in-doubt-%d", i), "owner-a")
			rec.UpdatedAt = t0.Add(time.Duration(10-i) * time.Minute) // oldest first: the reverse of i
			put(t, s, settle(rec, transfer.StatusInDoubt, 0))
			want = append([]string{rec.StoreKey}, want...)
		}
		put(t, s, claimRecord("contract-flight", "owner-a"))
		put(t, s, settle(claimRecord("contract-landed", "owner-a"), transfer.StatusReplayable, t0.Unix()+60))
		put(t, s, settle(claimRecord("contract-refused", "owner-a"), transfer.StatusRejected, t0.Unix()+60))
		queued := claimRecord("contract-queued", "")
		queued.Status, queued.Async, queued.LeaseExpiresAt = transfer.StatusQueued, true, time.Time{}
		mustClaim(t, s, queued)

		for _, limit := range []int{1, 2, 5, 0} {
			got, pages := ListInDoubtAll(t, s, limit)
			if !slices.Equal(got, want) {
				t.Errorf("pages of %d listed %v, want %v", limit, got, want)
			}
			if limit > 0 && pages < (len(want)+limit-1)/limit {
				t.Errorf("pages of %d: %d pages for %d items", limit, pages, len(want))
			}
		}
		// Settling one takes it out of the listing.
		gone := mustGet(t, s, want[2])
		if err := s.Replace(ctx, settle(gone, transfer.StatusReplayable, t0.Unix()+60), transfer.Expect(gone)); err != nil {
			t.Fatal(err)
		}
		want = slices.Delete(want, 2, 3)
		if got, _ := ListInDoubtAll(t, s, 2); !slices.Equal(got, want) {
			t.Errorf("after settling one, listed %v, want %v", got, want)
		}
	})

	t.Run("ListInDoubt refuses a cursor it did not issue as ErrBadCursor", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		for _, cursor := range []string{"not a cursor!", "e30", "eyJwayI6IngifQ"} { // text, "{}", {"pk":"x"}
			if _, _, err := s.ListInDoubt(ctx, 2, cursor); !errors.Is(err, transfer.ErrBadCursor) {
				t.Errorf("ListInDoubt(%q): err=%v, want ErrBadCursor", cursor, err)
			}
		}
	})

	t.Run("nothing is written under a context already done", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		done, cancel := context.WithCancel(ctx)
		cancel()
		rec := claimRecord("contract-done-context", "owner-a")
		if _, _, err := s.Claim(done, rec, t0); !errors.Is(err, context.Canceled) {
			t.Errorf("Claim under a canceled context: err=%v, want context.Canceled", err)
		}
		if _, err := s.Get(ctx, rec.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
			t.Errorf("after a canceled claim: Get: %v, want ErrNotFound", err)
		}
		mustClaim(t, s, rec)
		next := withEnvelope(rec)
		next.Version++
		if err := s.Replace(done, next, transfer.Expect(rec)); !errors.Is(err, context.Canceled) {
			t.Errorf("Replace under a canceled context: err=%v, want context.Canceled", err)
		}
		if err := s.Delete(done, rec.StoreKey, transfer.Expect(rec)); !errors.Is(err, context.Canceled) {
			t.Errorf("Delete under a canceled context: err=%v, want context.Canceled", err)
		}
		equal(t, "item after canceled writes", mustGet(t, s, rec.StoreKey), asStored(rec))
	})

	t.Run("a stored item shares no memory with the records written or read", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		rec := withEnvelope(claimRecord("contract-no-aliasing", "owner-a"))
		want := asStored(rec)
		mustClaim(t, s, rec)
		rec.Envelope.InnerHash = strings.Repeat("00", 32) // the writer's record changes after the write
		read := mustGet(t, s, want.StoreKey)
		read.Envelope.XDR = "changed by a reader"
		equal(t, "item after its writer and a reader changed their copies", mustGet(t, s, want.StoreKey), want)
	})
}

// wallet is the contract's records' wallet.
const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// claimRecord is a fresh in_flight claim of clientKey by owner, as the orchestrator writes one:
// its ClaimID is "claim-" + owner. An empty owner gives no lease.
func claimRecord(clientKey, owner string) transfer.Record {
	req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "1000.5", Asset: "USDC", Stroops: 10_005_000_000}
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, clientKey), ClaimID: "claim-" + owner, Status: transfer.StatusInFlight,
		Fingerprint: req.Fingerprint(), Request: req, ClientKey: clientKey, TraceID: "1-67890abc-def012345678901234567890",
		LeaseOwner: owner, LeaseExpiresAt: t0.Add(30 * time.Second), Version: 1, CreatedAt: t0, UpdatedAt: t0,
	}
	if owner == "" {
		rec.LeaseExpiresAt = time.Time{}
	}
	return rec
}

// queuedRecord is a fresh queued claim of clientKey, as Enqueue writes one: async, no lease.
func queuedRecord(clientKey string) transfer.Record {
	rec := claimRecord(clientKey, "")
	rec.Status, rec.Async, rec.ClaimID = transfer.StatusQueued, true, "claim-queued-"+clientKey
	return rec
}

// withEnvelope is rec holding a signed envelope (fee-bumped), as attached before the first send.
func withEnvelope(rec transfer.Record) transfer.Record {
	rec.Envelope = &transfer.Envelope{
		XDR: "AAAABQAAAADg3G3hclysZlFitS+s5zWyiiJD5B0STWy5LXCj6i5yxQAAAAAAAAGQAAAAAgAAAAA=", InnerHash: strings.Repeat("12", 32),
		OuterHash: strings.Repeat("34", 32), MaxTime: t0.Unix() + 40, SubmittedLedger: 51234567,
		Channel: "GCHANNELAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", FeeStroops: 20_000,
	}
	return rec
}

// settle is rec moved to status at the next version, as the orchestrator settles: no lease, the
// TTL expiresAt, and a result.
func settle(rec transfer.Record, status transfer.Status, expiresAt int64) transfer.Record {
	rec.Status, rec.Version, rec.ExpiresAt = status, rec.Version+1, expiresAt
	rec.UpdatedAt = rec.UpdatedAt.Add(time.Second)
	rec.LeaseOwner, rec.LeaseExpiresAt = "", time.Time{}
	if rec.Envelope != nil && status != transfer.StatusInDoubt {
		e := *rec.Envelope
		e.XDR = "" // a settled item keeps the hashes and drops the XDR: it can never land again
		rec.Envelope = &e
	}
	switch status {
	case transfer.StatusReplayable:
		rec.Result = &transfer.Result{TransactionHash: strings.Repeat("ab", 32), Ledger: 1234, FeeChargedStroops: 100}
	case transfer.StatusRejected:
		rec.Result = &transfer.Result{Code: "TRANSACTION_FAILED", HTTPStatus: 422, Detail: "op_underfunded", ResultCodes: []string{"tx_failed", "op_underfunded"}}
	case transfer.StatusInDoubt:
		rec.Result = &transfer.Result{Code: "TRANSFER_TIMEOUT"}
	}
	return rec
}

// put stores rec (any status) through the Store's own writes: a claim of its in_flight version
// before, then a replace.
func put(t *testing.T, s transfer.Store, rec transfer.Record) {
	t.Helper()
	if rec.Status == transfer.StatusInFlight {
		mustClaim(t, s, rec)
		return
	}
	first := rec
	first.Status, first.ExpiresAt, first.Version, first.Result = transfer.StatusInFlight, 0, rec.Version-1, nil
	first.LeaseOwner, first.LeaseExpiresAt = "owner-before", t0.Add(30*time.Second)
	if first.Envelope != nil && first.Envelope.XDR == "" {
		e := *first.Envelope
		e.XDR = "AAAA"
		first.Envelope = &e
	}
	mustClaim(t, s, first)
	if err := s.Replace(context.Background(), rec, transfer.Expect(first)); err != nil {
		t.Fatalf("Replace(%s): %v", rec.StoreKey, err)
	}
}

func mustClaim(t *testing.T, s transfer.Store, rec transfer.Record) {
	t.Helper()
	if _, won, err := s.Claim(context.Background(), rec, t0); err != nil || !won {
		t.Fatalf("Claim(%s): won=%v err=%v", rec.StoreKey, won, err)
	}
}

func mustGet(t *testing.T, s transfer.Store, key string) transfer.Record {
	t.Helper()
	rec, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return rec
}

// asStored is rec as a store reads it back: times at millisecond precision in UTC. Its envelope
// and result are copies.
func asStored(rec transfer.Record) transfer.Record {
	if e := rec.Envelope; e != nil {
		c := *e
		rec.Envelope = &c
	}
	if r := rec.Result; r != nil {
		c := *r
		rec.Result = &c
	}
	ms := func(t time.Time) time.Time {
		if t.IsZero() {
			return time.Time{}
		}
		return time.UnixMilli(t.UnixMilli()).UTC()
	}
	rec.LeaseExpiresAt, rec.CreatedAt, rec.UpdatedAt = ms(rec.LeaseExpiresAt), ms(rec.CreatedAt), ms(rec.UpdatedAt)
	return rec
}

func equal(t *testing.T, what string, got, want transfer.Record) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\n got  %+v\n want %+v", what, got, want)
	}
}

// ListInDoubtAll pages through s.ListInDoubt with page size limit (0: the store's default) and
// returns every key in order and the pages read. It fails t when a page errs, holds more than
// limit items or an item not in_doubt, or the listing runs past 100 pages.
func ListInDoubtAll(t testing.TB, s transfer.Store, limit int) (keys []string, pages int) {
	t.Helper()
	cursor := ""
	for {
		recs, next, err := s.ListInDoubt(context.Background(), limit, cursor)
		if err != nil {
			t.Fatalf("ListInDoubt(%d, %q): %v", limit, cursor, err)
		}
		pages++
		if limit > 0 && len(recs) > limit {
			t.Fatalf("ListInDoubt returned %d items, limit %d", len(recs), limit)
		}
		for _, r := range recs {
			if r.Status != transfer.StatusInDoubt {
				t.Fatalf("ListInDoubt returned %s with status %s", r.StoreKey, r.Status)
			}
			keys = append(keys, r.StoreKey)
		}
		if next == "" {
			return keys, pages
		}
		if pages > 100 {
			t.Fatal("ListInDoubt does not end")
		}
		cursor = next
	}
}
