package transfer

import (
	"context"
	"errors"
	"time"
)

// The lasting record (doc.go, "The lasting record"): every settled incarnation of a key is kept,
// after its replay window, as an Archive in a store of its own (ArchiveStore), written by the
// table's stream consumer (internal/alert) from the item's image. An archive is never read by a
// claim, a replay or a conditional write: it answers GET and a wallet's history only, so it can
// neither extend the replay window nor make a claim fail.

// StatusReleased is the status of an Archive whose item was deleted while in_doubt: released
// because the ledger proved nothing landed, or discarded by an operator (Audit says who). Nothing
// moved for that incarnation. No live item ever holds it.
const StatusReleased Status = "released"

// Archive is the lasting record of one incarnation (Record.ClaimID) of a key, as of its settled
// state: Record is the item's image at that state (its ExpiresAt the end of its replay window, its
// Audit the operator's resolution or the cancellation; in ArchivedForm), Status replayable, rejected, cancelled or StatusReleased.
type Archive struct {
	Record Record
	// RetainUntil is when the archive may be deleted (the store's TTL), epoch seconds; 0 keeps it
	// for ever.
	RetainUntil int64
}

// Retained reports whether the archive is still within its retention at now: DynamoDB deletes
// expired items days late, so retention is decided here, never by the item's absence.
func (a Archive) Retained(now time.Time) bool {
	return a.RetainUntil == 0 || a.RetainUntil >= now.Unix()
}

// ArchiveStore keeps the lasting records. internal/dynamo stores them in the transfer table under
// keys of their own (ArchiveKey); transfertest.Store in memory.
type ArchiveStore interface {
	// PutArchive writes a unless the store already holds the archive of the same incarnation
	// (StoreKey, ClaimID) at a Version at or above a.Record.Version: a repeated or late write (the
	// stream delivers at least once) changes nothing and returns nil. a.Record must be settled
	// (ArchiveOf builds it); anything else is an error before writing.
	PutArchive(ctx context.Context, a Archive) error
	// LatestArchive reads the archive of storeKey's newest incarnation (CreatedAt, then ClaimID);
	// ErrNotFound (wrapped) when there is none. It may read an eventually consistent index: an
	// archive shows a moment after it is written.
	LatestArchive(ctx context.Context, storeKey string) (Archive, error)
	// ListArchivedDay reads the archives settled on one UTC day (day: any instant of it; an
	// archive's day is SettledAt's), oldest first, at most limit (a store default when not
	// positive) after cursor ("" for the first page), and the next cursor, "" when there is no
	// more. A cursor the store did not issue for that day is ErrBadCursor (wrapped). It is what a
	// daily reconciliation reads; the index behind it may be eventually consistent.
	ListArchivedDay(ctx context.Context, day time.Time, limit int, cursor string) ([]Archive, string, error)
}

// SettledAt is when the archived incarnation settled: its item's last write (UpdatedAt); for a
// released one, the last write before its removal.
func (a Archive) SettledAt() time.Time { return a.Record.UpdatedAt }

// ArchiveDay is the UTC day of t as "YYYY-MM-DD", the day ListArchivedDay files an archive under.
func ArchiveDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ArchiveOf is the archive a change of a transfer item calls for, and whether it calls for one:
// old and next are the item before and after the change (nil: none, an insert or a removal).
//   - a write into a settled state (replayable, rejected, cancelled) archives next: a transition
//     into it, or a later write of it (an operator's action on a settled item);
//   - a removal of an in_doubt item (released: proven dead, included FAILED on the service's
//     side, or discarded by an operator) archives old with StatusReleased;
//   - nothing else does: in_flight, queued and in_doubt are not settled, and the removal of a
//     settled item is its TTL, long after it was archived.
//
// retention is how long the archive is kept after the settlement (next's UpdatedAt, or the
// removal's time at); 0 keeps it for ever.
func ArchiveOf(old, next *Record, at time.Time, retention time.Duration) (Archive, bool) {
	var rec Record
	settledAt := at
	switch {
	case next != nil && settledStatus(next.Status):
		rec = *next
		if !next.UpdatedAt.IsZero() {
			settledAt = next.UpdatedAt
		}
	case next == nil && old != nil && old.Status == StatusInDoubt:
		rec = *old
		rec.Status = StatusReleased
		if settledAt.IsZero() {
			settledAt = old.UpdatedAt
		} else {
			// Filed under the day of the release, not of the item's last write (going in doubt).
			rec.UpdatedAt = settledAt
		}
	case next == nil && old != nil && settledStatus(old.Status):
		// A settled item removed (its TTL): the last chance to keep it if the settlement's own
		// stream record was lost (a batch given up after the mapping's retries). The write is
		// conditional on the version, so a record already kept is not changed.
		rec = *old
		if !old.UpdatedAt.IsZero() {
			settledAt = old.UpdatedAt
		}
	default:
		return Archive{}, false
	}
	if rec.StoreKey == "" {
		return Archive{}, false
	}
	a := Archive{Record: ArchivedForm(rec)}
	if retention > 0 {
		a.RetainUntil = settledAt.Add(retention).Unix()
	}
	return a, true
}

// ArchivedForm is rec as an archive keeps it: without the fingerprint, the lease, the limits'
// charges (given back or kept by the live item's writes, never by its record), the signed
// XDR (it can never land again, and the record outlives any use of it), the channel account,
// the ledger seen before the first send and the fee bid (operational details of the sending, not
// of the transfer: the result keeps the ledger and the fee charged; dropping them keeps a record
// with the longest text memo within one write unit). Every ArchiveStore stores this form, so the stores read back alike.
func ArchivedForm(rec Record) Record {
	rec.Fingerprint, rec.LeaseOwner, rec.LeaseExpiresAt, rec.Archived, rec.Charges = "", "", time.Time{}, false, nil
	if rec.Envelope != nil {
		env := *rec.Envelope
		env.XDR, env.Channel, env.SubmittedLedger, env.FeeStroops = "", "", 0, 0
		rec.Envelope = &env
	}
	return rec
}

// settledStatus reports whether an item in status s holds its final outcome for its incarnation.
func settledStatus(s Status) bool {
	return s == StatusReplayable || s == StatusRejected || s == StatusCancelled
}

// Archivable reports whether s is a status an Archive may hold.
func Archivable(s Status) bool { return settledStatus(s) || s == StatusReleased }

// ErrNotArchivable is returned (wrapped) by ArchiveStore.PutArchive for a record that is not
// settled.
var ErrNotArchivable = errors.New("transfer: only a settled record is archived")
