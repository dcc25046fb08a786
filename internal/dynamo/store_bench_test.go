package dynamo_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// BenchmarkClaim measures Claim against minidyn in-process over HTTP: a new key (won: one
// PutItem) and a replay (lost to a replayable item: one PutItem, plus one consistent GetItem
// because minidyn omits the ALL_OLD item; on DynamoDB a replay is the PutItem alone). It reports
// DynamoDB requests per claim.
func BenchmarkClaim(b *testing.B) {
	ctx := context.Background()
	b.Run("new key", func(b *testing.B) {
		raw, _ := dynamotest.Minidyn(b)
		counter := dynamotest.NewCountingClient(raw)
		s := dynamotest.NewStore(b, counter)
		counter.Reset()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, won, err := s.Claim(ctx, claimRecord(key(fmt.Sprintf("bench-new-%d", i)), "owner", "fp"), t0); err != nil || !won {
				b.Fatalf("won=%v err=%v", won, err)
			}
		}
		b.ReportMetric(float64(counter.Total())/float64(i), "requests/op")
	})
	b.Run("lost, replay", func(b *testing.B) {
		raw, _ := dynamotest.Minidyn(b)
		counter := dynamotest.NewCountingClient(raw)
		s := dynamotest.NewStore(b, counter)
		k := key("bench-replay")
		first := claimRecord(k, "owner-a", "fp")
		if _, won, err := s.Claim(ctx, first, t0); err != nil || !won {
			b.Fatalf("won=%v err=%v", won, err)
		}
		done := settle(first, transfer.StatusReplayable, t0.Add(24*time.Hour).Unix())
		if err := s.Replace(ctx, done, condOf(first)); err != nil {
			b.Fatal(err)
		}
		rec := claimRecord(k, "owner-b", "fp")
		counter.Reset()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if got, won, err := s.Claim(ctx, rec, t0); err != nil || won || got.Status != transfer.StatusReplayable {
				b.Fatalf("won=%v err=%v status=%s", won, err, got.Status)
			}
		}
		b.ReportMetric(float64(counter.Total())/float64(i), "requests/op")
	})
}
