// Package sourcestest holds the test helpers of the transaction sources (internal/stellar/sources)
// and the ledgers built on them (internal/stellar): a lease store in memory and test keys, in the
// style of net/http/httptest. It imports neither package, so both packages' own tests use it.
package sourcestest

import (
	"bytes"
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Keys are random keys with two listed channels and a fixed SEP-5 master seed (64 bytes of 0xab),
// so the derived channel accounts are the same in every run. It fails tb when no key can be made.
func Keys(tb testing.TB) signing.Keys {
	tb.Helper()
	k, err := signing.GenerateKeys(2)
	if err != nil {
		tb.Fatal(err)
	}
	k.ChannelMaster = signing.NewMasterSeed(bytes.Repeat([]byte{0xab}, 64))
	return k
}

// Leases is sources.LeaseStore in memory with the semantics of internal/dynamo's ChannelLeases: a
// lease is granted when the channel has none unexpired at now (compared in milliseconds, as the
// item stores them) and its last quarantine (the lease's maxTime, in seconds) ended before the
// latest ledger's close; it keeps a history of grants. The zero value is empty and ready; it is
// safe for concurrent use.
type Leases struct {
	mu      sync.Mutex
	m       map[string]lease
	granted []string
}

type lease struct {
	owner           string
	until           time.Time
	quarantineUntil int64
}

// LeaseChannel grants channel to owner until until, quarantined until maxTime, or answers
// transfer.ErrConditionFailed when the channel is leased or quarantined at now and ledgerClose.
func (s *Leases) LeaseChannel(_ context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]lease{}
	}
	if l, ok := s.m[channel]; ok && !(l.until.UnixMilli() < now.UnixMilli() && l.quarantineUntil < ledgerClose.Unix()) {
		return transfer.ErrConditionFailed
	}
	s.m[channel] = lease{owner: owner, until: until, quarantineUntil: maxTime.Unix()}
	s.granted = append(s.granted, channel)
	return nil
}

// ReleaseChannel ends owner's lease of channel, or answers transfer.ErrConditionFailed when
// owner holds none.
func (s *Leases) ReleaseChannel(_ context.Context, channel, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.m[channel]; !ok || l.owner != owner {
		return transfer.ErrConditionFailed
	}
	delete(s.m, channel)
	return nil
}

// Leased is how many channels have a lease item (expired ones included, as in the table).
func (s *Leases) Leased() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// Granted is every channel granted so far, in the order of the grants (a copy).
func (s *Leases) Granted() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.granted)
}

// Owner is the owner of channel's lease item, "" when it has none.
func (s *Leases) Owner(channel string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[channel].owner
}
