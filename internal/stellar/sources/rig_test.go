package sources

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// testKeys are random keys with two listed channels and a SEP-5 master seed.
func testKeys(t *testing.T) signing.Keys {
	t.Helper()
	k, err := signing.GenerateKeys(2)
	if err != nil {
		t.Fatal(err)
	}
	k.ChannelMaster = signing.NewMasterSeed(bytes.Repeat([]byte{0xab}, 64))
	return k
}

// memLeases is LeaseStore in memory with internal/dynamo ChannelLeases' semantics (a lease is
// granted when none is unexpired at now and the last quarantine ended before the latest ledger's
// close), keeping a history of grants. internal/stellar's suite keeps its own, for the ledger.
type memLeases struct {
	mu      sync.Mutex
	m       map[string]memLease
	granted []string
}

type memLease struct {
	owner           string
	until           time.Time
	quarantineUntil int64
}

func (s *memLeases) LeaseChannel(_ context.Context, channel, owner string, now, until, maxTime, ledgerClose time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]memLease{}
	}
	if l, ok := s.m[channel]; ok && !(l.until.UnixMilli() < now.UnixMilli() && l.quarantineUntil < ledgerClose.Unix()) {
		return transfer.ErrConditionFailed
	}
	s.m[channel] = memLease{owner: owner, until: until, quarantineUntil: maxTime.Unix()}
	s.granted = append(s.granted, channel)
	return nil
}

func (s *memLeases) ReleaseChannel(_ context.Context, channel, owner string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.m[channel]; !ok || l.owner != owner {
		return transfer.ErrConditionFailed
	}
	delete(s.m, channel)
	return nil
}

func (s *memLeases) leased() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
