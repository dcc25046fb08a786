package transfer_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func unit(n int64) int64 { return n * transfer.StroopsPerUnit }

func TestChargesAreTheWalletsAndTheAssetsCountersOfTheClaimsUTCDay(t *testing.T) {
	limits := transfer.Limits{"USDC": {PerTransfer: unit(50), WalletDaily: unit(100), AssetDaily: unit(1000)}}
	req := input("order-charges", "12.5").Request
	// 23:59:59 at UTC-5 is 04:59:59 the next day in UTC: the day is UTC's.
	now := time.Date(2026, 12, 2, 23, 59, 59, 0, time.FixedZone("EST", -5*3600))
	got := limits.Charges(req, now)
	want := []transfer.Charge{
		{Counter: "limit:wallet:" + transfer.WalletHash(wallet) + ":USDC:2026-12-03", Scope: transfer.LimitWallet, Asset: "USDC",
			Day: "2026-12-03", Stroops: 125_000_000, Cap: unit(100)},
		{Counter: "limit:asset:USDC:2026-12-03", Scope: transfer.LimitAsset, Asset: "USDC", Day: "2026-12-03", Stroops: 125_000_000, Cap: unit(1000)},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Charges:\n got  %+v\n want %+v", got, want)
	}
	if f := got[0].Frees(); !f.Equal(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("Frees = %v, want the next UTC midnight", f)
	}
	if e := got[0].ExpiresAt(); e != time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC).Unix() {
		t.Fatalf("ExpiresAt = %d, want three days after the day ends", e)
	}
	if c := (transfer.Limits{"USDC": {PerTransfer: unit(50)}}).Charges(req, now); c != nil {
		t.Fatalf("a per-transfer maximum alone charges %+v, want nothing", c)
	}
	if c := (transfer.Limits{"EURC": {WalletDaily: unit(1)}}).Charges(req, now); c != nil {
		t.Fatalf("another asset's limits charge %+v, want nothing", c)
	}
	if c := transfer.Limits(nil).Charges(req, now); c != nil {
		t.Fatalf("no limits charge %+v", c)
	}
}

func TestCheckAmountRefusesWhatNoDayCanPass(t *testing.T) {
	for _, tc := range []struct {
		limits transfer.AssetLimits
		amount string
		limit  string // "" when accepted
	}{
		{transfer.AssetLimits{PerTransfer: unit(50)}, "50", ""},
		{transfer.AssetLimits{PerTransfer: unit(50)}, "50.0000001", "per-transfer"},
		{transfer.AssetLimits{WalletDaily: unit(20)}, "20.5", "wallet daily"},
		{transfer.AssetLimits{AssetDaily: unit(20)}, "21", "asset daily"},
		{transfer.AssetLimits{PerTransfer: unit(100), WalletDaily: unit(20)}, "30", "wallet daily"},
		{transfer.AssetLimits{}, "1000000", ""},
	} {
		err := transfer.Limits{"USDC": tc.limits}.CheckAmount(input("order-check", tc.amount).Request)
		if tc.limit == "" {
			if err != nil {
				t.Errorf("%+v, %s: %v, want accepted", tc.limits, tc.amount, err)
			}
			continue
		}
		le, ok := errors.AsType[*transfer.LimitError](err)
		if !ok || le.Limit != tc.limit {
			t.Errorf("%+v, %s: %v, want AMOUNT_ABOVE_LIMIT (%s)", tc.limits, tc.amount, err, tc.limit)
			continue
		}
		if p := le.Problem(); p.Code != transfer.CodeAmountAboveLimit || p.Kind != transfer.KindUnacceptable ||
			p.Classification != transfer.Terminal || p.RetryAfter != 0 {
			t.Errorf("%+v, %s: problem %+v", tc.limits, tc.amount, p)
		}
	}
}

func TestFormatStroopsIsTheCanonicalAmount(t *testing.T) {
	for n, want := range map[int64]string{1: "0.0000001", unit(1000) + 5_000_000: "1000.5", unit(7): "7", 0: "0", -15_000_000: "-1.5"} {
		if got := transfer.FormatStroops(n); got != want {
			t.Errorf("FormatStroops(%d) = %q, want %q", n, got, want)
		}
		if n > 0 {
			if _, s, err := transfer.CanonicalAmount(want); err != nil || s != n {
				t.Errorf("CanonicalAmount(%q) = %d, %v; want %d", want, s, err, n)
			}
		}
	}
}

func TestGiveBackOfReturnsTheChargeOnlyWhenNothingMoved(t *testing.T) {
	charges := []transfer.Charge{{Counter: "limit:asset:USDC:2026-12-02", Scope: transfer.LimitAsset, Stroops: 5, Cap: 10}}
	rec := func(status transfer.Status) *transfer.Record {
		return &transfer.Record{ClaimID: "claim-1", Status: status, Charges: charges}
	}
	for _, tc := range []struct {
		name      string
		old, next *transfer.Record
		give      bool
	}{
		{"claimed", nil, rec(transfer.StatusInFlight), false},
		{"settled with success", rec(transfer.StatusInFlight), rec(transfer.StatusReplayable), false},
		{"rejected (FAILED)", rec(transfer.StatusInFlight), rec(transfer.StatusRejected), true},
		{"a queued request refused", rec(transfer.StatusQueued), rec(transfer.StatusRejected), true},
		{"in doubt", rec(transfer.StatusInFlight), rec(transfer.StatusInDoubt), false},
		{"released unsent or proven dead", rec(transfer.StatusInFlight), nil, true},
		{"a queued item released", rec(transfer.StatusQueued), nil, true},
		{"an in-doubt item discarded", rec(transfer.StatusInDoubt), nil, true},
		{"requeued", rec(transfer.StatusInFlight), rec(transfer.StatusQueued), false},
		{"a settled item's TTL", rec(transfer.StatusReplayable), nil, false},
		{"a rejected item's TTL", rec(transfer.StatusRejected), nil, false},
		{"a rejected item rewritten", rec(transfer.StatusRejected), rec(transfer.StatusRejected), false},
		{"a queued item cancelled", rec(transfer.StatusQueued), rec("cancelled"), true},
		{"a cancelled item's TTL", rec("cancelled"), nil, false},
	} {
		id, got := transfer.GiveBackOf(tc.old, tc.next)
		if tc.give != (got != nil) || tc.give && (id != "claim-1" || !reflect.DeepEqual(got, charges)) {
			t.Errorf("%s: GiveBackOf = %q, %+v; give back %v", tc.name, id, got, tc.give)
		}
	}
	// A claim over an expired rejected item of another incarnation, then rejected itself: given back.
	old := rec(transfer.StatusRejected)
	next := rec(transfer.StatusRejected)
	next.ClaimID = "claim-2"
	if id, _ := transfer.GiveBackOf(old, next); id != "claim-2" {
		t.Errorf("another incarnation rejected: claim %q, want claim-2", id)
	}
	// An item without charges gives nothing back.
	if id, got := transfer.GiveBackOf(&transfer.Record{ClaimID: "c", Status: transfer.StatusInFlight}, nil); id != "" || got != nil {
		t.Errorf("uncharged release: %q %+v", id, got)
	}
}

func TestAmountAboveLimitIsRefusedBeforeAnythingIsWritten(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {PerTransfer: unit(100)}}
	ctx := context.Background()
	_, err := h.orch.Transfer(ctx, input("order-above", "100.0000001"))
	if problemCode(err) != transfer.CodeAmountAboveLimit {
		t.Fatalf("err = %v, want AMOUNT_ABOVE_LIMIT", err)
	}
	if !strings.Contains(err.(transfer.ProblemError).Problem().Detail, "per-transfer limit of 100 USDC") {
		t.Fatalf("detail %q does not name the limit", err.(transfer.ProblemError).Problem().Detail)
	}
	if h.store.Writes() != 0 || h.store.Len() != 0 {
		t.Fatalf("a refused transfer wrote %d times, left %d items", h.store.Writes(), h.store.Len())
	}
	if p, _ := h.ledger.counts(); p != 0 {
		t.Fatalf("%d prepares", p)
	}
	// Async too.
	h.orch.Queue = queueFunc(func(context.Context, transfer.QueueMessage) error { return nil })
	if _, err := h.orch.Enqueue(ctx, input("order-above-async", "101")); problemCode(err) != transfer.CodeAmountAboveLimit {
		t.Fatalf("Enqueue: %v, want AMOUNT_ABOVE_LIMIT", err)
	}
	if h.store.Writes() != 0 {
		t.Fatalf("a refused enqueue wrote %d times", h.store.Writes())
	}
}

func TestAKeyAcceptedBeforeALimitWasLoweredStillReplays(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	out, err := h.orch.Transfer(ctx, input("order-lowered", "500"))
	if err != nil {
		t.Fatal(err)
	}
	h.orch.Limits = transfer.Limits{"USDC": {PerTransfer: unit(100), WalletDaily: unit(100)}}
	again, err := h.orch.Transfer(ctx, input("order-lowered", "500"))
	if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash {
		t.Fatalf("replay after the limit was lowered: %+v, %v", again, err)
	}
	if _, err := h.orch.Transfer(ctx, input("order-lowered", "501")); problemCode(err) != transfer.CodeKeyConflict {
		t.Fatalf("another request on the key: %v, want IDEMPOTENCY_KEY_CONFLICT", err)
	}
}

func TestDailyLimitRefusesTheClaimThatWouldPassItsCapAndClaimsNothing(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(25)}}
	ctx := context.Background()
	for _, k := range []string{"order-daily-1", "order-daily-2"} {
		if _, err := h.orch.Transfer(ctx, input(k, "10")); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	writes := h.store.Writes()
	_, err := h.orch.Transfer(ctx, input("order-daily-3", "10"))
	le, ok := errors.AsType[*transfer.LimitError](err)
	if !ok || le.Code != transfer.CodeDailyLimitExceeded {
		t.Fatalf("err = %v, want DAILY_LIMIT_EXCEEDED", err)
	}
	p := le.Problem()
	now := h.clock.Now().UTC()
	midnight := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	if p.Kind != transfer.KindLimited || p.Classification != transfer.Retryable || p.Limit != "wallet" || p.LimitCap != "25" ||
		p.RetryAfter != midnight.Sub(h.clock.Now()) {
		t.Fatalf("problem = %+v, want the wallet's cap of 25 freeing at %v", p, midnight)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-daily-3")); ok || h.store.Writes() != writes+1 {
		t.Fatalf("the refused claim left an item, or wrote %d times", h.store.Writes()-writes)
	}
	// A replay of a charged key is answered from its item, never charged again.
	if out, err := h.orch.Transfer(ctx, input("order-daily-1", "10")); err != nil || !out.Replayed {
		t.Fatalf("replay at the cap: %+v, %v", out, err)
	}
	// The next UTC day counts afresh.
	h.clock.Advance(midnight.Sub(h.clock.Now()) + time.Second)
	if _, err := h.orch.Transfer(ctx, input("order-daily-3", "10")); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

type queueFunc func(context.Context, transfer.QueueMessage) error

func (f queueFunc) Send(ctx context.Context, m transfer.QueueMessage) error { return f(ctx, m) }

// TestEveryWriteKeepsTheClaimsCharges: the charges the claim wrote stay on the item through the
// attach and the settlement, so that GiveBackOf sees them on the change that ends the transfer:
// a success keeps its charge, a FAILED one (rejected) gives it back.
func TestEveryWriteKeepsTheClaimsCharges(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(100), AssetDaily: unit(1000)}}
	last := map[string]*transfer.Record{} // the item as the last hook saw it, by key
	type change struct{ old, next *transfer.Record }
	var changes []change
	h.orch.Hooks = func(_ context.Context, _ transfer.Step, rec transfer.Record) error {
		cur, ok := h.store.Item(rec.StoreKey)
		if ok {
			c := cur
			if prev := last[rec.StoreKey]; prev == nil || prev.Version != c.Version || prev.ClaimID != c.ClaimID {
				changes = append(changes, change{prev, &c})
			}
			last[rec.StoreKey] = &c
		}
		return nil
	}
	if _, err := h.orch.Transfer(ctx, input("order-keep-ok", "10")); err != nil {
		t.Fatal(err)
	}
	settled := h.item(t, "order-keep-ok")
	want := h.orch.Limits.Charges(input("order-keep-ok", "10").Request, settled.CreatedAt)
	if settled.Status != transfer.StatusReplayable || !reflect.DeepEqual(settled.Charges, want) {
		t.Fatalf("settled item: %s with charges %+v, want %+v", settled.Status, settled.Charges, want)
	}
	if _, give := transfer.GiveBackOf(last[settled.StoreKey], &settled); give != nil {
		t.Fatalf("a success gives back %+v", give)
	}
	for _, c := range changes {
		if c.next.Charges == nil || !reflect.DeepEqual(c.next.Charges, want) {
			t.Fatalf("a write dropped the charges: %+v", c.next)
		}
	}
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	if _, err := h.orch.Transfer(ctx, input("order-keep-failed", "10")); problemCode(err) != transfer.CodeTransactionFailed {
		t.Fatalf("err = %v, want TRANSACTION_FAILED", err)
	}
	rejected := h.item(t, "order-keep-failed")
	id, give := transfer.GiveBackOf(last[rejected.StoreKey], &rejected)
	if rejected.Status != transfer.StatusRejected || id != rejected.ClaimID || len(give) != 2 {
		t.Fatalf("rejected item %s: GiveBackOf = %q %+v, want its two charges", rejected.Status, id, give)
	}
	if err := h.store.GiveBack(ctx, id, give); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.store.Counter(ctx, want[0].Counter); n != unit(10) {
		t.Fatalf("wallet counter after the give-back = %d, want the success's 10 only", n)
	}
}

// TestALimitLoweredDuringACallRefusesItsNextClaim: a call whose envelope was refused (nothing
// moved, its key released) claims again; with the per-transfer maximum lowered meanwhile below its
// amount, that claim is refused 422 as a new request would be, and nothing more is built or sent.
func TestALimitLoweredDuringACallRefusesItsNextClaim(t *testing.T) {
	h := newHarness(t)
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			h.orch.Limits = transfer.Limits{"USDC": {PerTransfer: unit(1)}} // the call's own goroutine
			return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	_, err := h.orch.Transfer(context.Background(), input("order-lowered-mid", "5"))
	if problemCode(err) != transfer.CodeAmountAboveLimit {
		t.Fatalf("err = %v, want AMOUNT_ABOVE_LIMIT", err)
	}
	if p, s := h.ledger.counts(); p != 1 || s != 1 || h.ledger.landedCount() != 0 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want the one refused envelope only", p, s, h.ledger.landedCount())
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-lowered-mid")); ok {
		t.Fatal("the key holds an item")
	}
}

// TestAnAsyncTransferIsChargedWhenAccepted: Enqueue's queued claim carries the charges, so the
// acceptance (202) is what counts against the day; a claim that would pass the cap is the same
// 429 with nothing queued, and the accepted key posted again is accepted again, not charged again.
func TestAnAsyncTransferIsChargedWhenAccepted(t *testing.T) {
	h := newHarness(t)
	h.orch.Limits = transfer.Limits{"USDC": {WalletDaily: unit(15)}}
	sent := 0
	h.orch.Queue = queueFunc(func(context.Context, transfer.QueueMessage) error { sent++; return nil })
	ctx := context.Background()
	if res, err := h.orch.Enqueue(ctx, input("payout-limit-1", "10")); err != nil || !res.Accepted {
		t.Fatalf("Enqueue: %+v, %v", res, err)
	}
	counter := h.orch.Limits.Charges(input("payout-limit-1", "10").Request, h.clock.Now())[0].Counter
	_, err := h.orch.Enqueue(ctx, input("payout-limit-2", "10"))
	if le, ok := errors.AsType[*transfer.LimitError](err); !ok || le.Code != transfer.CodeDailyLimitExceeded || le.RetryAfter <= 0 {
		t.Fatalf("Enqueue over the cap: %v, want DAILY_LIMIT_EXCEEDED with a Retry-After", err)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-limit-2")); ok || sent != 1 {
		t.Fatalf("the refused transfer was queued (item %v, %d messages)", ok, sent)
	}
	if res, err := h.orch.Enqueue(ctx, input("payout-limit-1", "10")); err != nil || !res.Accepted {
		t.Fatalf("Enqueue again: %+v, %v", res, err)
	}
	if n, _ := h.store.Counter(ctx, counter); n != unit(10) {
		t.Fatalf("wallet counter = %d, want the one acceptance's 10", n)
	}
}
