package stellar_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
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
