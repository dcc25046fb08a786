package transfertest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// archiveContract is the part of StoreContract on the lasting records (transfer.ArchiveStore):
// every store the suite opens must keep them.
func archiveContract(t *testing.T, open func(t *testing.T) transfer.Store) {
	ctx := context.Background()
	openBoth := func(t *testing.T) (transfer.Store, transfer.ArchiveStore) {
		t.Helper()
		s := open(t)
		as, ok := s.(transfer.ArchiveStore)
		if !ok {
			t.Fatalf("%T does not keep lasting records (transfer.ArchiveStore)", s)
		}
		return s, as
	}
	settledArchive := func(clientKey, claimID string, version int64) transfer.Archive {
		rec := settle(withEnvelope(claimRecord(clientKey, "owner-a")), transfer.StatusReplayable, t0.Unix()+86400)
		rec.ClaimID, rec.Version = claimID, version
		rec.Fingerprint, rec.LeaseOwner = "", ""
		return transfer.Archive{Record: rec, RetainUntil: t0.Unix() + 400*86400}
	}
	latest := func(t *testing.T, as transfer.ArchiveStore, key string) transfer.Archive {
		t.Helper()
		a, err := as.LatestArchive(ctx, key)
		if err != nil {
			t.Fatalf("LatestArchive(%s): %v", key, err)
		}
		return a
	}
	want := func(a transfer.Archive) transfer.Archive {
		a.Record = asStored(transfer.ArchivedForm(a.Record))
		a.Record.Archived = true
		return a
	}

	t.Run("an archive reads back as written, marked archived, and is not an item", func(t *testing.T) {
		t.Parallel()
		s, as := openBoth(t)
		a := settledArchive("contract-archive-read", "claim-1", 3)
		a.Record.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", RequestID: "req-1", Reason: "found on chain", At: t0.Add(time.Minute)}
		if err := as.PutArchive(ctx, a); err != nil {
			t.Fatal(err)
		}
		got := latest(t, as, a.Record.StoreKey)
		w := want(a)
		w.Record.Audit.At = w.Record.Audit.At.UTC()
		equal(t, "archive", got.Record, w.Record)
		if got.RetainUntil != a.RetainUntil {
			t.Fatalf("RetainUntil %d, want %d", got.RetainUntil, a.RetainUntil)
		}
		// The archive is no item: the key reads as free and a claim of it wins.
		if _, err := s.Get(ctx, a.Record.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("Get after an archive: %v, want ErrNotFound", err)
		}
		if _, won, err := s.Claim(ctx, claimRecord("contract-archive-read", "owner-b"), t0.Add(48*time.Hour)); err != nil || !won {
			t.Fatalf("a claim of an archived key: won=%v err=%v", won, err)
		}
		// A released archive (from an in_doubt image) is not in the in-doubt listing.
		rel := settledArchive("contract-archive-released", "claim-2", 4)
		rel.Record.Status, rel.Record.Result = transfer.StatusReleased, &transfer.Result{Code: "TRANSFER_TIMEOUT"}
		if err := as.PutArchive(ctx, rel); err != nil {
			t.Fatal(err)
		}
		if recs, _, err := s.ListInDoubt(ctx, 10, ""); err != nil || len(recs) != 0 {
			t.Fatalf("ListInDoubt after a released archive: %d items, %v", len(recs), err)
		}
	})

	t.Run("a repeated or older archive of an incarnation changes nothing; a newer version replaces it", func(t *testing.T) {
		t.Parallel()
		_, as := openBoth(t)
		a := settledArchive("contract-archive-version", "claim-1", 3)
		if err := as.PutArchive(ctx, a); err != nil {
			t.Fatal(err)
		}
		older := a
		older.Record.Result = &transfer.Result{TransactionHash: "ff", Ledger: 1}
		older.Record.Version = 2
		same := older
		same.Record.Version = 3
		for _, o := range []transfer.Archive{older, same} {
			if err := as.PutArchive(ctx, o); err != nil {
				t.Fatalf("PutArchive of version %d: %v, want nil (idempotent)", o.Record.Version, err)
			}
			equal(t, "after a stale archive", latest(t, as, a.Record.StoreKey).Record, want(a).Record)
		}
		newer := a
		newer.Record.Version = 4
		newer.Record.Audit = &transfer.Audit{Action: "note", Operator: "bob", At: t0}
		if err := as.PutArchive(ctx, newer); err != nil {
			t.Fatal(err)
		}
		equal(t, "after a newer archive", latest(t, as, a.Record.StoreKey).Record, want(newer).Record)
	})

	t.Run("the latest archive is the newest incarnation's", func(t *testing.T) {
		t.Parallel()
		_, as := openBoth(t)
		first := settledArchive("contract-archive-incarnations", "claim-zz", 3)
		second := settledArchive("contract-archive-incarnations", "claim-aa", 2)
		second.Record.CreatedAt = first.Record.CreatedAt.Add(25 * time.Hour)
		second.Record.UpdatedAt = second.Record.CreatedAt.Add(time.Second)
		second.Record.Status = transfer.StatusReleased
		second.Record.Result = &transfer.Result{Code: "TRANSFER_TIMEOUT"}
		for _, a := range []transfer.Archive{second, first} { // written out of order
			if err := as.PutArchive(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		equal(t, "latest", latest(t, as, first.Record.StoreKey).Record, want(second).Record)
		if _, err := as.LatestArchive(ctx, transfer.StoreKey(wallet, "contract-archive-none")); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("LatestArchive of a key never archived: %v, want ErrNotFound", err)
		}
	})

	t.Run("a day's archives are listed oldest first, page by page, and only that day's", func(t *testing.T) {
		t.Parallel()
		s, as := openBoth(t)
		day := t0.Add(-12 * time.Hour) // midnight UTC of t0's day
		var want []string
		for i, at := range []time.Duration{23*time.Hour + 59*time.Minute, time.Hour, 0, 12 * time.Hour, 24 * time.Hour, -time.Millisecond} {
			a := settledArchive("contract-archive-day-"+string(rune('a'+i)), "claim-day", 3)
			a.Record.UpdatedAt = day.Add(at)
			if err := as.PutArchive(ctx, a); err != nil {
				t.Fatal(err)
			}
			if at >= 0 && at < 24*time.Hour {
				want = append(want, a.Record.ClientKey)
			}
		}
		// A live settled item of the day is no archive.
		put(t, s, settle(claimRecord("contract-archive-day-live", "owner-a"), transfer.StatusReplayable, t0.Unix()+86400))
		order := []string{want[2], want[1], want[3], want[0]}
		for _, limit := range []int{1, 3, 10} {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				page, next, err := as.ListArchivedDay(ctx, day.Add(7*time.Hour), limit, cursor)
				if err != nil {
					t.Fatalf("ListArchivedDay: %v", err)
				}
				if len(page) > limit || pages > 10 {
					t.Fatalf("page of %d, limit %d, page %d", len(page), limit, pages)
				}
				for _, a := range page {
					if !a.Record.Archived {
						t.Fatalf("%s not marked archived", a.Record.ClientKey)
					}
					got = append(got, a.Record.ClientKey)
				}
				if next == "" {
					break
				}
				if _, _, err := as.ListArchivedDay(ctx, day.Add(24*time.Hour), limit, next); !errors.Is(err, transfer.ErrBadCursor) {
					t.Fatalf("a cursor of one day on the next: %v, want ErrBadCursor", err)
				}
				cursor = next
			}
			if !slices.Equal(got, order) {
				t.Fatalf("limit %d: %q, want %q", limit, got, order)
			}
		}
		for _, bad := range []string{"x", "eyJ9", "AAAA"} {
			if _, _, err := as.ListArchivedDay(ctx, day, 2, bad); !errors.Is(err, transfer.ErrBadCursor) {
				t.Fatalf("cursor %q: %v, want ErrBadCursor", bad, err)
			}
		}
	})

	t.Run("an archive of an unsettled item is refused before writing", func(t *testing.T) {
		t.Parallel()
		_, as := openBoth(t)
		for _, st := range []transfer.Status{transfer.StatusInFlight, transfer.StatusInDoubt, transfer.StatusQueued, "bogus"} {
			a := settledArchive("contract-archive-unsettled", "claim-1", 3)
			a.Record.Status = st
			if err := as.PutArchive(ctx, a); !errors.Is(err, transfer.ErrNotArchivable) {
				t.Fatalf("PutArchive of a %s record: %v, want ErrNotArchivable", st, err)
			}
		}
		a := settledArchive("contract-archive-unsettled", "", 3)
		if err := as.PutArchive(ctx, a); !errors.Is(err, transfer.ErrNotArchivable) {
			t.Fatalf("PutArchive without a claim ID: %v, want ErrNotArchivable", err)
		}
		if _, err := as.LatestArchive(ctx, a.Record.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("a refused archive was written: %v", err)
		}
	})
}
