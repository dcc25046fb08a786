package transfertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

var _ transfer.ArchiveStore = (*Store)(nil)

// PutArchive keeps a unless the archive of the same incarnation (StoreKey, ClaimID) is held at a
// Version at or above a.Record.Version, as internal/dynamo's conditional PutItem does; a record
// that is not archivable (transfer.Archivable) or has no store key is an error before writing.
// It keeps the record in transfer.ArchivedForm. It counts no write in Writes (those are the item's writes) but runs the Fail hook as "archive".
func (s *Store) PutArchive(ctx context.Context, a transfer.Archive) error {
	if err := s.begin(ctx, "archive"); err != nil {
		return err
	}
	if err := validArchive(a); err != nil {
		return fmt.Errorf("transfertest: put archive: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.archives == nil {
		s.archives = map[string][]transfer.Archive{}
	}
	list := s.archives[a.Record.StoreKey]
	c := a
	c.Record = stored(transfer.ArchivedForm(a.Record))
	for i, held := range list {
		if held.Record.ClaimID == a.Record.ClaimID {
			if held.Record.Version < a.Record.Version {
				list[i] = c
			}
			return nil
		}
	}
	s.archives[a.Record.StoreKey] = append(list, c)
	return nil
}

// LatestArchive returns the archive of storeKey's newest incarnation (CreatedAt, then ClaimID),
// or transfer.ErrNotFound (wrapped).
func (s *Store) LatestArchive(ctx context.Context, storeKey string) (transfer.Archive, error) {
	if err := s.begin(ctx, "get archive"); err != nil {
		return transfer.Archive{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var best *transfer.Archive
	for i, a := range s.archives[storeKey] {
		if best == nil || newerIncarnation(a.Record, best.Record) {
			best = &s.archives[storeKey][i]
		}
	}
	if best == nil {
		return transfer.Archive{}, fmt.Errorf("transfertest: latest archive %q: %w", storeKey, transfer.ErrNotFound)
	}
	out := *best
	out.Record = stored(best.Record)
	out.Record.Archived = true
	return out, nil
}

// Archives returns every archive held for storeKey, bypassing Fail, in no particular order.
func (s *Store) Archives(storeKey string) []transfer.Archive {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]transfer.Archive, 0, len(s.archives[storeKey]))
	for _, a := range s.archives[storeKey] {
		c := a
		c.Record = stored(a.Record)
		out = append(out, c)
	}
	return out
}

// newerIncarnation orders incarnations as the records index does: CreatedAt, then ClaimID.
func newerIncarnation(a, b transfer.Record) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return a.ClaimID > b.ClaimID
}

// validArchive refuses what internal/dynamo's PutArchive refuses before any request.
func validArchive(a transfer.Archive) error {
	r := a.Record
	switch {
	case r.StoreKey == "":
		return fmt.Errorf("archive has no store key: %w", transfer.ErrNotArchivable)
	case !transfer.Archivable(r.Status):
		return fmt.Errorf("archive %q of a %s item: %w", r.StoreKey, r.Status, transfer.ErrNotArchivable)
	case r.ClaimID == "":
		return fmt.Errorf("archive %q without a claim ID: %w", r.StoreKey, transfer.ErrNotArchivable)
	case r.CreatedAt.IsZero():
		return fmt.Errorf("archive %q without createdAt: %w", r.StoreKey, transfer.ErrNotArchivable)
	case a.RetainUntil < 0:
		return fmt.Errorf("archive %q: negative retention %d", r.StoreKey, a.RetainUntil)
	}
	return nil
}

// ListArchivedDay lists the archives whose SettledAt falls on day's UTC day, oldest first (then
// by store key and claim ID, as the DynamoDB index's sort key), limit a page (DefaultListLimit when
// not positive), with an opaque cursor; a cursor it did not issue for that day is
// transfer.ErrBadCursor (wrapped).
func (s *Store) ListArchivedDay(ctx context.Context, day time.Time, limit int, cursor string) ([]transfer.Archive, string, error) {
	if err := s.begin(ctx, "list archives"); err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	want := transfer.ArchiveDay(day)
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if after != "" && !strings.HasPrefix(after, want+"T") {
		return nil, "", fmt.Errorf("%w: a cursor of another day", transfer.ErrBadCursor)
	}
	s.mu.Lock()
	var all []transfer.Archive
	for _, list := range s.archives {
		for _, a := range list {
			if transfer.ArchiveDay(a.SettledAt()) == want {
				c := a
				c.Record = stored(a.Record)
				c.Record.Archived = true
				all = append(all, c)
			}
		}
	}
	s.mu.Unlock()
	slices.SortFunc(all, func(a, b transfer.Archive) int { return strings.Compare(daySortKey(a), daySortKey(b)) })
	var page []transfer.Archive
	for _, a := range all {
		if after != "" && daySortKey(a) <= after {
			continue
		}
		if len(page) == limit {
			return page, encodeCursor(daySortKey(page[len(page)-1])), nil
		}
		page = append(page, a)
	}
	return page, "", nil
}

// daySortKey orders a day's archives: the settlement time (milliseconds, UTC), the store key, the
// claim ID.
func daySortKey(a transfer.Archive) string {
	return a.SettledAt().UTC().Format("2006-01-02T15:04:05.000Z") + "#" + a.Record.StoreKey + "#" + a.Record.ClaimID
}
