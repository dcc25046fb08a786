package dynamo_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestHistoryListsEachIncarnationOnce: a wallet's history holds live items and lasting records;
// a record and its live item are one entry (the live item) whatever the page size, a record
// whose item is gone is listed as archived, and every cursor on the way is accepted while a
// record cursor edited to another wallet, claim or position is refused.
func TestHistoryListsEachIncarnationOnce(t *testing.T) {
	f := minidynFixture(t)
	ctx := context.Background()
	base := t0
	type want struct {
		key      string
		archived bool
		status   transfer.Status
	}
	var wants []want
	// Six transfers, newest last: settled with a record and live (0, 2, 4), settled with a
	// record whose item is gone (1: TTL, 3: released from in_doubt), in flight (5).
	for i := range 6 {
		ck := fmt.Sprintf("history-key-%d", i)
		rec := walletClaim(walletA, ck, base.Add(time.Duration(i)*time.Minute))
		switch i {
		case 5:
			mustClaim(t, f.store, rec, base)
			wants = append(wants, want{rec.StoreKey, false, transfer.StatusInFlight})
			continue
		case 3:
			doubt := settle(attach(rec), transfer.StatusInDoubt, 0)
			putArchive(t, f, &doubt, nil, base.Add(time.Hour), 0)
			wants = append(wants, want{rec.StoreKey, true, transfer.StatusReleased})
			continue
		}
		done := settle(attach(rec), transfer.StatusReplayable, base.Unix()+86400)
		putArchive(t, f, nil, &done, base, 365*24*time.Hour)
		if i == 1 {
			wants = append(wants, want{rec.StoreKey, true, transfer.StatusReplayable})
			continue
		}
		store(t, f.store, done)
		wants = append(wants, want{rec.StoreKey, false, transfer.StatusReplayable})
	}
	slices.Reverse(wants)
	for limit := 1; limit <= 7; limit++ {
		recs, _ := listWallet(t, f.store, walletA, limit)
		var got, exp []string
		for _, r := range recs {
			got = append(got, fmt.Sprintf("%s %v %s", r.ClientKey, r.Archived, r.Status))
		}
		for _, w := range wants {
			exp = append(exp, fmt.Sprintf("%s %v %s", strings.TrimPrefix(w.key, transfer.StoreKey(walletA, "")), w.archived, w.status))
		}
		if !slices.Equal(got, exp) {
			t.Fatalf("limit %d:\n got  %q\n want %q", limit, got, exp)
		}
	}

	// A record's latest archive answers with its store key, never another's.
	a, err := f.store.LatestArchive(ctx, transfer.StoreKey(walletA, "history-key-3"))
	if err != nil || a.Record.Status != transfer.StatusReleased || a.Record.Envelope == nil || a.Record.Envelope.XDR != "" || a.RetainUntil != 0 {
		t.Fatalf("LatestArchive(hist-3) = %+v, %v", a, err)
	}
	if _, err := f.store.LatestArchive(ctx, transfer.StoreKey(walletA, "history-key-5")); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("LatestArchive of an unsettled key: %v", err)
	}

	// Forged record positions: another wallet's key, a claim ID with "#", a sort key of another
	// claim or time format.
	sk := base.Add(time.Minute).Format("2006-01-02T15:04:05.000Z") + "#"
	own := transfer.StoreKey(walletA, "history-key-1")
	other := transfer.StoreKey(walletB, "history-key-1")
	for name, pos := range map[string][2]string{
		"another wallet":        {dynamo.ArchiveKey(other, "claim-history-key-1"), sk + other + "#"},
		"a live item's sk":      {dynamo.ArchiveKey(own, "claim-history-key-1"), sk + own},
		"a claim in the sk":     {dynamo.ArchiveKey(own, "claim-history-key-1"), sk + own + "#claim-history-key-1"},
		"another key in the sk": {dynamo.ArchiveKey(own, "claim-history-key-1"), sk + transfer.StoreKey(walletA, "history-key-2") + "#"},
		"a hash in a claim":     {dynamo.ArchiveKey(own, "claim#x"), sk + own + "#"},
		"no claim":              {dynamo.ArchiveKey(own, ""), sk + own + "#"},
		"a bad time":            {dynamo.ArchiveKey(own, "claim-history-key-1"), "2026-03-01T12:01:00Z#" + own + "#"},
	} {
		cursor := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"gsi2sk":%q,"pk":%q}`, pos[1], pos[0]))
		if _, _, err := f.store.ListByWallet(ctx, walletA, 2, cursor); !errors.Is(err, transfer.ErrBadCursor) {
			t.Errorf("%s: ListByWallet = %v, want ErrBadCursor", name, err)
		}
	}
	good := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"gsi2sk":%q,"pk":%q}`, sk+own+"#", dynamo.ArchiveKey(own, "claim-history-key-1")))
	if _, _, err := f.store.ListByWallet(ctx, walletA, 2, good); err != nil {
		t.Fatalf("a record's own position: %v", err)
	}
}

// putArchive writes the lasting record of the change from old to new at at (transfer.ArchiveOf;
// nil new: the item's removal), retained for retain (0: for ever), and fails the test if the
// change calls for none or the write fails.
func putArchive(t *testing.T, f fixture, old, new *transfer.Record, at time.Time, retain time.Duration) transfer.Archive {
	t.Helper()
	a, ok := transfer.ArchiveOf(old, new, at, retain)
	if !ok {
		t.Fatalf("the change %v -> %v calls for no archive", statusOf(old), statusOf(new))
	}
	if err := f.store.PutArchive(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// statusOf is r's status, "none" for nil.
func statusOf(r *transfer.Record) string {
	if r == nil {
		return "none"
	}
	return string(r.Status)
}
