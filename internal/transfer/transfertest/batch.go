package transfertest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The in-memory Store's batches (transfer.BatchStore), with internal/dynamo's semantics, which
// BatchContract checks for both:
//
//   - PutBatch writes a batch envelope (it must Validate) if no batch of its inner hash is held;
//     else transfer.ErrConditionFailed (wrapped), writing nothing.
//   - GetBatch reads one back as stored (times at millisecond precision in UTC, never sharing
//     memory with the caller's), or transfer.ErrNotFound (wrapped).
//   - ReplaceAll writes 1 to transfer.MaxBatchOperations items, one per store key, all or nothing:
//     every write is checked as Replace checks it (version, claim, the item's invariants, the
//     cancel's transition) before anything is written, then every condition; if any fails,
//     nothing is written and the answer is *transfer.BatchConditionError naming each key whose
//     condition failed, in the writes' order.
//   - ReplaceBatch writes a replacement's envelope (XDR, outer hash, every outer hash, fee) and
//     version to a held batch of its inner hash at the version before, keeping the rest; else
//     transfer.ErrConditionFailed (wrapped), writing nothing.
//   - ExpireBatch sets a held batch's ExpiresAt, or answers transfer.ErrNotFound (wrapped).
//   - PageBatch claims a held batch's in-doubt page for the first record to ask and that record
//     again (true), never for another or for a batch not held (false); the batch reads back as
//     before.
//   - DropExpired removes what DynamoDB's TTL deletion may remove once now is past an item's
//     ExpiresAt (a test's clock stands for the time the deletion runs).

var _ transfer.BatchStore = (*Store)(nil)

// PutBatch writes b if no batch of its inner hash is held.
func (s *Store) PutBatch(ctx context.Context, b transfer.BatchEnvelope) error {
	if err := s.begin(ctx, "putbatch"); err != nil {
		return err
	}
	if err := b.Validate(); err != nil {
		return fmt.Errorf("transfertest: put batch: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	if s.batches == nil {
		s.batches = map[string]transfer.BatchEnvelope{}
	}
	if _, held := s.batches[b.Envelope.InnerHash]; held {
		return fmt.Errorf("transfertest: put batch %s: %w", b.Envelope.InnerHash, transfer.ErrConditionFailed)
	}
	s.batches[b.Envelope.InnerHash] = storedBatch(b)
	return nil
}

// GetBatch returns the batch whose inner hash is innerHash, or transfer.ErrNotFound (wrapped).
func (s *Store) GetBatch(ctx context.Context, innerHash string) (transfer.BatchEnvelope, error) {
	if err := s.begin(ctx, "getbatch"); err != nil {
		return transfer.BatchEnvelope{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[innerHash]
	if !ok {
		return transfer.BatchEnvelope{}, fmt.Errorf("transfertest: get batch %s: %w", innerHash, transfer.ErrNotFound)
	}
	return storedBatch(b), nil
}

// ReplaceAll writes every w.Next if every stored item matches its w.Cond, else nothing.
func (s *Store) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	if err := s.begin(ctx, "replaceall"); err != nil {
		return err
	}
	if len(writes) == 0 || len(writes) > transfer.MaxBatchOperations {
		return fmt.Errorf("transfertest: replace all: %d writes, want 1 to %d", len(writes), transfer.MaxBatchOperations)
	}
	keys := make([]string, 0, len(writes))
	for _, w := range writes {
		next, cond := w.Next, w.Cond
		switch {
		case slices.Contains(keys, next.StoreKey):
			return fmt.Errorf("transfertest: replace all: %q written twice", next.StoreKey)
		case next.Version != cond.Version+1:
			return fmt.Errorf("transfertest: replace all %q: next version %d is not the expected %d+1", next.StoreKey, next.Version, cond.Version)
		case next.ClaimID != cond.ClaimID:
			return fmt.Errorf("transfertest: replace all %q: claim %q would replace claim %q", next.StoreKey, next.ClaimID, cond.ClaimID)
		}
		if err := validate(next); err != nil {
			return fmt.Errorf("transfertest: replace all: %w", err)
		}
		if err := validTransition(next, cond); err != nil {
			return fmt.Errorf("transfertest: replace all: %w", err)
		}
		keys = append(keys, next.StoreKey)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	var failed []string
	for _, w := range writes {
		if cur, ok := s.items[w.Next.StoreKey]; !ok || !w.Cond.Matches(cur) {
			failed = append(failed, w.Next.StoreKey)
		}
	}
	if len(failed) > 0 {
		return &transfer.BatchConditionError{Failed: failed}
	}
	for _, w := range writes {
		s.items[w.Next.StoreKey] = stored(w.Next)
	}
	return nil
}

// ReplaceBatch writes next's envelope and version to the held batch of its inner hash if that
// holds version next.Version-1, keeping its operations, creation time and TTL.
func (s *Store) ReplaceBatch(ctx context.Context, next transfer.BatchEnvelope) error {
	if err := s.begin(ctx, "replacebatch"); err != nil {
		return err
	}
	if err := next.Validate(); err != nil {
		return fmt.Errorf("transfertest: replace batch: %w", err)
	}
	if next.Version < 2 || next.Envelope.OuterHash == "" {
		return fmt.Errorf("transfertest: replace batch %s: version %d with outer hash %q is no replacement", next.Envelope.InnerHash, next.Version, next.Envelope.OuterHash)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[next.Envelope.InnerHash]
	if !ok || b.Version != next.Version-1 {
		return fmt.Errorf("transfertest: replace batch %s: %w", next.Envelope.InnerHash, transfer.ErrConditionFailed)
	}
	s.writes++
	env := next.Envelope
	env.MaxTime, env.SubmittedLedger, env.Channel = b.Envelope.MaxTime, b.Envelope.SubmittedLedger, b.Envelope.Channel
	env.OuterHashes = slices.Clone(env.Outers())
	b.Envelope, b.Version = env, next.Version
	s.batches[next.Envelope.InnerHash] = storedBatch(b)
	return nil
}

// ExpireBatch sets the TTL of the batch whose inner hash is innerHash.
func (s *Store) ExpireBatch(ctx context.Context, innerHash string, expiresAt int64) error {
	if err := s.begin(ctx, "expirebatch"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.batches[innerHash]
	if !ok {
		return fmt.Errorf("transfertest: expire batch %s: %w", innerHash, transfer.ErrNotFound)
	}
	s.writes++
	b.ExpiresAt = expiresAt
	s.batches[innerHash] = b
	return nil
}

// PageBatch claims the batch's in-doubt page for by, as internal/dynamo's Store.PageBatch: true
// for the first claimant and the same one again, false for another; false with transfer.ErrNotFound
// (wrapped) for a batch not held.
func (s *Store) PageBatch(ctx context.Context, innerHash, by string) (bool, error) {
	if err := s.begin(ctx, "pagebatch"); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.batches[innerHash]; !ok {
		return false, fmt.Errorf("transfertest: page batch %s: %w", innerHash, transfer.ErrNotFound)
	}
	if s.pages == nil {
		s.pages = map[string]string{}
	}
	if cur, ok := s.pages[innerHash]; ok && cur != by {
		return false, nil
	}
	s.writes++
	s.pages[innerHash] = by
	return true, nil
}

// DropExpired deletes every item and batch whose TTL (ExpiresAt, epoch seconds, 0 never) is
// before now, as DynamoDB's TTL deletion may at any time after it, and returns how many it
// deleted.
func (s *Store) DropExpired(now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, rec := range s.items {
		if rec.ExpiresAt != 0 && rec.ExpiresAt < now.Unix() {
			delete(s.items, k)
			n++
		}
	}
	for h, b := range s.batches {
		if b.ExpiresAt != 0 && b.ExpiresAt < now.Unix() {
			delete(s.batches, h)
			n++
		}
	}
	return n
}

// storedBatch is b as DynamoDB gives it back: a deep copy, its creation time at millisecond
// precision in UTC, and its envelope's outer hashes as an item stores them (stored).
func storedBatch(b transfer.BatchEnvelope) transfer.BatchEnvelope {
	env := stored(transfer.Record{Envelope: &b.Envelope}).Envelope
	b.Envelope = *env
	b.Ops = slices.Clone(b.Ops)
	b.CreatedAt = millis(b.CreatedAt)
	return b
}
