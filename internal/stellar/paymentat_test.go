package stellar_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// An operator's resolve of a batched key checks the landed transaction's own operation at the
// key's index (transfer.OperationReader): PaymentAt reads it from the network, by the inner or the
// outer hash, as the payment it made: the destination's account and, for an M... wallet, its
// address and id, the configured asset and the amount. An index past the transaction's
// operations, a hash the network never saw, and a transaction that FAILED (nothing moved) are
// ErrNotFound. Both backends, on the local network.
func TestPaymentAtReadsTheLandedOperationAtTheKeysIndex(t *testing.T) {
	for _, backend := range []string{"rpc", "horizon"} {
		t.Run(backend, func(t *testing.T) {
			r := newFundsRig(t, backend, 2, 1_000*unit)
			l := r.ledger.(batchLedger)
			or, ok := r.ledger.(transfer.OperationReader)
			if !ok {
				t.Fatalf("%T is no transfer.OperationReader", r.ledger)
			}
			w := []string{r.wallet(t), r.wallet(t), r.wallet(t)}
			reqs := []transfer.Request{withdraw(w[0], 1*unit), muxedWithdraw(t, w[1], 7, 2*unit), withdraw(w[2], 3*unit+1)}
			ctx := context.Background()
			env, lk := landBatch(t, r, reqs)
			if lk.Status != transfer.LookupSuccess {
				t.Fatalf("Lookup = %+v", lk)
			}
			for _, hash := range []string{env.InnerHash, env.OuterHash} {
				for i, req := range reqs {
					p, err := or.PaymentAt(ctx, hash, i)
					if err != nil {
						t.Fatalf("PaymentAt(%s, %d): %v", hash, i, err)
					}
					muxed, id := "", ""
					if req.MuxedID != 0 {
						muxed, id = req.WalletAddress, strconv.FormatUint(req.MuxedID, 10)
					}
					if p.Counterparty != req.Wallet().Scope() || p.Muxed != muxed || p.MuxedID != id || p.Asset != r.usdc.Code ||
						p.Stroops != req.Stroops || p.Direction != transfer.DirectionOut || p.Op != i || p.Ops != 3 ||
						p.Hash != env.InnerHash || p.OuterHash != env.OuterHash || p.Ledger != lk.Ledger {
						t.Fatalf("PaymentAt(%s, %d) = %+v; want %d stroops of %s to %s (muxed %q, id %q)", hash, i, p, req.Stroops, r.usdc.Code, req.Wallet().Scope(), muxed, id)
					}
				}
			}
			if _, err := or.PaymentAt(ctx, env.InnerHash, 3); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("PaymentAt past the last operation: %v, want ErrNotFound", err)
			}
			if _, err := or.PaymentAt(ctx, strings.Repeat("ab", 32), 0); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("PaymentAt of a hash the network never saw: %v, want ErrNotFound", err)
			}
			l.Done(ctx, env)

			// A batch that FAILED (one destination without a trustline) paid nobody.
			untrusted := keypair.MustRandom().Address()
			if err := r.n.CreateAccount(untrusted, 10*unit); err != nil {
				t.Fatal(err)
			}
			failing, err := l.PrepareBatch(ctx, []transfer.Request{withdraw(r.wallet(t), unit), withdraw(untrusted, unit)},
				transfer.Terms{MinTime: time.Unix(2, 0), MaxTime: r.clock.Now().Add(time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Send(ctx, failing); err != nil {
				t.Fatal(err)
			}
			r.clock.Advance(10 * time.Second)
			r.clock.Advance(4 * time.Second)
			if lk, err := l.Lookup(ctx, failing); err != nil || lk.Status != transfer.LookupFailed {
				t.Fatalf("Lookup of the failing batch = %+v, %v", lk, err)
			}
			if _, err := or.PaymentAt(ctx, failing.InnerHash, 0); !errors.Is(err, transfer.ErrNotFound) {
				t.Fatalf("PaymentAt of a FAILED transaction: %v, want ErrNotFound", err)
			}
		})
	}
}
