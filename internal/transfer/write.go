package transfer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
)

// The item's writers: every conditional write after the claim goes through ReplaceItem or
// DeleteItem, which name the item as its writer read it (Expect) and recognise a write of their own
// whose answer was lost (doc.go, "The item" and "Incarnations").

// ItemWriter is the part of Store that ReplaceItem and DeleteItem use: a consistent read and the
// two conditional writes.
type ItemWriter interface {
	Get(ctx context.Context, storeKey string) (Record, error)
	Replace(ctx context.Context, next Record, cond Condition) error
	Delete(ctx context.Context, storeKey string, cond Condition) error
}

// ReplaceItem writes next in place of cur, the item as the caller read it, on the condition
// Expect(cur): so it can change only that incarnation in that state, never a later claim of the same
// key. next must keep cur's ClaimID and have Version cur.Version+1.
//
// A conditional write whose answer was lost is retried by the SDK and then fails its condition
// against the item it wrote itself, or every retry fails in transit and the write's fate is
// unknown; so on any error the item is read back, and if it is next as written (same incarnation,
// version, status, lease owner, envelope and audit) the write succeeded. Errors:
// ErrConditionFailed (wrapped) when another writer changed the item first, or the store's errors
// (the write may then have applied or not).
func ReplaceItem(ctx context.Context, s ItemWriter, cur, next Record) error {
	err := s.Replace(ctx, next, Expect(cur))
	if err == nil {
		return nil
	}
	stored, gerr := s.Get(ctx, next.StoreKey)
	if gerr == nil && sameWrite(stored, next) {
		return nil
	}
	return err
}

// DeleteItem removes cur, the item as the caller read it, on the condition Expect(cur): only done
// when nothing can land for it (cur is in_flight or in_doubt). When the condition fails and the key
// then holds no item, or an item of another incarnation (another ClaimID), the incarnation the
// caller read is gone: its own delete applied and the answer was lost, or another writer released
// the same incarnation for the same reason. In_flight and in_doubt items never expire, so a later
// claim exists only once cur's item was deleted. That is what the caller wanted: it succeeds. An
// item of a later incarnation is never touched. Errors: ErrConditionFailed (wrapped) when the item
// of cur's incarnation changed, or the store's errors.
func DeleteItem(ctx context.Context, s ItemWriter, cur Record) error {
	err := s.Delete(ctx, cur.StoreKey, Expect(cur))
	if err == nil || !errors.Is(err, ErrConditionFailed) {
		return err
	}
	stored, gerr := s.Get(ctx, cur.StoreKey)
	if errors.Is(gerr, ErrNotFound) || gerr == nil && stored.ClaimID != cur.ClaimID &&
		(cur.Status == StatusInFlight || cur.Status == StatusInDoubt) {
		return nil
	}
	return err
}

// sameWrite reports whether stored is the item that next describes: the fields that identify one
// writer's write of one incarnation.
func sameWrite(stored, next Record) bool {
	if !Expect(next).Matches(stored) {
		return false
	}
	switch {
	case next.Envelope != nil && !slices.Equal(stored.Envelope.Outers(), next.Envelope.Outers()):
		// A replacement by fee changes only the envelope's outer hashes: the read-back must hold
		// the one this write recorded, or its envelope is not to be sent (replace.go).
		return false
	case stored.NotBefore != next.NotBefore:
		// A requeue held back (RequeuedAfter) and one that is not, from the same state, are two
		// writes: only the one this write made is its own.
		return false
	case (stored.Audit == nil) != (next.Audit == nil):
		return false
	case next.Audit != nil && (stored.Audit.Operator != next.Audit.Operator || stored.Audit.Action != next.Audit.Action ||
		stored.Audit.At.UnixMilli() != next.Audit.At.UnixMilli() || stored.Audit.RequestID != next.Audit.RequestID):
		return false
	}
	return true
}

// NewClaimID returns a fresh incarnation ID: 16 random bytes in hex (crypto/rand), so no two claims
// of any key share one.
func NewClaimID() string { return randomID() }

// randomID is 16 bytes from crypto/rand in hex: claim IDs and lease owners.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
