package stellar_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A batch the vault pays itself (no channel, so no fee bump) carries its fee in the
// transaction's own uint32 fee field. When the lane's bid times the batch's operations is more
// than that field holds, the batch is refused FEE_ABOVE_CAP (503, retryable, nothing sent), as
// a bid above MAX_FEE_STROOPS is: never the plain error txnbuild gives, which a client would meet
// as the service's own failure.
func TestVaultPaidBatchFeeAboveItsUint32FieldIsFeeAboveCap(t *testing.T) {
	eachBackend(t, func(t *testing.T, backend string) {
		const maxFee = 2_000_000_000 // per payment: three payments may bid 6e9 stroops, above 2^32 - 1
		r := newPayRig(t, payRigOpts{backend: backend, channels: 0, classicOps: 20, maxFee: maxFee, feePercentile: 90})
		if err := r.net.SetCongestion(stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 1_500_000_000, FeeMax: 1_900_000_000}); err != nil {
			t.Fatal(err)
		}
		r.ledgers(12)
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
		terms := transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(2 * time.Minute)}
		env, err := r.ledger.(batchLedger).PrepareBatch(context.Background(), reqs, terms)
		var ue *transfer.UnavailableError
		if !errors.As(err, &ue) || ue.Code != transfer.CodeFeeAboveCap || ue.RetryAfter <= 0 {
			t.Fatalf("PrepareBatch = %+v, %v; want *UnavailableError FEE_ABOVE_CAP with a Retry-After", env, err)
		}
	})
}
