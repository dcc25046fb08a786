package transfertest

import (
	"context"
	"fmt"

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
