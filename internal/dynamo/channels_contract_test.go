package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestChannelLeasesMinidyn runs the lease contract against minidyn in-process.
func TestChannelLeasesMinidyn(t *testing.T) {
	runLeaseContract(t, func(t *testing.T) *dynamo.ChannelLeases {
		client, _ := dynamotest.Minidyn(t)
		return dynamo.NewChannelLeases(client, dynamotest.NewStore(t, client).Table())
	})
}

// TestChannelLeasesDynalite runs it against dynalite at $DYNALITE_ENDPOINT (make test-dynalite).
func TestChannelLeasesDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set: start dynalite with .ci/dynalite/run.sh PORT and set DYNALITE_ENDPOINT=http://127.0.0.1:PORT")
	}
	client := dynamotest.NewClient(endpoint)
	runLeaseContract(t, func(t *testing.T) *dynamo.ChannelLeases {
		return dynamo.NewChannelLeases(client, dynamotest.NewStore(t, client).Table())
	})
}

const (
	chA = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	chB = "GAIH3ULLFQ4DGSECF2AR555KZ4KNDGEKN4AFI4SU2M7B43MGK3QJZNSR"
)

func runLeaseContract(t *testing.T, newLeases func(t *testing.T) *dynamo.ChannelLeases) {
	ctx := context.Background()
	now := t0
	until := now.Add(30 * time.Second)
	maxTime := now.Add(20 * time.Second)
	closeBefore := now.Add(-5 * time.Second) // a ledger that closed before now

	t.Run("lease, refuse the second, release, lease again", func(t *testing.T) {
		l := newLeases(t)
		if err := l.LeaseChannel(ctx, chA, "o1", now, until, maxTime, closeBefore); err != nil {
			t.Fatal(err)
		}
		got, err := l.Channel(ctx, chA)
		if err != nil || got.Owner != "o1" || !got.LeaseExpiresAt.Equal(until) || !got.QuarantinedUntil.Equal(maxTime) || !got.LeasedAt.Equal(now) {
			t.Fatalf("stored lease %+v, %v", got, err)
		}
		if err := l.LeaseChannel(ctx, chA, "o2", now.Add(time.Second), until, maxTime, closeBefore); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("second lease: %v", err)
		}
		// Another channel is independent.
		if err := l.LeaseChannel(ctx, chB, "o2", now, until, maxTime, closeBefore); err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseChannel(ctx, chA, "o2"); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("release by a stranger: %v", err)
		}
		if err := l.ReleaseChannel(ctx, chA, "o1"); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Channel(ctx, chA); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("released channel still stored: %v", err)
		}
		if err := l.ReleaseChannel(ctx, chA, "o1"); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("second release: %v", err)
		}
		// Released: free at once, whatever the quarantine said.
		if err := l.LeaseChannel(ctx, chA, "o3", now.Add(time.Second), until, maxTime, closeBefore); err != nil {
			t.Fatalf("lease after release: %v", err)
		}
	})

	t.Run("an expired lease stays quarantined until a ledger closes after maxTime", func(t *testing.T) {
		l := newLeases(t)
		if err := l.LeaseChannel(ctx, chA, "o1", now, until, maxTime, closeBefore); err != nil {
			t.Fatal(err)
		}
		late := until.Add(time.Second) // the lease has expired (the invocation died, or in doubt)
		for _, closed := range []time.Time{closeBefore, maxTime.Add(-time.Second), maxTime} {
			if err := l.LeaseChannel(ctx, chA, "o2", late, late.Add(time.Minute), late.Add(time.Minute), closed); !errors.Is(err, transfer.ErrConditionFailed) {
				t.Fatalf("ledger closed at maxTime%+v: lease %v, want refused", closed.Sub(maxTime), err)
			}
		}
		// A ledger that closed after maxTime proves the old envelope can no longer land.
		if err := l.LeaseChannel(ctx, chA, "o2", late, late.Add(time.Minute), late.Add(time.Minute), maxTime.Add(time.Second)); err != nil {
			t.Fatalf("after a ledger closed past maxTime: %v", err)
		}
		// The old owner's late release does not free the new lease.
		if err := l.ReleaseChannel(ctx, chA, "o1"); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("stale release: %v", err)
		}
		// A ledger past maxTime does not free an unexpired lease.
		if err := l.LeaseChannel(ctx, chA, "o3", late, late, late, late.Add(time.Hour)); !errors.Is(err, transfer.ErrConditionFailed) {
			t.Fatalf("unexpired lease taken: %v", err)
		}
	})

	t.Run("lease history: no channel leased twice at once", func(t *testing.T) {
		l := newLeases(t)
		channels := []string{chA, chB, "GCFONE23AB7Y6C5YZOMKUKGETPIAJA4QOYLS5VNS4JHBGKRJCPPHAA3E"}
		var (
			mu      sync.Mutex
			holder  = map[string]string{}
			history []string
			wg      sync.WaitGroup
		)
		violations := 0
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(w), 7))
				for i := range 15 {
					ch := channels[rng.IntN(len(channels))]
					owner := fmt.Sprintf("w%d-%d", w, i)
					err := l.LeaseChannel(ctx, ch, owner, now, until, maxTime, closeBefore)
					if errors.Is(err, transfer.ErrConditionFailed) {
						continue
					}
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					if h := holder[ch]; h != "" {
						violations++
						t.Errorf("%s leased to %s while %s held it", ch, owner, h)
					}
					holder[ch] = owner
					history = append(history, ch+" "+owner)
					mu.Unlock()
					// Hold it across a round trip: the stored lease must still be ours.
					if got, err := l.Channel(ctx, ch); err != nil || got.Owner != owner {
						t.Errorf("%s while %s holds it: %+v, %v", ch, owner, got, err)
					}
					// Let go before the release is written, so a lease granted right after it is not
					// mistaken for an overlap.
					mu.Lock()
					delete(holder, ch)
					mu.Unlock()
					if err := l.ReleaseChannel(ctx, ch, owner); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		wg.Wait()
		if violations > 0 || len(history) < len(channels) {
			t.Fatalf("%d leases, %d overlaps", len(history), violations)
		}
	})
}
