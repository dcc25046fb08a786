package stellar_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch's keys are judged by several callers at once (a take-over per key), and one that read
// the batch item before another replaced it re-sends the older fee bump. stellar-core refuses it
// ERROR txINSUFFICIENT_FEE naming the fee that would replace the queued replacement (10 x its
// fee: TransactionQueue::canAdd, canReplaceByFee), a fact about that source account's queued
// transaction, not about the lane. The lane's bid for the envelopes built next must not learn
// it: they would bid 10x the replacement (100x the market) or be refused FEE_ABOVE_CAP.
func TestStaleFeeBumpRefusalDoesNotRaiseTheLanesBid(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 1_000_000)
		l := r.ledger.(batchLedger)
		batch := func() []transfer.Request {
			var reqs []transfer.Request
			for i := range 3 {
				a := keypair.MustRandom().Address()
				if err := r.net.CreateAccount(a, 10*unit); err != nil {
					t.Fatal(err)
				}
				if err := r.net.AddTrustline(a, r.usdc, 0); err != nil {
					t.Fatal(err)
				}
				reqs = append(reqs, withdraw(a, int64(i+1)*unit))
			}
			return reqs
		}
		ctx := context.Background()
		terms := func() transfer.Terms {
			return transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(2 * time.Minute)}
		}
		env, err := l.PrepareBatch(ctx, batch(), terms())
		if err != nil {
			t.Fatal(err)
		}
		if res, err := l.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
			t.Fatalf("Send = %+v, %v", res, err)
		}
		next, err := r.ledger.(transfer.Replacer).Replace(ctx, env)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := l.Send(ctx, next); err != nil || res.Status != transfer.SendPending {
			t.Fatalf("Send replacement = %+v, %v", res, err)
		}
		// A judge that read the batch item before the replacement re-sends the first fee bump.
		res, err := l.Send(ctx, env)
		if err != nil || res.Status != transfer.SendError || res.Code != "txINSUFFICIENT_FEE" {
			t.Fatalf("stale Send = %+v, %v; want ERROR txINSUFFICIENT_FEE", res, err)
		}
		other, err := l.PrepareBatch(ctx, batch(), terms())
		if err != nil {
			t.Fatalf("the next batch: %v", err)
		}
		defer l.Done(ctx, other)
		if got, queued := offered(t, other.XDR), offered(t, next.XDR); got > queued {
			t.Fatalf("the next batch bids %d per slot, above the replacement's %d (the first bid %d): the stale refusal raised the lane's bid",
				got, queued, offered(t, env.XDR))
		}
		l.Done(ctx, next)
	})
}
