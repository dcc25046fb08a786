package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Two transfers paid by one batch: each record is matched by its own operation of the transaction
// (its BatchRef's index), never by a neighbour's payment, whatever order the records come in.
func TestDailyMatchesBatchedRecordsByTheirOperation(t *testing.T) {
	f := newFixture(t)
	inner := hashOf("batch1", false)
	for i, c := range []struct {
		key     string
		stroops int64
		at      time.Duration
	}{{"batch-aaaa-0001", 30_000_000, 11 * time.Hour}, {"batch-bbbb-0001", 50_000_000, 10 * time.Hour}} {
		archive(t, f, c.key, transfer.StatusReplayable, c.stroops, inner, "", 1300, day.Add(c.at), func(r *transfer.Record) {
			r.Async = true
			r.Batch = &transfer.BatchRef{Index: i, Size: 2}
		})
	}
	p0, p1 := pay(inner, 1300, 30_000_000), pay(inner, 1300, 50_000_000)
	p0.Ops, p1.Ops, p1.Op = 2, 2, 1
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000,
		Payments: []transfer.ChainPayment{p0, p1}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -80_000_000, Opening: 10, Closing: 10 - 80_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	ans, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: "2026-02-28"})
	if err != nil {
		t.Fatal(err)
	}
	if r := ans.(*reconcile.DailyReport); !r.OK || r.Matched != 2 || r.Discrepancies != 0 {
		t.Fatalf("a batch's two records: %+v (differs %+v)", r, r.Differs)
	}
}
