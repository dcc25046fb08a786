package transfertest

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// DefaultListLimit is ListInDoubt's page size when limit is not positive, as internal/dynamo's
// (dynamo.DefaultListLimit).
const DefaultListLimit = 100

// Store is a transfer.Store held in memory, with the conditional semantics of internal/dynamo's
// Store on DynamoDB, which StoreContract checks for both:
//
//   - Claim writes when no item holds the key or the item there expired before now (ExpiresAt
//     set and below now in epoch seconds; an in_flight or in_doubt item has none and never
//     expires). A lost claim returns the holder and charges nothing. A won claim adds its
//     record's charges (transfer.Record.Charges) to their daily counters in the same step; when
//     one would take its counter above its cap the claim writes nothing and returns
//     transfer.DailyLimitError (wrapped) for the first such charge. The key's holder is decided
//     first, as DynamoDB's transaction reports it: a claim lost to an item is never a limit
//     refusal.
//   - GiveBack subtracts a claim's charges once per claim ID (transfer.Counters).
//   - Replace and Delete apply only when the stored item matches the condition exactly
//     (transfer.Condition.Matches); a mismatch or a missing item is transfer.ErrConditionFailed
//     (wrapped). Replace refuses, with another error and before writing, a next record whose
//     Version is not the condition's plus one or whose ClaimID is not the condition's.
//   - Every write refuses a record that would break the item's invariants, as the DynamoDB store
//     does before any request: no store key, an unknown status, a TTL on an in_flight or in_doubt
//     item, an envelope without an inner hash, an unsettled envelope without XDR (unless a batch's:
//     transfer.Record.Batch), a malformed batch reference (transfer.CheckBatchRef), a queued item
//     holding an envelope, a lease or a TTL, or not async, a cancelled item holding an envelope or
//     a lease, not async or without its cancel audit. A claim of a cancelled item, and a Replace
//     writing one on the condition of any item but a queued one, are refused too.
//   - Get of a missing key is transfer.ErrNotFound (wrapped); GetMany leaves it out of its map.
//   - Items read back as DynamoDB stores them: times at millisecond precision in UTC, empty
//     results and lists absent, and never sharing memory with the caller's record.
//   - ListInDoubt lists in_doubt items oldest first (UpdatedAt, else CreatedAt, then the key: the
//     index's sort key), limit a page (DefaultListLimit when not positive), with an opaque cursor;
//     a cursor it did not issue is transfer.ErrBadCursor (wrapped). Unlike DynamoDB's index it is
//     consistent at once.
//   - An operation under a context already done changes nothing and returns ctx.Err(), as an SDK
//     call that never sends its request.
//
// What it does not model: DynamoDB's eventual consistency of the index, throttling, and an answer
// lost after the write applied (wrap the Store for those; Fail injects errors before a write).
// It is safe for concurrent use. The zero value is not usable: call NewStore.
type Store struct {
	mu     sync.Mutex
	items  map[string]transfer.Record
	writes int
	fail   func(op string) error
	// counters are the limits' daily totals by counter key; givenBack the claims whose charges
	// were given back.
	counters  map[string]int64
	givenBack map[string]bool
	// archives are the lasting records by store key (archive.go).
	archives map[string][]transfer.Archive
	// batches are the batches' envelopes by inner hash (batch.go); pages the stream record that
	// paged each batch in doubt.
	batches map[string]transfer.BatchEnvelope
	pages   map[string]string
}

var (
	_ transfer.Store      = (*Store)(nil)
	_ transfer.Counters   = (*Store)(nil)
	_ transfer.ManyReader = (*Store)(nil)
)

// NewStore returns an empty Store.
func NewStore() *Store {
	return &Store{items: map[string]transfer.Record{}, counters: map[string]int64{}, givenBack: map[string]bool{}}
}

// Fail sets a hook run at the start of every operation with its name ("claim", "get", "getmany",
// "replace", "delete", "list", "counter" or "giveback"); a non-nil error is returned by the operation, which then changes nothing
// and counts no write. The hook runs outside the store's lock, so it may call Put, PutIfAbsent or
// Remove to model another writer acting just before the operation. nil removes the hook.
func (s *Store) Fail(hook func(op string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = hook
}

// Put stores rec as it is, unconditionally and unchecked: an item another writer left, for
// setting up a test. It counts no write.
func (s *Store) Put(rec transfer.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items[rec.StoreKey] = stored(rec)
}

// PutIfAbsent stores rec as Put does if no item holds its key, and reports whether it did.
func (s *Store) PutIfAbsent(rec transfer.Record) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.items[rec.StoreKey]; held {
		return false
	}
	s.items[rec.StoreKey] = stored(rec)
	return true
}

// Remove deletes the item at key unconditionally (a release by another writer, or the TTL).
func (s *Store) Remove(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.items, key)
}

// Item returns the item at key and whether there is one, bypassing Fail.
func (s *Store) Item(key string) (transfer.Record, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.items[key]
	return stored(r), ok
}

// Len is the number of items held.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.items)
}

// Writes is the number of conditional writes (Claim, Replace, Delete) that reached the store:
// the requests DynamoDB would have been sent, whether their condition held or not.
func (s *Store) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// begin runs the failure hook and the context check that precede every operation.
func (s *Store) begin(ctx context.Context, op string) error {
	s.mu.Lock()
	hook := s.fail
	s.mu.Unlock()
	if hook != nil {
		if err := hook(op); err != nil {
			return err
		}
	}
	return ctx.Err() // a request after the invocation's deadline is never sent
}

// Claim writes rec if no item holds rec.StoreKey or the item there expired before now
// (ExpiresAt < now.Unix()); it returns (rec as stored, true), or the holder and false.
func (s *Store) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	if err := s.begin(ctx, "claim"); err != nil {
		return transfer.Record{}, false, err
	}
	if err := validate(rec); err != nil {
		return transfer.Record{}, false, fmt.Errorf("transfertest: claim: %w", err)
	}
	if rec.Status == transfer.StatusCancelled {
		return transfer.Record{}, false, fmt.Errorf("transfertest: claim %q: a claim never writes a cancelled item", rec.StoreKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if cur, ok := s.items[rec.StoreKey]; ok && !cur.Expired(now) {
		return stored(cur), false, nil // a lost claim charges nothing, whatever the counters hold
	}
	for _, c := range rec.Charges {
		if c.Stroops > c.Cap || s.counters[c.Counter] > c.Cap-c.Stroops {
			return transfer.Record{}, false, fmt.Errorf("transfertest: claim %q: %w", rec.StoreKey, transfer.DailyLimitError(c))
		}
	}
	for _, c := range rec.Charges {
		s.counters[c.Counter] += c.Stroops
	}
	s.items[rec.StoreKey] = stored(rec)
	return stored(rec), true, nil
}

// Counter is the total charged to the counter key (transfer.Counters).
func (s *Store) Counter(ctx context.Context, key string) (int64, error) {
	if err := s.begin(ctx, "counter"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[key], nil
}

// GiveBack subtracts the charges of claimID from their counters once per claimID
// (transfer.Counters); a later call for the same claim changes nothing. It counts one write.
func (s *Store) GiveBack(ctx context.Context, claimID string, charges []transfer.Charge) error {
	if err := s.begin(ctx, "giveback"); err != nil {
		return err
	}
	if claimID == "" || len(charges) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.givenBack[claimID] {
		return nil
	}
	s.givenBack[claimID] = true
	for _, c := range charges {
		s.counters[c.Counter] -= c.Stroops
	}
	return nil
}

// Get returns the item at key, or transfer.ErrNotFound (wrapped).
func (s *Store) Get(ctx context.Context, key string) (transfer.Record, error) {
	if err := s.begin(ctx, "get"); err != nil {
		return transfer.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.items[key]
	if !ok {
		return transfer.Record{}, fmt.Errorf("transfertest: get %q: %w", key, transfer.ErrNotFound)
	}
	return stored(cur), nil
}

// GetMany returns the items held at keys by store key, a key holding none absent
// (transfer.ManyReader); its operation name for Fail is "getmany". It reads them in one step,
// which DynamoDB's BatchGetItem does not promise (each item as of its own read): a caller must not
// count on the items' being of one instant, which no test of this store can tell.
func (s *Store) GetMany(ctx context.Context, keys []string) (map[string]transfer.Record, error) {
	if err := s.begin(ctx, "getmany"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]transfer.Record, len(keys))
	for _, k := range keys {
		if cur, ok := s.items[k]; ok {
			out[k] = stored(cur)
		}
	}
	return out, nil
}

// Replace puts next in place of the item if it matches cond; see Store.
func (s *Store) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	if err := s.begin(ctx, "replace"); err != nil {
		return err
	}
	if next.Version != cond.Version+1 {
		return fmt.Errorf("transfertest: replace %q: next version %d is not the expected %d+1", next.StoreKey, next.Version, cond.Version)
	}
	if next.ClaimID != cond.ClaimID {
		return fmt.Errorf("transfertest: replace %q: claim %q would replace claim %q", next.StoreKey, next.ClaimID, cond.ClaimID)
	}
	if err := validate(next); err != nil {
		return fmt.Errorf("transfertest: replace: %w", err)
	}
	if err := validTransition(next, cond); err != nil {
		return fmt.Errorf("transfertest: replace: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if err := s.matches("replace", next.StoreKey, cond); err != nil {
		return err
	}
	s.items[next.StoreKey] = stored(next)
	return nil
}

// Delete removes the item at key if it matches cond.
func (s *Store) Delete(ctx context.Context, key string, cond transfer.Condition) error {
	if err := s.begin(ctx, "delete"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if err := s.matches("delete", key, cond); err != nil {
		return err
	}
	delete(s.items, key)
	return nil
}

// matches is nil when the item at key satisfies cond; the caller holds s.mu.
func (s *Store) matches(op, key string, cond transfer.Condition) error {
	cur, ok := s.items[key]
	if !ok || !cond.Matches(cur) {
		return fmt.Errorf("transfertest: %s %q (expected claim %q, status %s, version %d, owner %q, inner hash %q): %w",
			op, key, cond.ClaimID, cond.Status, cond.Version, cond.LeaseOwner, cond.InnerHash, transfer.ErrConditionFailed)
	}
	return nil
}

// ListInDoubt returns at most limit in_doubt items after cursor, oldest first, and the next
// cursor ("" after the last page).
func (s *Store) ListInDoubt(ctx context.Context, limit int, cursor string) ([]transfer.Record, string, error) {
	if err := s.begin(ctx, "list"); err != nil {
		return nil, "", err
	}
	if limit <= 0 {
		limit = DefaultListLimit
	}
	after, err := decodeCursor(cursor)
	if err != nil {
		return nil, "", fmt.Errorf("transfertest: list in doubt: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	type entry struct {
		sk  string
		rec transfer.Record
	}
	var all []entry
	for _, r := range s.items {
		if r.Status == transfer.StatusInDoubt {
			if sk := sortKey(r); sk > after {
				all = append(all, entry{sk, r})
			}
		}
	}
	slices.SortFunc(all, func(a, b entry) int { return strings.Compare(a.sk, b.sk) })
	next := ""
	if len(all) > limit {
		all = all[:limit]
		next = encodeCursor(all[limit-1].sk)
	}
	out := make([]transfer.Record, len(all))
	for i, e := range all {
		out[i] = stored(e.rec)
	}
	return out, next, nil
}

// sortKey is an in_doubt item's position in the listing, as internal/dynamo's gsi1sk: the time
// it went in doubt (UpdatedAt, else CreatedAt) in milliseconds UTC, "#", the key.
func sortKey(r transfer.Record) string {
	at := r.UpdatedAt
	if at.IsZero() {
		at = r.CreatedAt
	}
	return at.UTC().Format("2006-01-02T15:04:05.000Z") + "#" + r.StoreKey
}

// cursorPrefix marks this store's cursors, so that a cursor of another listing or store is
// refused rather than read as a position.
const cursorPrefix = "transfertest/in_doubt/"

// encodeCursor is the opaque cursor after the item whose sort key is sk: base64url without
// padding of cursorPrefix and sk.
func encodeCursor(sk string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorPrefix + sk))
}

// decodeCursor is the sort key a cursor names ("" for the start), or an error wrapping
// transfer.ErrBadCursor for any text encodeCursor does not write.
func decodeCursor(cursor string) (string, error) {
	if cursor == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor)
	sk, ok := strings.CutPrefix(string(b), cursorPrefix)
	if err != nil || !ok || sk == "" || encodeCursor(sk) != cursor {
		return "", fmt.Errorf("%w: %q is not a cursor this store issued", transfer.ErrBadCursor, truncate(cursor))
	}
	return sk, nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// validate refuses the records internal/dynamo refuses to write (its marshalRecord), so that a
// test passing here does not write an item DynamoDB would never hold.
func validate(rec transfer.Record) error {
	unsettled := rec.Status == transfer.StatusInFlight || rec.Status == transfer.StatusInDoubt
	switch {
	case rec.StoreKey == "":
		return fmt.Errorf("record has no store key")
	case !validStatus(rec.Status):
		return fmt.Errorf("record %q: unknown status %q", rec.StoreKey, rec.Status)
	case rec.ExpiresAt != 0 && unsettled:
		return fmt.Errorf("record %q: a %s item must not expire (expiresAt %d)", rec.StoreKey, rec.Status, rec.ExpiresAt)
	case rec.Envelope != nil && rec.Envelope.InnerHash == "":
		return fmt.Errorf("record %q: envelope without an inner hash", rec.StoreKey)
	case rec.Envelope != nil && rec.Envelope.XDR == "" && unsettled && rec.Batch == nil:
		return fmt.Errorf("record %q: a %s envelope without XDR", rec.StoreKey, rec.Status)
	case rec.Status == transfer.StatusQueued && (rec.Envelope != nil || rec.LeaseOwner != "" || rec.ExpiresAt != 0 || !rec.Async):
		return fmt.Errorf("record %q: a queued item holds no envelope, lease or TTL and is async", rec.StoreKey)
	case rec.Status == transfer.StatusCancelled && (rec.Envelope != nil || rec.LeaseOwner != "" || !rec.Async ||
		rec.Audit == nil || rec.Audit.Action != transfer.AuditCancel):
		return fmt.Errorf("record %q: a cancelled item holds no envelope or lease, is async and has its cancel audit", rec.StoreKey)
	case rec.NotBefore < 0 || rec.NotBefore != 0 && rec.Status != transfer.StatusQueued:
		return fmt.Errorf("record %q: notBefore %d on a %s item; only a queued item is held back", rec.StoreKey, rec.NotBefore, rec.Status)
	case rec.Status == transfer.StatusQueued && rec.NotBefore != 0 && (rec.Result == nil || rec.Result.Code == ""),
		rec.Status == transfer.StatusQueued && rec.NotBefore == 0 && rec.Result != nil:
		return fmt.Errorf("record %q: a queued item is held back (notBefore) exactly when it holds the failure it waits out", rec.StoreKey)
	}
	return transfer.CheckBatchRef(rec)
}

// validTransition refuses, before writing, a cancelled item written on a condition other than a
// queued item's, as internal/dynamo's Replace does: only a queued item holds nothing that can
// land (internal/transfer/doc.go, "The item": cancel), and a claim never writes one.
func validTransition(next transfer.Record, cond transfer.Condition) error {
	if cond.Status == transfer.StatusCancelled {
		return fmt.Errorf("record %q: a cancelled item is final", next.StoreKey)
	}
	if next.Status == transfer.StatusCancelled && cond.Status != transfer.StatusQueued {
		return fmt.Errorf("record %q: only a queued item can be cancelled, not a %s one", next.StoreKey, cond.Status)
	}
	return nil
}

func validStatus(s transfer.Status) bool {
	switch s {
	case transfer.StatusInFlight, transfer.StatusReplayable, transfer.StatusRejected, transfer.StatusInDoubt, transfer.StatusQueued,
		transfer.StatusCancelled:
		return true
	}
	return false
}

// stored is rec as DynamoDB gives it back (internal/dynamo's item mapping): a deep copy, times
// at millisecond precision in UTC, a result with no field set read as none, empty lists as nil,
// and the outer hashes listed only when there is more than one (transfer.Envelope.Outers).
func stored(rec transfer.Record) transfer.Record {
	rec.LeaseExpiresAt = millis(rec.LeaseExpiresAt)
	rec.CreatedAt = millis(rec.CreatedAt)
	rec.UpdatedAt = millis(rec.UpdatedAt)
	if e := rec.Envelope; e != nil {
		c := *e
		c.OuterHashes = nil
		if outers := e.Outers(); len(outers) > 1 {
			c.OuterHashes = outers
		}
		rec.Envelope = &c
	}
	if r := rec.Result; r != nil {
		c := *r
		c.ResultCodes = nilIfEmpty(r.ResultCodes)
		rec.Result = &c
		if c.TransactionHash == "" && c.Ledger == 0 && c.Code == "" && c.HTTPStatus == 0 && c.Detail == "" &&
			c.ResultCodes == nil && c.FeeChargedStroops == 0 {
			rec.Result = nil
		}
	}
	if a := rec.Audit; a != nil {
		c := *a
		c.At = millis(a.At)
		rec.Audit = &c
	}
	if b := rec.Batch; b != nil {
		c := *b
		rec.Batch = &c
	}
	if len(rec.Charges) == 0 {
		rec.Charges = nil
	} else {
		rec.Charges = slices.Clone(rec.Charges)
	}
	return rec
}

func millis(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return time.UnixMilli(t.UnixMilli()).UTC()
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return slices.Clone(s)
}
