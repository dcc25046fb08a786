package stellar_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// leaveFeeAccount burns the fee account down to avail stroops above its reserve.
func (r *payRig) leaveFeeAccount(fee string, avail int64) {
	r.t.Helper()
	acct, ok := r.net.Account(fee)
	if !ok {
		r.t.Fatalf("no fee account %s", fee)
	}
	reserve := int64(2+acct.NumSubEntries+acct.NumSponsoring-acct.NumSponsored) * stellar.DefaultBaseReserveStroops
	if err := r.net.Burn(fee, stellarsim.Native, acct.Balance-reserve-avail); err != nil {
		r.t.Fatal(err)
	}
}

// A fee account that covers the first fee bump but not a replacement at 10x its rate: right
// after the first send it is left with 3x that envelope's fee above its reserve. The service does
// not replace (stellar-core would refuse the replacement txINSUFFICIENT_BALANCE,
// TransactionQueue::canAdd), pages once with FEE_ACCOUNT_UNDERFUNDED, and keeps waiting on the
// first envelope, which lands once it is let in and is settled replayable with its own outer hash
// and the fee it was charged. Nothing else is sent, and the transfer applies once.
func TestReplaceByFeeFeeAccountCannotFundReplacement(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := surged(t, backend, 100_000)
		var logs bytes.Buffer
		var mu sync.Mutex
		r.orch.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
		if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2}); err != nil {
			t.Fatal(err)
		}
		var once sync.Once
		var firstFee int64
		r.orch.Hooks = func(_ context.Context, step transfer.Step, rec transfer.Record) error {
			if step != transfer.StepSent || rec.Envelope == nil {
				return nil
			}
			once.Do(func() {
				firstFee = rec.Envelope.FeeStroops
				r.leaveFeeAccount(feeAccountOf(t, rec.Envelope.XDR), 3*firstFee)
			})
			return nil
		}
		out, err := r.transfer("rbf-unfunded-1", 5)
		if err != nil {
			r.logSent()
			t.Fatalf("transfer: %v", err)
		}
		rec := r.item("rbf-unfunded-1")
		if outers := rec.Envelope.Outers(); len(outers) != 1 || rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != out.TransactionHash {
			t.Fatalf("item %s %v %+v, want replayable with the one outer hash", rec.Status, outers, rec.Result)
		}
		built := map[string]bool{}
		for _, e := range r.ours() {
			built[e.Hash] = true
			if e.Code == "txINSUFFICIENT_BALANCE" || strings.Contains(e.Code, "insufficient_balance") {
				t.Errorf("the network refused %s %s: the service sent what the fee account cannot fund", e.Hash, e.Code)
			}
		}
		if len(built) != 1 {
			r.logSent()
			t.Errorf("%d distinct envelopes sent, want 1 (no replacement)", len(built))
		}
		a, ok := r.net.Transaction(out.TransactionHash)
		if !ok || a.Status != "SUCCESS" || a.FeeBumpHash != rec.Envelope.OuterHash || rec.Result.FeeChargedStroops != a.FeeCharged {
			t.Fatalf("applied %+v (%v), want the first fee bump %s charged %d", a, ok, rec.Envelope.OuterHash, rec.Result.FeeChargedStroops)
		}
		paid := 0
		for _, ap := range r.net.Applied() {
			if ap.Hash == rec.Envelope.InnerHash {
				paid++
			}
		}
		if paid != 1 {
			t.Errorf("the transfer applied %d times", paid)
		}
		mu.Lock()
		text := logs.String()
		mu.Unlock()
		pages := 0
		for line := range strings.SplitSeq(text, "\n") {
			if strings.Contains(line, `"alert":"`+transfer.AlertFeeAccountUnderfunded+`"`) {
				pages++
				if !strings.Contains(line, `"code":"`+transfer.CodeFeeAccountUnderfunded+`"`) || !strings.Contains(line, rec.Envelope.InnerHash) ||
					!strings.Contains(line, "not replacing") {
					t.Errorf("page %s: want FEE_ACCOUNT_UNDERFUNDED naming the envelope and that it is not replaced", line)
				}
			}
		}
		if pages != 1 {
			t.Errorf("%d fee account pages, want 1; logs:\n%s", pages, text)
		}
		t.Logf("first fee %d stroops, fee account left %d above its reserve; landed in ledger %d charged %d", firstFee, 3*firstFee, a.Ledger, a.FeeCharged)
	})
}

// The replacement must fit on top of what the other channels may have queued (feeGuard's
// queuedElsewhere), as stellar-core counts every fee queued for the fee account: right after the
// first send the fee account is left with 20x the first envelope's fee, room for a replacement at
// 10x. With the other channel free the envelope is replaced; with another process's lease on the
// other channel (its envelope counted at MAX_FEE_STROOPS, 100,000 stroops) it is not, and the
// call pages once and lands on its first envelope.
func TestReplaceByFeeFundsCountOtherChannels(t *testing.T) {
	for _, other := range []string{"free", "leased"} {
		t.Run(other, func(t *testing.T) {
			r := surged(t, "rpc", 100_000)
			var logs bytes.Buffer
			var mu sync.Mutex
			r.orch.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
			if err := r.net.InjectFault(stellarsim.Fault{Kind: stellarsim.FaultDelayInclusion, Ledgers: 2}); err != nil {
				t.Fatal(err)
			}
			chans, err := sources.DeriveChannelKeys(signing.NewMasterSeed([]byte("0123456789abcdef0123456789abcdef")), 2)
			if err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			r.orch.Hooks = func(ctx context.Context, step transfer.Step, rec transfer.Record) error {
				if step != transfer.StepSent || rec.Envelope == nil {
					return nil
				}
				once.Do(func() {
					r.leaveFeeAccount(feeAccountOf(t, rec.Envelope.XDR), 20*rec.Envelope.FeeStroops)
					if other == "free" {
						return
					}
					for _, c := range chans {
						if c.Address() == rec.Envelope.Channel {
							continue
						}
						now := r.clock.Now()
						if err := r.leases.LeaseChannel(ctx, c.Address(), "another-process", now, now.Add(5*time.Minute), now.Add(5*time.Minute), now); err != nil {
							t.Errorf("leasing %s: %v", c.Address(), err)
						}
					}
				})
				return nil
			}
			out, err := r.transfer("rbf-others-1", 5)
			if err != nil {
				r.logSent()
				t.Fatalf("transfer: %v", err)
			}
			rec := r.item("rbf-others-1")
			mu.Lock()
			text := logs.String()
			mu.Unlock()
			pages := strings.Count(text, `"alert":"`+transfer.AlertFeeAccountUnderfunded+`"`)
			outers := rec.Envelope.Outers()
			switch other {
			case "free":
				if len(outers) < 2 || pages != 0 {
					r.logSent()
					t.Fatalf("outer hashes %v, %d pages: want replaced, no page", outers, pages)
				}
			default:
				if len(outers) != 1 || pages != 1 {
					r.logSent()
					t.Fatalf("outer hashes %v, %d pages: want no replacement and one page; logs:\n%s", outers, pages, text)
				}
			}
			if a, ok := r.net.Transaction(out.TransactionHash); !ok || a.Status != "SUCCESS" || rec.Status != transfer.StatusReplayable || rec.Result.FeeChargedStroops != a.FeeCharged {
				t.Fatalf("applied %+v (%v), item %s %+v", a, ok, rec.Status, rec.Result)
			}
		})
	}
}

// A fee spike right after the first send outbids the envelope for good while the fee account
// cannot fund a replacement at 10x (it is left with 3x the first fee): no replacement is sent,
// the call pages once, the envelope is evicted and the transfer expires truthfully:
// TRANSACTION_EXPIRED ("nothing moved") with nothing of it applied, the fee account charged
// nothing, and no envelope the network refused for want of funds.
func TestReplaceByFeeUnfundedReplacementExpires(t *testing.T) {
	r := surged(t, "rpc", 100_000)
	var logs bytes.Buffer
	var mu sync.Mutex
	r.orch.Logger = slog.New(slog.NewJSONHandler(&lockedWriter{w: &logs, mu: &mu}, nil))
	var once sync.Once
	var fee, inner string
	var feeBefore int64
	r.orch.Hooks = func(_ context.Context, step transfer.Step, rec transfer.Record) error {
		if step == transfer.StepSent && rec.Envelope != nil {
			once.Do(func() {
				fee, inner = feeAccountOf(t, rec.Envelope.XDR), rec.Envelope.InnerHash
				r.leaveFeeAccount(fee, 3*rec.Envelope.FeeStroops)
				a, _ := r.net.Account(fee)
				feeBefore = a.Balance
				r.spikeNow(10, 45)
			})
		}
		return nil
	}
	_, err := r.transfer("rbf-unfunded-expires-1", 5)
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeTransactionExpired {
		r.logSent()
		t.Fatalf("transfer: %v, want TRANSACTION_EXPIRED", err)
	}
	// The item is gone: proven dead, the key was released.
	if _, err := r.store.Get(context.Background(), transfer.StoreKey(r.wallet, "rbf-unfunded-expires-1")); !errors.Is(err, transfer.ErrNotFound) {
		t.Errorf("item: %v, want released (not found)", err)
	}
	for _, ap := range r.net.Applied() {
		if ap.Hash == inner {
			t.Fatalf("the transfer applied in ledger %d, answered TRANSACTION_EXPIRED", ap.Ledger)
		}
	}
	built := map[string]bool{}
	for _, e := range r.ours() {
		built[e.Hash] = true
		if e.Code == "txINSUFFICIENT_BALANCE" {
			t.Errorf("the network refused %s %s: the service sent what the fee account cannot fund", e.Hash, e.Code)
		}
	}
	if len(built) != 1 {
		r.logSent()
		t.Errorf("%d distinct envelopes sent, want 1 (no replacement)", len(built))
	}
	if a, _ := r.net.Account(fee); a.Balance != feeBefore {
		t.Errorf("fee account %d -> %d stroops: want nothing charged", feeBefore, a.Balance)
	}
	mu.Lock()
	text := logs.String()
	mu.Unlock()
	if pages := strings.Count(text, `"alert":"`+transfer.AlertFeeAccountUnderfunded+`"`); pages != 1 {
		t.Errorf("%d fee account pages, want 1", pages)
	}
}

// feeAccountOf is the fee source of a fee bump envelope.
func feeAccountOf(t *testing.T, b64 string) string {
	t.Helper()
	gen, err := txnbuild.TransactionFromXDR(b64)
	if err != nil {
		t.Fatal(err)
	}
	fb, ok := gen.FeeBump()
	if !ok {
		t.Fatal("the envelope is not a fee bump")
	}
	return fb.FeeAccount()
}
