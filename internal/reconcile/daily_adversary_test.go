package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
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

// RPC's history reaches back as far as its operator keeps it (120,960 ledgers are 7 days at 5 s a
// ledger, more at a slower pace, and a retention can be set longer): a day run again late
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
	long := time.Date(1026, 2, 28, 0, 0, 0, 0, time.UTC)
	chain := &chainDay{day: transfer.ChainDay{Start: long, End: long.Add(24 * time.Hour), Failed: map[string]uint32{}}}
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

// longKey is the i-th idempotency key of the longest length the API takes (255).
func longKey(tag string, i int) string {
	k := fmt.Sprintf("%s-%03d-", tag, i)
	return k + strings.Repeat("k", 255-len(k))
}

// hexOf is a distinct hash for the i-th entry of a list tagged tag (a hex digit).
func hexOf(tag byte, i int) string {
	return fmt.Sprintf("%c%063x", tag, i)
}

// putLive writes a live item of key in status (in_doubt, or in_flight with an expired lease),
// holding an envelope whose inner hash is inner and whose memo and wallet are the longest.
func putLive(t *testing.T, f *fixture, key string, status transfer.Status, inner string, w string, memo transfer.Memo) {
	t.Helper()
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(w, key), Status: transfer.StatusInFlight, Fingerprint: "fp",
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: w, Amount: "922337203685.4775807", Asset: "USDC",
			Stroops: 9_223_372_036_854_775_807, Memo: memo},
		ClaimID: "claim-" + inner[:8], ClientKey: key, LeaseOwner: "owner", LeaseExpiresAt: t0.Add(-time.Minute), Version: 1, CreatedAt: day, UpdatedAt: day,
	}
	if _, won, err := f.store.Claim(context.Background(), rec, day); err != nil || !won {
		t.Fatalf("claim %s: %v %v", key, won, err)
	}
	next := rec
	next.Envelope = &transfer.Envelope{XDR: "AAAA-signed", InnerHash: inner, OuterHash: "f" + inner[1:], MaxTime: t0.Unix() - 100, SubmittedLedger: 50}
	next.Version++
	if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
		t.Fatal(err)
	}
	if status == transfer.StatusInDoubt {
		if err := f.store.Replace(context.Background(), transfer.InDoubtRecord(next, "TRANSFER_TIMEOUT", day.Add(time.Hour)), transfer.Expect(next)); err != nil {
			t.Fatal(err)
		}
	}
}

// The worst day a report can hold: every list past its clip, each entry as long as a transfer
// can make it (255-character keys, muxed wallets, hash memos, every field mismatched, the largest
// amount) and a day run again many times. Its report is stored: a day with that much wrong is
// the one finance must be able to read again.
func TestADailyReportOfTheWorstDayIsStored(t *testing.T) {
	f := newFixture(t)
	muxed, _ := xdr.MuxedAccountFromAccountId(wallet, 18446744073709551615)
	other, _ := xdr.MuxedAccountFromAccountId(wallet2, 18446744073709551614)
	memo := transfer.Memo{Type: transfer.MemoText, Value: strings.Repeat("\x01", 28)}
	chainMemo := transfer.Memo{Type: transfer.MemoText, Value: strings.Repeat("\xff", 28)}
	long := func(r *transfer.Record) {
		r.Request.WalletAddress, r.Request.Account, r.Request.MuxedID = muxed.Address(), wallet, 18446744073709551615
		r.Request.Memo = memo
		r.Request.Amount, r.Request.Stroops = "922337203685.4775807", 9_223_372_036_854_775_807
		r.StoreKey = transfer.StoreKey(muxed.Address(), r.ClientKey)
	}
	forced := func(r *transfer.Record) {
		long(r)
		r.Audit = &transfer.Audit{Action: "resolve", Operator: strings.Repeat("o", 128), Reason: strings.Repeat("r", 512), Forced: true, At: r.UpdatedAt}
	}
	n := reconcile.DailyListMax + 1
	var pays []transfer.ChainPayment
	var others []transfer.ChainOther
	failed := map[string]uint32{}
	for i := range n {
		at := day.Add(time.Duration(i) * time.Minute)
		archive(t, f, longKey("absent", i), transfer.StatusReplayable, 1, hexOf('1', i), hexOf('2', i), 1100, at, long)
		archive(t, f, longKey("failed", i), transfer.StatusReplayable, 1, hexOf('3', i), hexOf('4', i), 1200, at, long)
		failed[hexOf('3', i)] = 1200
		archive(t, f, longKey("differs", i), transfer.StatusReplayable, 1, hexOf('5', i), hexOf('6', i), 1300, at, long)
		p := transfer.ChainPayment{Hash: hexOf('5', i), OuterHash: hexOf('7', i), Ledger: 1999, Op: 99, Ops: 100, Direction: transfer.DirectionIn,
			Counterparty: wallet2, Muxed: other.Address(), MuxedID: "18446744073709551614", Asset: "USDC", Stroops: 9_223_372_036_854_775_806, Memo: chainMemo}
		pays = append(pays, p)
		archive(t, f, longKey("rejected", i), transfer.StatusRejected, 1, hexOf('8', i), hexOf('9', i), 1400, at, long)
		p.Hash, p.OuterHash = hexOf('8', i), hexOf('9', i)
		pays = append(pays, p)
		archive(t, f, longKey("forced", i), transfer.StatusReplayable, 1, hexOf('a', i), hexOf('b', i), 0, at, forced)
		others = append(others, transfer.ChainOther{Hash: hexOf('c', i), Ledger: 1500, Op: 99, Type: "OperationTypeLiquidityPoolWithdraw",
			Detail: "an operation whose source is the vault"})
		putLive(t, f, longKey("indoubt", i)[:255], transfer.StatusInDoubt, hexOf('d', i), muxed.Address(), memo)
		putLive(t, f, longKey("expired", i)[:255], transfer.StatusInFlight, hexOf('e', i), muxed.Address(), memo)
		p.Hash, p.OuterHash = hexOf('d', i), "f"+hexOf('d', i)[1:]
		pays = append(pays, p)
	}
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 5 * n,
		Payments: pays, Other: others, Failed: failed,
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -1, HasBalances: true}}}}
	svc, g, _ := withDaily(t, f, chain)
	for run := range 3 {
		f.clock.now = t0.Add(time.Duration(run) * time.Hour)
		r := runDaily(t, svc)
		c := r.Counts
		if c.Absent != n || c.Failed != n || c.Mismatched != n || c.Unexplained != n || c.Other != n || c.InDoubt != n || c.Unsettled != n || c.Unverified != n {
			t.Fatalf("counts %+v", c)
		}
		stored, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionReport, Day: day.Format(time.DateOnly)})
		if err != nil {
			t.Fatal(err)
		}
		b := stored.(json.RawMessage)
		if len(b) > reconcile.DailyMaxBytes || r.ListMax < 1 || r.ListMax >= reconcile.DailyListMax || len(r.Absent) != r.ListMax ||
			len(r.Unknown) != r.ListMax || len(r.Supersedes) != run {
			t.Fatalf("run %d: %d bytes stored, lists of %d (absent %d, unexplained %d), supersedes %d", run, len(b), r.ListMax, len(r.Absent), len(r.Unknown), len(r.Supersedes))
		}
		t.Logf("run %d: the report is %d bytes, lists of %d", run, len(b), r.ListMax)
	}
	if reconcile.DailyMaxBytes > dynamo.MaxDailyReport {
		t.Fatalf("a report of %d bytes is refused by the store (%d)", reconcile.DailyMaxBytes, dynamo.MaxDailyReport)
	}
	if g.failed != 0 {
		t.Fatalf("failed runs %d", g.failed)
	}
}

// A reading of the chain that is not the whole day (its end short of midnight, a ledger of the
// next day among its payments, another day's start) is never reported as the day: the run fails,
// is counted, and stores nothing.
func TestADailyReportIsNeverMadeFromPartOfTheDay(t *testing.T) {
	h := hashOf("part1", false)
	whole := transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		FirstClose: day.Add(3 * time.Second), LastClose: day.Add(24*time.Hour - time.Second),
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}
	for name, edit := range map[string]func(*transfer.ChainDay){
		"half a day":                  func(c *transfer.ChainDay) { c.End = day.Add(12 * time.Hour) },
		"the day before":              func(c *transfer.ChainDay) { c.Start, c.End = day.Add(-24*time.Hour), day },
		"a payment of the next day":   func(c *transfer.ChainDay) { c.Payments = append(c.Payments, pay(hashOf("part2", false), 2001, 1)) },
		"a failure of the day before": func(c *transfer.ChainDay) { c.Failed = map[string]uint32{hashOf("part3", false): 999} },
		"a ledger closed at midnight": func(c *transfer.ChainDay) { c.LastClose = day.Add(24 * time.Hour) },
		"payments without a ledger":   func(c *transfer.ChainDay) { c.FirstLedger, c.LastLedger = 0, 0 },
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			archive(t, f, "part-day-k-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
			c := whole
			edit(&c)
			svc, g, _ := withDaily(t, f, &chainDay{day: c})
			_, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: day.Format(time.DateOnly)})
			var e *reconcile.Error
			if !errors.As(err, &e) || e.Code != reconcile.CodeLedgerUnavailable || g.failed != 1 || len(g.discrepancies) != 0 {
				t.Fatalf("err %v, gauge %+v", err, g)
			}
			if _, err := f.store.GetDailyReport(context.Background(), day); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("stored: %v", err)
			}
		})
	}
	f := newFixture(t)
	archive(t, f, "part-day-k-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
	svc, _, _ := withDaily(t, f, &chainDay{day: whole})
	if r := runDaily(t, svc); !r.OK || r.Matched != 1 {
		t.Fatalf("the whole day: ok %v matched %d", r.OK, r.Matched)
	}
}

// A batch whose invocation died holding its keys' claims after the transaction landed: each key,
// unsettled, explains its own operation, so the batch's payments are none of them unexplained.
func TestADailyReportExplainsEachUnsettledBatchKeyByItsOperation(t *testing.T) {
	f := newFixture(t)
	inner := hexOf('b', 7)
	for i := range 2 {
		putLiveBatch(t, f, fmt.Sprintf("unsettled-batch-%d", i), inner, &transfer.BatchRef{Index: i, Size: 2})
	}
	op0 := pay(inner, 1100, 125_000_000)
	op0.Ops = 2
	op1 := op0
	op1.Op = 1
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{op0, op1}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -250_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.Counts.Unexplained != 0 || r.Counts.Unsettled != 2 || r.Assets[0].InDoubtNet != -250_000_000 || !r.OK {
		t.Fatalf("counts %+v unexplained %+v assets %+v", r.Counts, r.Unknown, r.Assets)
	}
}

// putLiveBatch writes an async key of a batch whose claim expired holding the batch's envelope.
func putLiveBatch(t *testing.T, f *fixture, key, inner string, ref *transfer.BatchRef) {
	t.Helper()
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, key), Status: transfer.StatusInFlight, Fingerprint: "fp", Async: true,
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "12.5", Asset: "USDC", Stroops: 125_000_000},
		ClaimID: "claim-" + key, ClientKey: key, LeaseOwner: "owner", LeaseExpiresAt: t0.Add(-time.Minute), Version: 1, CreatedAt: day, UpdatedAt: day,
	}
	if _, won, err := f.store.Claim(context.Background(), rec, day); err != nil || !won {
		t.Fatalf("claim %s: %v %v", key, won, err)
	}
	next := rec
	next.Envelope = &transfer.Envelope{InnerHash: inner, MaxTime: t0.Unix() - 100, SubmittedLedger: 50}
	next.Batch = ref
	next.Version++
	if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
		t.Fatal(err)
	}
}

// An idempotency key may hold anything of its alphabet, a secret seed included, and the store key
// holds the idempotency key: the report logged and stored holds neither in clear.
func TestADailyReportLogsNoSeed(t *testing.T) {
	f := newFixture(t)
	seed := keypair.Master("a client secret in its keys").(*keypair.Full).Seed()
	h := hashOf("5eed", false)
	archive(t, f, "order-"+seed, transfer.StatusRejected, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
	archive(t, f, "paid-"+seed, transfer.StatusReplayable, 10_000_000, hashOf("5eee", false), "", 1200, day.Add(10*time.Hour), nil)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.Counts.Unexplained != 1 || r.Counts.Absent != 1 {
		t.Fatalf("counts %+v", r.Counts)
	}
	stored, err := f.store.GetDailyReport(context.Background(), day)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(f.logs.Bytes()), seed) || strings.Contains(string(stored), seed) {
		t.Fatalf("the seed is in the log or the stored report:\n%s\n%s", string(f.logs.Bytes()), stored)
	}
}

// A forced discard, like a forced resolution, is the operator's word where the ledger could not
// judge: the report of the day it was forced lists it (unverified), so a transfer released while
// its transaction may have landed is never out of finance's sight.
func TestADailyReportListsEveryForcedResolution(t *testing.T) {
	f := newFixture(t)
	archive(t, f, "discarded-k-0001", transfer.StatusReleased, 10_000_000, hashOf("d15c", false), "", 0, day.Add(10*time.Hour), func(r *transfer.Record) {
		r.Result = nil
		r.Audit = &transfer.Audit{Action: "discard", Operator: "carol", Reason: "history gone", Forced: true, At: day.Add(10 * time.Hour)}
	})
	archive(t, f, "released-k-0001", transfer.StatusReleased, 10_000_000, hashOf("d15d", false), "", 0, day.Add(10*time.Hour), func(r *transfer.Record) {
		r.Result = nil
	})
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000,
		Failed: map[string]uint32{}, Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true}}}}
	svc, _, _ := withDaily(t, f, chain)
	r := runDaily(t, svc)
	if r.Counts.Unverified != 1 || r.Unsure[0].IdempotencyKey != "discarded-k-0001" || !r.Unsure[0].Forced || r.Unsure[0].Status != "released" || !r.OK {
		t.Fatalf("counts %+v unverified %+v", r.Counts, r.Unsure)
	}
}

// The discrepancies alarm tells whether the latest day balances: an operator's run of an older,
// clean day does not clear the page of yesterday's report; an older day that does not balance
// pages; yesterday run again once it balances clears it.
func TestADailyReportOfAnOlderCleanDayLeavesThePageStanding(t *testing.T) {
	f := newFixture(t)
	h := hashOf("0ld1", false)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}}
	svc, g, _ := withDaily(t, f, chain)
	runDaily(t, svc) // yesterday: a payment nobody asked for
	older := day.AddDate(0, 0, -3)
	clean := transfer.ChainDay{Start: older, End: older.Add(24 * time.Hour), Failed: map[string]uint32{}}
	chain.day = clean
	if _, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: older.Format(time.DateOnly)}); err != nil {
		t.Fatal(err)
	}
	if len(g.discrepancies) != 1 || g.discrepancies[0] != 1 {
		t.Fatalf("metric after an older clean day: %v", g.discrepancies)
	}
	clean.Payments, clean.FirstLedger, clean.LastLedger = []transfer.ChainPayment{pay(hashOf("0ld2", false), 500, 1)}, 400, 600
	chain.day = clean
	if _, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: older.Format(time.DateOnly)}); err != nil {
		t.Fatal(err)
	}
	archive(t, f, "found-late-0001", transfer.StatusReplayable, 10_000_000, h, "", 1100, day.Add(10*time.Hour), nil)
	chain.day = transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000, Transactions: 1,
		Payments: []transfer.ChainPayment{pay(h, 1100, 10_000_000)}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -10_000_000, HasBalances: true}}}
	runDaily(t, svc)
	if fmt.Sprint(g.discrepancies) != "[1 1 0]" {
		t.Fatalf("metric %v, want [1 1 0]", g.discrepancies)
	}
}
