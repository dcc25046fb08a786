package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// chainDay answers VaultDay with day, or err.
type chainDay struct {
	day   transfer.ChainDay
	err   error
	asked []time.Time
}

func (c *chainDay) VaultDay(_ context.Context, start time.Time, _ bool) (transfer.ChainDay, error) {
	c.asked = append(c.asked, start)
	return c.day, c.err
}

type dailyGauge struct {
	discrepancies []int
	failed        int
}

func (g *dailyGauge) DailyDiscrepancies(_ context.Context, n int) {
	g.discrepancies = append(g.discrepancies, n)
}
func (g *dailyGauge) DailyFailed(context.Context) { g.failed++ }

// day is the reported day: the day before t0 (2026-02-28); its ledgers are 1000 to 2000.
var day = time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC)

func withDaily(t *testing.T, f *fixture, chain *chainDay) (*reconcile.Service, *dailyGauge, *[]reconcile.DailySummary) {
	t.Helper()
	g := &dailyGauge{}
	var events []reconcile.DailySummary
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log, Queued: f.store,
		Daily: &reconcile.Daily{Chain: chain, Archives: f.store, Reports: f.store, Gauge: g,
			Publish: func(_ context.Context, s reconcile.DailySummary) error { events = append(events, s); return nil }}})
	return svc, g, &events
}

// archive keeps a settled record of key: status, the amount in stroops, the transaction hashes
// (inner, and outer unless ""), the ledger, settled at settledAt; edit changes it before.
func archive(t *testing.T, f *fixture, key string, status transfer.Status, stroops int64, inner, outer string, ledger uint32,
	settledAt time.Time, edit func(*transfer.Record)) transfer.Record {
	t.Helper()
	rec := transfer.Record{
		StoreKey: transfer.StoreKey(wallet, key), ClaimID: transfer.NewClaimID(), Status: status, ClientKey: key,
		Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: fmt.Sprint(float64(stroops) / 1e7),
			Asset: "USDC", Stroops: stroops},
		Envelope: &transfer.Envelope{InnerHash: inner, OuterHash: outer},
		Result:   &transfer.Result{TransactionHash: inner, Ledger: ledger},
		Version:  3, CreatedAt: settledAt.Add(-time.Minute), UpdatedAt: settledAt,
	}
	if outer != "" {
		rec.Result.TransactionHash = outer
	}
	if status == transfer.StatusRejected {
		rec.Result.Code = "TRANSACTION_FAILED"
	}
	if edit != nil {
		edit(&rec)
	}
	if err := f.store.PutArchive(context.Background(), transfer.Archive{Record: rec}); err != nil {
		t.Fatal(err)
	}
	return rec
}

func pay(hash string, ledger uint32, stroops int64) transfer.ChainPayment {
	return transfer.ChainPayment{Hash: hash, Ledger: ledger, Ops: 1, Direction: transfer.DirectionOut, Counterparty: wallet, Asset: "USDC", Stroops: stroops}
}

// Every way the table and the chain can disagree, in one day, with the amounts to the stroop:
// transfers matched (one settled after midnight whose ledger is the day's last, one filed under
// the day before by a clock behind the ledger's, one recorded by its fee bump's hash), an amount, a muxed id and a memo that differ, a transfer absent on chain,
// one failed on chain and one forced as landed that failed, a payment whose transfer is recorded as rejected, a second payment in a
// transfer's transaction, an incoming payment, another operation of the vault, a vault whose
// actual movement is not its payments', an in-doubt transfer and an expired claim that landed, a
// forced resolution the chain does not show (listed, not counted) and a record of the day before
// (not this day's).
func TestDailyReportsEveryDiscrepancyExactly(t *testing.T) {
	f := newFixture(t)
	const first, last = 1000, 2000
	h := func(name string) string { return hashOf(name, false) }
	muxed5, _ := xdr.MuxedAccountFromAccountId(wallet, 5)
	muxed6, _ := xdr.MuxedAccountFromAccountId(wallet, 6)

	archive(t, f, "clean-aaaa-0001", transfer.StatusReplayable, 100_000_000, h("a1"), "", 1100, day.Add(10*time.Hour), nil)
	// Settled by a function whose clock ran behind the ledger's: filed under the day before.
	archive(t, f, "skewed-nnn-0001", transfer.StatusReplayable, 5_000_000, h("ab1"), "", first, day.Add(-time.Second), nil)
	archive(t, f, "boundary-b-0001", transfer.StatusReplayable, 200_000_000, h("b1"), "", last, day.Add(24*time.Hour+2*time.Second), nil)
	archive(t, f, "amount-ccc-0001", transfer.StatusReplayable, 300_000_000, h("c1"), "", 1200, day.Add(11*time.Hour), nil)
	archive(t, f, "muxed-dddd-0001", transfer.StatusReplayable, 50_000_000, h("d1"), "", 1210, day.Add(11*time.Hour), func(r *transfer.Record) {
		r.Request.WalletAddress, r.Request.Account, r.Request.MuxedID = muxed5.Address(), wallet, 5
	})
	archive(t, f, "memo-eeeee-0001", transfer.StatusReplayable, 70_000_000, h("e1"), "", 1220, day.Add(11*time.Hour), func(r *transfer.Record) {
		r.Request.Memo = transfer.Memo{Type: transfer.MemoID, Value: "1"}
	})
	absent := archive(t, f, "absent-fff-0001", transfer.StatusReplayable, 80_000_000, h("f1"), "", 1300, day.Add(12*time.Hour), nil)
	failed := archive(t, f, "failed-ggg-0001", transfer.StatusReplayable, 90_000_000, h("a9"), "", 1400, day.Add(12*time.Hour), nil)
	rejected := archive(t, f, "rejected-h-0001", transfer.StatusRejected, 40_000_000, h("b9"), "", 1500, day.Add(13*time.Hour), nil)
	archive(t, f, "before-iii-0001", transfer.StatusReplayable, 10_000_000, h("c9"), "", first-1, day.Add(5*time.Second), nil)
	forced := archive(t, f, "forced-jjj-0001", transfer.StatusReplayable, 10_000_000, h("d9"), "", 0, day.Add(14*time.Hour), func(r *transfer.Record) {
		r.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", Reason: "seen on an explorer", Forced: true, At: day.Add(14 * time.Hour)}
	})
	// Forced as landed, yet the day shows its transaction FAILED.
	forcedFailed := archive(t, f, "forcedfail-0001", transfer.StatusReplayable, 1_000_000, h("fa1"), "", 0, day.Add(16*time.Hour), func(r *transfer.Record) {
		r.Audit = &transfer.Audit{Action: "resolve", Operator: "bob", Reason: "looked landed", Forced: true, At: day.Add(16 * time.Hour)}
	})
	archive(t, f, "bumped-kkk-0001", transfer.StatusReplayable, 60_000_000, h("e9"), hashOf("e9", true), 1600, day.Add(15*time.Hour), nil)
	inDoubt := f.put(t, "indoubt-l-0001", transfer.StatusInDoubt, time.Time{}, false)
	// An invocation died holding this claim after its transaction landed: unsettled, explained.
	expired := f.put(t, "expired-m-0001", transfer.StatusInFlight, t0.Add(-time.Minute), false)

	second := pay(h("a1"), 1100, 10_000_000)
	second.Op, second.Ops = 1, 2
	firstOfA := pay(h("a1"), 1100, 100_000_000)
	firstOfA.Ops = 2
	amount := pay(h("c1"), 1200, 310_000_000)
	mux := pay(h("d1"), 1210, 50_000_000)
	mux.Muxed, mux.MuxedID = muxed6.Address(), "6"
	memo := pay(h("e1"), 1220, 70_000_000)
	memo.Memo = transfer.Memo{Type: transfer.MemoID, Value: "2"}
	bumped := pay(h("e9"), 1600, 60_000_000)
	bumped.OuterHash = hashOf("e9", true)
	incoming := transfer.ChainPayment{Hash: h("ff1"), Ledger: 1700, Ops: 1, Direction: transfer.DirectionIn, Counterparty: wallet,
		Asset: "USDC", Stroops: 1_000_000_000}
	landed := pay(inDoubt.Envelope.InnerHash, 1800, 125_000_000)
	landed.OuterHash = inDoubt.Envelope.OuterHash
	claimLanded := pay(expired.Envelope.InnerHash, 1850, 125_000_000)
	chain := &chainDay{day: transfer.ChainDay{
		Start: day, End: day.Add(24 * time.Hour), FirstLedger: first, LastLedger: last, Transactions: 14,
		Payments: []transfer.ChainPayment{firstOfA, second, amount, mux, memo, pay(h("b9"), 1500, 40_000_000), bumped, incoming, landed,
			pay(h("b1"), last, 200_000_000), claimLanded, pay(h("ab1"), first, 5_000_000)},
		Other:    []transfer.ChainOther{{Hash: h("ee1"), Ledger: 1750, Op: 0, Type: "OperationTypeChangeTrust", Detail: "an operation whose source is the vault"}},
		Failed:   map[string]uint32{h("a9"): 1400, h("fa1"): 1450},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -105_000_000, Opening: 5_000_000_000, Closing: 4_895_000_000, HasBalances: true}},
	}}
	svc, g, events := withDaily(t, f, chain)

	ans, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily})
	if err != nil {
		t.Fatal(err)
	}
	r := ans.(*reconcile.DailyReport)
	if len(chain.asked) != 1 || !chain.asked[0].Equal(day) || r.Day != "2026-02-28" {
		t.Fatalf("asked %v, day %s", chain.asked, r.Day)
	}
	want := reconcile.DailyCounts{Absent: 1, Failed: 2, Mismatched: 3, Unexplained: 3, Other: 1, Balance: 1, InDoubt: 1, Unsettled: 1, Unverified: 1}
	if r.Counts != want || r.Discrepancies != 11 || r.OK || r.Matched != 4 {
		t.Fatalf("counts %+v discrepancies %d matched %d", r.Counts, r.Discrepancies, r.Matched)
	}
	if r.Absent[0].StoreKey != absent.StoreKey || r.Absent[0].TransactionHash != h("f1") || r.Absent[0].Ledger != 1300 {
		t.Errorf("absent %+v", r.Absent)
	}
	if len(r.Failed) != 2 || r.Failed[0].StoreKey != failed.StoreKey || r.Failed[1].StoreKey != forcedFailed.StoreKey || !r.Failed[1].Forced {
		t.Errorf("failed %+v", r.Failed)
	}
	diffs := map[string][]reconcile.DailyDifference{}
	for _, it := range r.Differs {
		diffs[it.IdempotencyKey] = it.Differences
	}
	wantDiffs := map[string][]reconcile.DailyDifference{
		"amount-ccc-0001": {{Field: "amount", Here: "30", Chain: "31"}},
		"muxed-dddd-0001": {{Field: "walletAddress", Here: muxed5.Address(), Chain: muxed6.Address()}},
		"memo-eeeee-0001": {{Field: "memo", Here: "id:1", Chain: "id:2"}},
	}
	if fmt.Sprint(diffs) != fmt.Sprint(wantDiffs) {
		t.Errorf("differences %v\nwant %v", diffs, wantDiffs)
	}
	u := r.Unknown
	if len(u) != 3 || u[0].ChainPayment != second || u[0].Note != "another payment of the same transaction is a transfer's; this one is not" ||
		u[1].ChainPayment != pay(h("b9"), 1500, 40_000_000) || u[1].StoreKey != rejected.StoreKey || u[1].Note != "its transfer is recorded as rejected, not as paid" ||
		u[2].ChainPayment != incoming || u[2].Note != "" {
		t.Errorf("unexplained %+v", u)
	}
	if len(r.InDoubt) != 1 || r.InDoubt[0].StoreKey != inDoubt.StoreKey || !r.InDoubt[0].OnChain || r.InDoubt[0].ChainLedger != 1800 ||
		r.InDoubt[0].TransactionHash != inDoubt.Envelope.InnerHash {
		t.Errorf("in doubt %+v", r.InDoubt)
	}
	if len(r.Unsettled) != 1 || r.Unsettled[0].StoreKey != expired.StoreKey || !r.Unsettled[0].OnChain || r.Unsettled[0].ChainLedger != 1850 ||
		r.Unsettled[0].Status != "in_flight" {
		t.Errorf("unsettled %+v", r.Unsettled)
	}
	if len(r.Unsure) != 1 || r.Unsure[0].StoreKey != forced.StoreKey || !r.Unsure[0].Forced {
		t.Errorf("unverified %+v", r.Unsure)
	}
	a := r.Assets[0]
	// Chain: -795 (the transfers' payments) - 250 (in doubt, unsettled) + 950 (unexplained) = -95;
	// the vault moved -105: 10 moved that no payment shows.
	if a.Asset != "USDC" || a.PaidOut != 956_000_000 || a.Received != 0 || a.Net != -956_000_000 || a.ChainNet != -95_000_000 ||
		a.InDoubtNet != -250_000_000 || a.UnexplainedNet != 950_000_000 || !a.ActualReadable || *a.ActualNet != -105_000_000 ||
		*a.Opening != 5_000_000_000 || *a.Closing != 4_895_000_000 || a.Difference != 851_000_000 || !a.BalanceMismatch {
		t.Errorf("USDC %+v", a)
	}
	if len(g.discrepancies) != 1 || g.discrepancies[0] != 11 || g.failed != 0 || len(*events) != 1 || (*events)[0].Discrepancies != 11 {
		t.Errorf("metric %+v, events %+v", g, *events)
	}

	// Stored: report answers the same JSON.
	stored, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionReport, Day: "2026-02-28"})
	if err != nil {
		t.Fatal(err)
	}
	fresh, _ := json.Marshal(r)
	if string(stored.(json.RawMessage)) != string(fresh) {
		t.Errorf("stored %s\nfresh %s", stored, fresh)
	}
}

// A day with only clean transfers reports nothing; the chain's refusals are the operator's
// answers (a day past the history, a day not over), and a day that cannot be read counts as failed.
func TestDailyCleanDayAndRefusals(t *testing.T) {
	f := newFixture(t)
	h := func(name string) string { return hashOf(name, false) }
	archive(t, f, "clean-aaaa-0001", transfer.StatusReplayable, 100_000_000, h("a1"), "", 1100, day.Add(10*time.Hour), nil)
	archive(t, f, "clean-bbbb-0001", transfer.StatusReplayable, 25_000_000, h("a2"), hashOf("a2", true), 1200, day.Add(11*time.Hour), nil)
	b := pay(h("a2"), 1200, 25_000_000)
	b.OuterHash = hashOf("a2", true)
	chain := &chainDay{day: transfer.ChainDay{Start: day, End: day.Add(24 * time.Hour), FirstLedger: 1000, LastLedger: 2000,
		Payments: []transfer.ChainPayment{pay(h("a1"), 1100, 100_000_000), b}, Failed: map[string]uint32{},
		Balances: map[string]transfer.BalanceMovement{"USDC": {Readable: true, Net: -125_000_000, Opening: 10, Closing: 10 - 125_000_000, HasBalances: true}}}}
	svc, g, _ := withDaily(t, f, chain)
	ans, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionDaily, Day: "2026-02-28"})
	if err != nil {
		t.Fatal(err)
	}
	r := ans.(*reconcile.DailyReport)
	if !r.OK || r.Discrepancies != 0 || r.Matched != 2 || r.Counts != (reconcile.DailyCounts{}) || len(r.Unknown) != 0 || r.Unknown == nil {
		t.Fatalf("clean day %+v", r)
	}
	if a := r.Assets[0]; a.Net != -125_000_000 || a.ChainNet != -125_000_000 || *a.ActualNet != -125_000_000 || a.Difference != 0 || a.BalanceMismatch {
		t.Fatalf("USDC %+v", a)
	}
	if len(g.discrepancies) != 1 || g.discrepancies[0] != 0 {
		t.Fatalf("metric %+v", g)
	}

	for _, c := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("x: %w", transfer.ErrHistoryNotCovered), reconcile.CodeHistoryNotCovered},
		{fmt.Errorf("x: %w", transfer.ErrDayNotOver), reconcile.CodeDayNotOver},
		{fmt.Errorf("x: %w", transfer.ErrDailyNotSupported), reconcile.CodeDailyNotSupported},
	} {
		chain.err = c.err
		// The scheduled run (no day) and an operator's (a day named) are refused alike; only the
		// scheduled one counts as a failed run.
		for _, p := range []string{`{"action":"daily"}`, `{"action":"daily","day":"2026-02-20"}`} {
			ans, err := svc.Answer(context.Background(), []byte(p))
			if p, ok := ans.(*reconcile.Problem); err != nil || !ok || p.Code != c.code || p.Action != reconcile.ActionDaily {
				t.Errorf("%v: %+v %v", c.err, ans, err)
			}
		}
	}
	chain.err = errors.New("connection refused")
	if _, err := svc.Answer(context.Background(), []byte(`{"action":"daily","day":"2026-02-20"}`)); err == nil {
		t.Error("a ledger that cannot be asked is not a failure")
	}
	if g.failed != 4 {
		t.Errorf("failed runs counted %d, want 4 (three scheduled runs refused, one failure)", g.failed)
	}
	// Today without soFar, a day to come, and a malformed day are refused before the chain is read.
	chain.asked = nil
	for _, p := range []string{`{"action":"daily","day":"2026-03-01"}`, `{"action":"daily","day":"2026-03-02","soFar":true}`, `{"action":"daily","day":"28-02-2026"}`} {
		if ans, err := svc.Answer(context.Background(), []byte(p)); err != nil || ans.(*reconcile.Problem).Code == "" {
			t.Errorf("%s: %+v %v", p, ans, err)
		}
	}
	if len(chain.asked) != 0 {
		t.Errorf("the chain was read for %v", chain.asked)
	}
}

// slowChain is a read that its context's deadline cut short: it notes the deadline and answers
// what a read past it answers.
type slowChain struct{ deadline time.Time }

func (c *slowChain) VaultDay(ctx context.Context, _ time.Time, _ bool) (transfer.ChainDay, error) {
	c.deadline, _ = ctx.Deadline()
	return transfer.ChainDay{}, context.DeadlineExceeded
}

// A day too long to read gives up 3 s before the invocation's deadline: a failure, counted,
// nothing stored.
func TestDailyGivesUpBeforeTheDeadline(t *testing.T) {
	f := newFixture(t)
	chain := &slowChain{}
	g := &dailyGauge{}
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log,
		Daily: &reconcile.Daily{Chain: chain, Archives: f.store, Reports: f.store, Gauge: g}})
	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if _, err := svc.Answer(ctx, []byte(`{"action":"daily"}`)); err == nil {
		t.Fatal("a read cut short is not a failure")
	}
	if !chain.deadline.Equal(deadline.Add(-3*time.Second)) || g.failed != 1 || len(g.discrepancies) != 0 {
		t.Fatalf("read deadline %s (want %s), gauge %+v", chain.deadline, deadline.Add(-3*time.Second), g)
	}
	if _, err := f.store.GetDailyReport(context.Background(), day); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("stored: %v", err)
	}
}
