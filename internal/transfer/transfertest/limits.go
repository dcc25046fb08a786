package transfertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// LimitStore is a transfer.Store that also holds the limits' daily counters.
type LimitStore interface {
	transfer.Store
	transfer.Counters
}

// limitAmount is the amount of every claim of the limit contract, in stroops (10 USDC).
const limitAmount = 10 * transfer.StroopsPerUnit

// LimitContract checks that a store charges the limits' daily counters as internal/dynamo's Store
// does (transfer/limits.go; internal/dynamo/doc.go, "Limits"): atomically with the claim, never
// above a cap, never for a claim that lost its key, never twice for one claim, and gives a charge
// back once per claim. open returns an empty store for one subtest; subtests run in parallel.
func LimitContract(t *testing.T, open func(t *testing.T) LimitStore) {
	ctx := context.Background()
	limits := transfer.Limits{"USDC": {WalletDaily: 25 * transfer.StroopsPerUnit, AssetDaily: 1000 * transfer.StroopsPerUnit}}

	t.Run("a won claim adds its charges to their counters and keeps them on its item", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		rec := chargedRecord(limits, "limits-won", "owner-a", wallet)
		if len(rec.Charges) != 2 {
			t.Fatalf("charges: %+v, want the wallet's and the asset's", rec.Charges)
		}
		got, won, err := s.Claim(ctx, rec, t0)
		if err != nil || !won {
			t.Fatalf("Claim: won=%v err=%v", won, err)
		}
		if !reflect.DeepEqual(got.Charges, rec.Charges) || !reflect.DeepEqual(mustGet(t, s, rec.StoreKey).Charges, rec.Charges) {
			t.Fatalf("charges read back %+v, want %+v", mustGet(t, s, rec.StoreKey).Charges, rec.Charges)
		}
		wantCounters(t, s, rec.Charges, limitAmount, limitAmount)
	})

	t.Run("a claim that would pass a cap writes nothing and names the limit", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		mustClaim(t, s, chargedRecord(limits, "limits-cap-1", "owner-a", wallet))
		mustClaim(t, s, chargedRecord(limits, "limits-cap-2", "owner-b", wallet))
		third := chargedRecord(limits, "limits-cap-3", "owner-c", wallet) // 30 > 25, the wallet's cap
		_, won, err := s.Claim(ctx, third, t0)
		le, ok := errors.AsType[*transfer.LimitError](err)
		if won || !ok || le.Code != transfer.CodeDailyLimitExceeded || le.Charge != third.Charges[0] {
			t.Fatalf("Claim over the wallet's cap: won=%v err=%v, want DAILY_LIMIT_EXCEEDED for %+v", won, err, third.Charges[0])
		}
		if _, err := s.Get(ctx, third.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
			t.Fatalf("the refused claim left an item: Get = %v", err)
		}
		wantCounters(t, s, third.Charges, 2*limitAmount, 2*limitAmount)
		// Another wallet still has room under the asset's cap.
		other := chargedRecord(limits, "limits-cap-other", "owner-d", otherWallet)
		mustClaim(t, s, other)
		wantCounters(t, s, other.Charges, limitAmount, 3*limitAmount)
	})

	t.Run("the asset's cap holds over every wallet", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		tight := transfer.Limits{"USDC": {AssetDaily: 15 * transfer.StroopsPerUnit}}
		mustClaim(t, s, chargedRecord(tight, "limits-asset-1", "owner-a", wallet))
		second := chargedRecord(tight, "limits-asset-2", "owner-b", otherWallet)
		_, won, err := s.Claim(ctx, second, t0)
		if le, ok := errors.AsType[*transfer.LimitError](err); won || !ok || le.Limit != string(transfer.LimitAsset) {
			t.Fatalf("Claim over the asset's cap: won=%v err=%v", won, err)
		}
		wantCounters(t, s, second.Charges, limitAmount)
	})

	t.Run("a claim lost to the key's holder is answered with the holder and charges nothing, even at the cap", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		first := chargedRecord(limits, "limits-lost", "owner-a", wallet)
		mustClaim(t, s, first)
		mustClaim(t, s, chargedRecord(limits, "limits-lost-2", "owner-b", wallet)) // the wallet at 20 of 25
		again := chargedRecord(limits, "limits-lost", "owner-c", wallet)           // its 10 would pass the cap
		got, won, err := s.Claim(ctx, again, t0)
		if err != nil || won || got.ClaimID != first.ClaimID {
			t.Fatalf("Claim of a held key: won=%v err=%v holder %q, want the holder %q", won, err, got.ClaimID, first.ClaimID)
		}
		// The same claim written again (an answer lost, the write retried): lost to itself, not charged twice.
		got, won, err = s.Claim(ctx, first, t0)
		if err != nil || won || got.ClaimID != first.ClaimID {
			t.Fatalf("Claim written again: won=%v err=%v holder %q", won, err, got.ClaimID)
		}
		wantCounters(t, s, first.Charges, 2*limitAmount, 2*limitAmount)
	})

	t.Run("a claim over an expired item charges as on a free key", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		old := chargedRecord(limits, "limits-expired", "owner-a", wallet)
		put(t, s, settle(old, transfer.StatusReplayable, t0.Unix()-1))
		next := chargedRecord(limits, "limits-expired", "owner-b", wallet)
		if _, won, err := s.Claim(ctx, next, t0); err != nil || !won {
			t.Fatalf("Claim over an expired item: won=%v err=%v", won, err)
		}
		wantCounters(t, s, next.Charges, 2*limitAmount, 2*limitAmount) // put's claim charged once too
	})

	t.Run("a give-back subtracts a claim's charges once however often it is delivered", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		a := chargedRecord(limits, "limits-giveback-a", "owner-a", wallet)
		b := chargedRecord(limits, "limits-giveback-b", "owner-b", wallet)
		mustClaim(t, s, a)
		mustClaim(t, s, b)
		for range 3 {
			if err := s.GiveBack(ctx, a.ClaimID, a.Charges); err != nil {
				t.Fatalf("GiveBack: %v", err)
			}
		}
		wantCounters(t, s, a.Charges, limitAmount, limitAmount)
		// The room given back is claimable again: 10 + 10 + 5 fits under 25, 10 + 10 + 10 did not.
		c := chargedRecord(limits, "limits-giveback-c", "owner-c", wallet)
		mustClaim(t, s, c)
		wantCounters(t, s, c.Charges, 2*limitAmount, 2*limitAmount)
	})

	t.Run("of concurrent claims near a cap no more win than fit under it", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		const n, fit = 12, 5
		tight := transfer.Limits{"USDC": {AssetDaily: fit*limitAmount + limitAmount/2}}
		var wg sync.WaitGroup
		var mu sync.Mutex
		won, refused := 0, 0
		var unexpected []error
		for i := range n {
			wg.Go(func() {
				w := wallet
				if i%2 == 1 {
					w = otherWallet
				}
				rec := chargedRecord(tight, fmt.Sprintf("limits-race-%02d", i), fmt.Sprintf("owner-%02d", i), w)
				_, ok, err := s.Claim(ctx, rec, t0)
				mu.Lock()
				defer mu.Unlock()
				le, limited := errors.AsType[*transfer.LimitError](err)
				switch {
				case err == nil && ok:
					won++
				case limited && le.Code == transfer.CodeDailyLimitExceeded:
					refused++
				default:
					unexpected = append(unexpected, fmt.Errorf("claim %d: won=%v err=%w", i, ok, err))
				}
			})
		}
		wg.Wait()
		if len(unexpected) > 0 || won != fit || refused != n-fit {
			t.Fatalf("won %d, refused %d, unexpected %v; want %d won and %d refused", won, refused, unexpected, fit, n-fit)
		}
		wantCounters(t, s, tight.Charges(claimRecord("x", "y").Request, t0), fit*limitAmount)
	})
}

// otherWallet is a second wallet of the limit contract.
const otherWallet = "GAAZI4TCR3TY5OJHCTJC2A4QSY6CJWJH5IAJTGKIN2ER7LBNVKOCCWN7"

// chargedRecord is claimRecord for wallet w and an amount of limitAmount, charged under limits.
func chargedRecord(limits transfer.Limits, clientKey, owner, w string) transfer.Record {
	rec := claimRecord(clientKey, owner)
	rec.Request.WalletAddress, rec.Request.Amount, rec.Request.Stroops = w, "10", limitAmount
	rec.StoreKey, rec.Fingerprint = transfer.StoreKey(w, clientKey), rec.Request.Fingerprint()
	rec.Charges = limits.Charges(rec.Request, t0)
	return rec
}

// wantCounters checks each charge's counter total, in the order of charges.
func wantCounters(t *testing.T, s transfer.Counters, charges []transfer.Charge, want ...int64) {
	t.Helper()
	if len(charges) != len(want) {
		t.Fatalf("%d charges, %d totals to check", len(charges), len(want))
	}
	for i, c := range charges {
		got, err := s.Counter(context.Background(), c.Counter)
		if err != nil || got != want[i] {
			t.Fatalf("counter %s = %d (err %v), want %d", c.Counter, got, err, want[i])
		}
	}
}
