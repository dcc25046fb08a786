package dynamo_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// The expired-claims listing and the audit attribute (the sweep's and the operators' reads and writes), against both emulators.

func TestClaimsAndAuditMinidyn(t *testing.T) {
	runClaimsContract(t, func(t *testing.T) fixture {
		client, _ := dynamotest.Minidyn(t)
		return newFixture(t, client)
	})
}

func TestClaimsAndAuditDynalite(t *testing.T) {
	endpoint := os.Getenv("DYNALITE_ENDPOINT")
	if endpoint == "" {
		t.Skip("DYNALITE_ENDPOINT is not set")
	}
	client := dynamotest.NewClient(endpoint)
	runClaimsContract(t, func(t *testing.T) fixture { return newFixture(t, client) })
}

func listExpired(t *testing.T, s *dynamo.Store, now time.Time, limit int) []string {
	t.Helper()
	var keys []string
	cursor := ""
	for range 100 {
		recs, next, err := s.ListExpiredClaims(context.Background(), now, limit, cursor)
		if err != nil {
			t.Fatalf("ListExpiredClaims: %v", err)
		}
		for _, r := range recs {
			if r.Status != transfer.StatusInFlight || !r.LeaseExpired(now) {
				t.Fatalf("listed %s: status %s, lease until %v (now %v)", r.StoreKey, r.Status, r.LeaseExpiresAt, now)
			}
			keys = append(keys, r.StoreKey)
		}
		if next == "" {
			return keys
		}
		cursor = next
	}
	t.Fatal("ListExpiredClaims does not end")
	return nil
}

func runClaimsContract(t *testing.T, newFixture func(t *testing.T) fixture) {
	ctx := context.Background()

	t.Run("expired claims are listed earliest first, and only those", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		var want []string
		for i := range 4 {
			rec := claimRecord(key(fmt.Sprintf("expired-%d", i)), "owner", "fp")
			rec.LeaseExpiresAt = t0.Add(time.Duration(10-i) * time.Second)
			store(t, f.store, rec)
			want = append([]string{rec.StoreKey}, want...)
		}
		live := claimRecord(key("live"), "owner", "fp")
		live.LeaseExpiresAt = t0.Add(time.Hour)
		store(t, f.store, live)
		store(t, f.store, settle(claimRecord(key("doubt"), "owner", "fp"), transfer.StatusInDoubt, 0))
		store(t, f.store, settle(claimRecord(key("done"), "owner", "fp"), transfer.StatusReplayable, t0.Unix()+60))
		now := t0.Add(time.Minute)
		eventually(t, func() error {
			for _, limit := range []int{0, 1, 3} {
				if got := listExpired(t, f.store, now, limit); !slices.Equal(got, want) {
					return fmt.Errorf("limit %d: listed %v, want %v", limit, got, want)
				}
			}
			return nil
		})
		if got := listExpired(t, f.store, t0, 0); len(got) != 0 {
			t.Fatalf("at t0 nothing has expired, listed %v", got)
		}
		// A claim that settles leaves the listing; the in-doubt index is unaffected.
		rec := claimRecord(key("expired-0"), "owner", "fp")
		rec.LeaseExpiresAt = t0.Add(10 * time.Second)
		if err := f.store.Replace(ctx, settle(rec, transfer.StatusInDoubt, 0), condOf(rec)); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			if got := listExpired(t, f.store, now, 0); slices.Contains(got, rec.StoreKey) || len(got) != 3 {
				return fmt.Errorf("after settling, listed %v", got)
			}
			if got, _ := transfertest.ListInDoubtAll(t, f.store, 0); len(got) != 2 {
				return fmt.Errorf("in-doubt index lists %v, want 2 items", got)
			}
			return nil
		})
		raw := rawItem(t, f, live.StoreKey)
		if pk, ok := raw["gsi1pk"].(*types.AttributeValueMemberS); !ok || pk.Value != "in_flight" {
			t.Errorf("in_flight gsi1pk = %#v", raw["gsi1pk"])
		}
		if sk, ok := raw["gsi1sk"].(*types.AttributeValueMemberS); !ok || sk.Value != "2026-03-01T13:00:00.000Z#"+live.StoreKey {
			t.Errorf("in_flight gsi1sk = %#v", raw["gsi1sk"])
		}
	})

	t.Run("a malformed cursor is refused", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		if _, _, err := f.store.ListExpiredClaims(ctx, t0, 1, "!!"); err == nil {
			t.Fatal("a malformed cursor was accepted")
		}
	})

	t.Run("audit round-trips as a map attribute", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t)
		doubt := settle(claimRecord(key("audited"), "owner", "fp"), transfer.StatusInDoubt, 0)
		store(t, f.store, doubt)
		next := doubt
		next.Version++
		next.Audit = &transfer.Audit{Action: "discard", Operator: "alice", RequestID: "req-1", Reason: "history expired",
			Forced: true, At: t0.Add(1500 * time.Microsecond)}
		if err := f.store.Replace(ctx, next, condOf(doubt)); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.Get(ctx, next.StoreKey)
		if err != nil {
			t.Fatal(err)
		}
		want := next
		want.Audit = &transfer.Audit{Action: "discard", Operator: "alice", RequestID: "req-1", Reason: "history expired",
			Forced: true, At: t0.Add(time.Millisecond)}
		assertRecord(t, "audited", got, want)
		audit, ok := rawItem(t, f, next.StoreKey)["audit"].(*types.AttributeValueMemberM)
		if !ok || len(audit.Value) != 6 {
			t.Fatalf("audit = %#v, want a map of action, operator, requestId, reason, forced, at", audit)
		}
		if at, ok := audit.Value["at"].(*types.AttributeValueMemberN); !ok || at.Value != fmt.Sprint(t0.Add(time.Millisecond).UnixMilli()) {
			t.Errorf("audit.at = %#v, want epoch milliseconds", audit.Value["at"])
		}
	})

	t.Run("DecodeItem reads what EncodeItem writes", func(t *testing.T) {
		rec := settle(claimRecord(key("codec"), "owner", "fp"), transfer.StatusInDoubt, 0)
		av, err := dynamo.EncodeItem(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := dynamo.DecodeItem(av)
		if err != nil {
			t.Fatal(err)
		}
		assertRecord(t, "decoded", got, rec)
		if _, err := dynamo.DecodeItem(map[string]types.AttributeValue{"pk": &types.AttributeValueMemberN{Value: "1"}}); err == nil {
			t.Fatal("a malformed item decoded")
		}
	})
}
