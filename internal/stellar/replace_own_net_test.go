package stellar_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Over the local network, both backends: others surge priced the classic lane (4 operations a
// ledger: two one-payment fee bumps, two slots each) for 12 ledgers, then stopped, and the lane's
// queue drained. The service sends three
// payments at the rate the window bids; the next ledger takes two of them and leaves the third
// out: the lane was surge priced by the service's own fee bumps alone, and the fee stats still
// show the surge. Replacing the third would outbid its own, so Replace answers ErrNoReplacement
// naming them and builds nothing; the third lands a ledger later at its own bid.
func TestReplaceNotAgainstOwnBidsOverTheNetwork(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		r := newPayRig(t, payRigOpts{backend: backend, channels: 3, classicOps: 4, maxFee: 1_000_000, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(12)
		if err := r.net.SetCongestion(stellarsim.Congestion{}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(3)
		ctx := context.Background()
		var envs []transfer.Envelope
		for range 3 {
			env, err := r.ledger.Prepare(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: "1", Asset: "USDC", Stroops: unit},
				transfer.Terms{MaxTime: r.clock.Now().Add(2 * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			if res, err := r.ledger.Send(ctx, env); err != nil || res.Status != transfer.SendPending {
				t.Fatalf("Send = %+v, %v (%d per slot, %+v)", res, err, offered(t, env.XDR), env)
			}
			envs = append(envs, env)
		}
		r.ledgers(1)
		var left []transfer.Envelope
		latest, feeAccount := uint32(0), ""
		for _, env := range envs {
			a, ok := r.net.Transaction(env.InnerHash)
			if !ok {
				left = append(left, env)
				continue
			}
			latest, feeAccount = max(latest, a.Ledger), a.FeeSource
		}
		if len(left) != 1 || latest == 0 {
			t.Fatalf("%d of 3 left out of a lane of two, want 1: the test shows nothing", len(left))
		}
		// The premise: the ledger that left one out took the service's fee bumps alone.
		for _, a := range r.net.Applied() {
			if a.Ledger == latest && a.FeeSource == feeAccount {
				continue
			}
			if a.Ledger == latest {
				t.Fatalf("ledger %d included %s paid by %s, not the service: the test shows nothing", latest, a.Hash, a.FeeSource)
			}
		}
		_, err := r.ledger.(transfer.Replacer).Replace(ctx, left[0])
		if !errors.Is(err, transfer.ErrNoReplacement) || !strings.Contains(err.Error(), "outbid only by this deployment's own transactions") {
			t.Fatalf("Replace: %v, want ErrNoReplacement: outbid only by this deployment's own transactions", err)
		}
		r.ledgers(1)
		if a, ok := r.net.Transaction(left[0].InnerHash); !ok || a.Status != "SUCCESS" || a.FeeBumpHash != left[0].OuterHash {
			t.Fatalf("applied %+v (%v), want the envelope left out, at its own bid", a, ok)
		}
		for _, env := range envs {
			r.ledger.(interface {
				Done(context.Context, transfer.Envelope)
			}).Done(ctx, env)
		}
	})
}

// A Horizon that does not serve GET /ledgers/{seq}/transactions (a front answers it not_found, as
// Horizon answers an unknown resource) cannot show who outbid an envelope: the surge rule alone
// decides, as before, and an outbid envelope in a surge-priced lane is replaced.
func TestReplaceOverHorizonWithoutLedgerTransactionsKeepsTheSurgeRule(t *testing.T) {
	var refused atomic.Int32
	front := withoutLedgerTransactions(t, &refused)
	r := newPayRig(t, payRigOpts{backend: "horizon", channels: 2, classicOps: 20, maxFee: 1_000_000, feePercentile: 90, horizonFront: front})
	if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000}); err != nil {
		t.Fatal(err)
	}
	r.ledgers(12)
	ctx := context.Background()
	env, err := r.ledger.Prepare(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: "1", Asset: "USDC", Stroops: unit},
		transfer.Terms{MaxTime: r.clock.Now().Add(2 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.ledger.(interface {
		Done(context.Context, transfer.Envelope)
	}).Done(ctx, env)
	next, err := r.ledger.(transfer.Replacer).Replace(ctx, env)
	if err != nil {
		t.Fatalf("Replace: %v, want a replacement by the surge rule", err)
	}
	if refused.Load() == 0 {
		t.Fatal("the service never asked for a ledger's transactions")
	}
	if next.InnerHash != env.InnerHash || offered(t, next.XDR) < 10*offered(t, env.XDR) {
		t.Fatalf("replacement %s at %d per slot, want the inner %s at >= 10x %d", next.InnerHash, offered(t, next.XDR), env.InnerHash, offered(t, env.XDR))
	}
}
