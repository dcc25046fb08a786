package reconcile_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// wallet2 is a second wallet, paid beside wallet.
var wallet2 = keypair.Master("daily adversary wallet two").Address()

// runDaily runs the daily reconciliation of day on chain and answers its report.
func runDaily(t *testing.T, svc *reconcile.Service) *reconcile.DailyReport {
	t.Helper()
	ans, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: day.Format(time.DateOnly)})
	if err != nil {
		t.Fatal(err)
	}
	return ans.(*reconcile.DailyReport)
}

// A batch's keys share one transaction: each is its own operation (BatchRef.Index), whatever order
// the lasting records are read in. Two clean keys paid in one transaction, read in the opposite
// order of their operations, are two matches, not two mismatches; and a batch whose operations
// paid each other's amounts is found mismatched at both keys.
func TestADailyReportPairsEachBatchKeyWithItsOwnOperation(t *testing.T) {
	f := newFixture(t)
	h := hashOf("ba7c1", false)
	batch := func(i int) func(*transfer.Record) {
		return func(r *transfer.Record) {
			r.Async, r.Batch = true, &transfer.BatchRef{Index: i, Size: 2}
			if i == 1 {
				r.Request.WalletAddress = wallet2
			}
		}
	}
	// Settled in the order of operation 1, then 0: the listing reads operation 1's key first.
	archive(t, f, "batch-key-0002", transfer.StatusReplayable, 20_000_000, h, "", 1100, day.Add(10*time.Hour), batch(1))
	archive(t, f, "batch-key-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour+time.Second), batch(0))
	op0 := pay(h, 1100, 10_000_000)
	op0.Ops = 2
	op1 := pay(h, 1100, 20_000_000)
	op1.Op, op1.Ops, op1.Counterparty = 1, 2, wallet2
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{op0, op1}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -30_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	if r := runDaily(t, svc); !r.OK || r.Matched != 2 || r.Discrepancies != 0 {
		t.Fatalf("a clean batch: ok %v matched %d counts %+v mismatched %+v", r.OK, r.Matched, r.Counts, r.Differs)
	}

	// The operations swapped amounts: each key's own operation differs from it.
	op0.Stroops, op1.Stroops = 20_000_000, 10_000_000
	chain.day.Payments = []transfer.ChainPayment{op0, op1}
	r := runDaily(t, svc)
	if r.OK || r.Counts.Mismatched != 2 || r.Matched != 0 {
		t.Fatalf("a swapped batch: ok %v matched %d counts %+v", r.OK, r.Matched, r.Counts)
	}
	for _, it := range r.Differs {
		if len(it.Differences) == 0 || it.Differences[0].Field != "amount" {
			t.Errorf("%s: differences %+v", it.IdempotencyKey, it.Differences)
		}
	}
}

// A transfer whose transaction holds a payment it did not ask for beside its own is matched with
// its own payment, whichever operation comes first: one unexplained payment, no mismatch.
func TestADailyReportMatchesATransferWithItsOwnPaymentInItsTransaction(t *testing.T) {
	f := newFixture(t)
	h := hashOf("two0p", false)
	archive(t, f, "two-ops-k-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
	stray := pay(h, 1100, 99_000_000)
	stray.Ops, stray.Counterparty = 2, wallet2
	own := pay(h, 1100, 10_000_000)
	own.Op, own.Ops = 1, 2
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{stray, own}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -109_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.Matched != 1 || r.Counts.Mismatched != 0 || r.Counts.Unexplained != 1 || r.Unknown[0].ChainPayment != stray || r.Discrepancies != 1 {
		t.Fatalf("matched %d counts %+v unexplained %+v", r.Matched, r.Counts, r.Unknown)
	}
}

// A fee bump replaced by fee lands under one of its outer hashes: a record that names another
// one (a hash that is not on chain) tells its client a transaction that does not exist, and is
// mismatched; one that names the landed outer hash, or the inner hash, matches.
func TestADailyReportChecksTheRecordedHashLanded(t *testing.T) {
	f := newFixture(t)
	inner := hashOf("fee1", false)
	first, second := hashOf("fee1a", true), hashOf("fee1b", true)
	bumped := func(recorded string) func(*transfer.Record) {
		return func(r *transfer.Record) {
			r.Envelope.OuterHash, r.Envelope.OuterHashes = second, []string{first, second}
			r.Result.TransactionHash = recorded
		}
	}
	archive(t, f, "bumped-wrong-0001", transfer.StatusReplayable, 10_000_000, inner, first, 1100, day.Add(10*time.Hour), bumped(second))
	inner2 := hashOf("fee2", false)
	archive(t, f, "bumped-inner-0001", transfer.StatusReplayable, 10_000_000, inner2, hashOf("fee2a", true), 1200, day.Add(10*time.Hour), bumped(inner2))
	landed := pay(inner, 1100, 10_000_000)
	landed.OuterHash = first
	landed2 := pay(inner2, 1200, 10_000_000)
	landed2.OuterHash = hashOf("fee2a", true)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 2,
		Payments: []transfer.ChainPayment{landed, landed2}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -20_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.OK || r.Matched != 1 || r.Counts.Mismatched != 1 {
		t.Fatalf("ok %v matched %d counts %+v", r.OK, r.Matched, r.Counts)
	}
	d := r.Differs[0]
	if d.IdempotencyKey != "bumped-wrong-0001" || len(d.Differences) != 1 || d.Differences[0] != (reconcile.DailyDifference{Field: "transactionHash", Here: second, Chain: first}) {
		t.Fatalf("mismatched %+v", r.Differs)
	}
}

// A transfer settled as paid without a ledger is never silently left out: unless the chain shows
// it in the day, it is listed (unverified) on the day it settled, forced by an operator or not.
func TestADailyReportListsEveryPaidRecordWithoutALedger(t *testing.T) {
	f := newFixture(t)
	archive(t, f, "noledger-k-0001", transfer.StatusReplayable, 10_000_000, hashOf("n0", false), "", 0, day.Add(10*time.Hour), nil)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000,
		Failed: map[string]uint32{}, Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.Counts.Unverified != 1 || r.Unsure[0].IdempotencyKey != "noledger-k-0001" {
		t.Fatalf("counts %+v unverified %+v", r.Counts, r.Unsure)
	}
}

// A day's report is what finance relied on: a later run of the same day with another answer
// stores its report with the earlier one's summary (supersedes), so a page is never erased by
// a run that finds the books clean, and a run with the same answer keeps the history as it was.
func TestADailyReportKeepsWhatAnEarlierRunStored(t *testing.T) {
	f := newFixture(t)
	h := hashOf("late1", false)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	first := runDaily(t, svc)
	if first.OK || first.Counts.Unexplained != 1 {
		t.Fatalf("first run %+v", first.Counts)
	}
	// The record shows up later; a run again finds the day clean.
	archive(t, f, "late-rec-k-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
	f.clock.now = f.clock.now.Add(time.Hour)
	second := runDaily(t, svc)
	if !second.OK || len(second.Supersedes) != 1 || second.Supersedes[0].OK || second.Supersedes[0].Discrepancies != 1 ||
		!second.Supersedes[0].GeneratedAt.Equal(first.GeneratedAt) {
		t.Fatalf("second run ok %v supersedes %+v", second.OK, second.Supersedes)
	}
	stored, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionReport, Day: day.Format(time.DateOnly)})
	if err != nil {
		t.Fatal(err)
	}
	var back reconcile.DailyReport
	if err := json.Unmarshal(stored.(json.RawMessage), &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Supersedes) != 1 || back.Supersedes[0].Discrepancies != 1 {
		t.Fatalf("stored supersedes %+v", back.Supersedes)
	}
	// A third run: both earlier runs are listed, oldest first.
	f.clock.now = f.clock.now.Add(time.Hour)
	third := runDaily(t, svc)
	if len(third.Supersedes) != 2 || third.Supersedes[0].Discrepancies != 1 || third.Supersedes[1].Discrepancies != 0 {
		t.Fatalf("third run supersedes %+v", third.Supersedes)
	}
}

// RPC's history reaches back as far as its operator keeps it (120,960 ledgers is about 8 days at
// pubnet's pace of 5 to 6 s a ledger, and a retention can be set longer): a day run again late
// reads every lasting record settled until the run, so a transfer in doubt for 8 days and then
// settled as paid is matched, not a payment nobody asked for.
func TestADailyReportReadsRecordsSettledUntilItRuns(t *testing.T) {
	f := newFixture(t)
	h := hashOf("slow8", false)
	archive(t, f, "eight-days-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(8*24*time.Hour+time.Hour), nil)
	f.clock.now = day.Add(9*24*time.Hour + time.Hour)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	if r := runDaily(t, svc); !r.OK || r.Matched != 1 {
		t.Fatalf("ok %v matched %d counts %+v", r.OK, r.Matched, r.Counts)
	}
}

// countingArchives counts the days a run lists.
type countingArchives struct {
	reconcile.ArchiveLister
	days int
}

func (c *countingArchives) ListArchivedDay(ctx context.Context, day time.Time, limit int, cursor string) ([]transfer.Archive, string, error) {
	if cursor == "" {
		c.days++
	}
	return c.ArchiveLister.ListArchivedDay(ctx, day, limit, cursor)
}

// A day long past (a year mistyped, on a network whose RPC holds its history from its first
// ledger) reads a bounded number of days of the lasting record, not one a day until today.
func TestADailyReportReadsABoundedRangeOfDays(t *testing.T) {
	f := newFixture(t)
	lister := &countingArchives{ArchiveLister: f.store}
	chain := &chainDay{day: transfer.ChainDay{Failed: map[string]uint32{}}}
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log,
		Daily: &reconcile.Daily{Chain: chain, Archives: lister, Reports: f.store}})
	if _, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: "1026-02-28"}); err != nil {
		t.Fatal(err)
	}
	if lister.days != reconcile.DailyLookAhead+2 {
		t.Fatalf("%d days listed, want %d", lister.days, reconcile.DailyLookAhead+2)
	}
}
