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

// BenchmarkListByWallet measures one page of a wallet's history (ListByWallet on gsi2) against
// minidyn in-process over HTTP: the first page of 20 and a page after a cursor, in a wallet of 100
// transfers, beside 100 of another wallet. It reports DynamoDB requests per page (one Query).
func BenchmarkListByWallet(b *testing.B) {
	ctx := context.Background()
	raw, _ := dynamotest.Minidyn(b)
	counter := dynamotest.NewCountingClient(raw)
	s := dynamotest.NewStore(b, counter)
	for i := range 100 {
		for _, w := range []string{walletA, walletB} {
			rec := walletClaim(w, fmt.Sprintf("order-%04d", i), t0.Add(time.Duration(i)*time.Second))
			if _, won, err := s.Claim(ctx, rec, t0); err != nil || !won {
				b.Fatalf("won=%v err=%v", won, err)
			}
		}
	}
	_, cursor, err := s.ListByWallet(ctx, walletA, 20, "")
	if err != nil || cursor == "" {
		b.Fatalf("first page: %q %v", cursor, err)
	}
	for _, bc := range []struct{ name, cursor string }{{"first page of 20", ""}, {"after a cursor", cursor}} {
		b.Run(bc.name, func(b *testing.B) {
			counter.Reset()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				if recs, _, err := s.ListByWallet(ctx, walletA, 20, bc.cursor); err != nil || len(recs) != 20 {
					b.Fatalf("%d records, %v", len(recs), err)
				}
			}
			b.ReportMetric(float64(counter.Total())/float64(i), "requests/op")
		})
	}
}
