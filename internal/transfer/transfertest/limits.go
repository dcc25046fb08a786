package transfertest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

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

	t.Run("a random history of claims, settlements, releases and redelivered give-backs leaves each counter at the charges still standing", func(t *testing.T) {
		t.Parallel()
		s := open(t)
		randomHistory(t, s, limits)
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

// randomHistory plays a seeded random history on s: claims of six keys of two wallets (a claim of
// a held key is a replay or a conflict and must charge nothing; one over a cap must write
// nothing), then for each held item one of its next writes as the orchestrator and the operators
// make them (settle with success, reject, put in doubt, release, discard), each change appended to
// a stream that is delivered late, in order, and partly twice (GiveBackOf, then GiveBack). After
// every step no counter is above its cap; once the stream is delivered, each counter is the sum
// of the charges of the incarnations under which something moved or may still move.
func randomHistory(t *testing.T, s LimitStore, limits transfer.Limits) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 11))
	type change struct{ old, next *transfer.Record }
	var stream []change
	delivered := 0
	deliver := func(upTo int) {
		for ; delivered < upTo; delivered++ {
			c := stream[delivered]
			for range 1 + rng.IntN(2) { // at least once
				if id, charges := transfer.GiveBackOf(c.old, c.next); charges != nil {
					if err := s.GiveBack(ctx, id, charges); err != nil {
						t.Fatalf("GiveBack: %v", err)
					}
				}
			}
		}
	}
	keys := []string{"limits-random-a", "limits-random-b", "limits-random-c", "limits-random-d", "limits-random-e", "limits-random-f"}
	walletOf := func(i int) string {
		if i%2 == 0 {
			return wallet
		}
		return otherWallet
	}
	var counters []transfer.Charge
	for _, w := range []string{wallet, otherWallet} {
		counters = append(counters, limits.Charges(chargedRecord(limits, "x", "y", w).Request, t0)...)
	}
	seq := 0
	for step := range 400 {
		i := rng.IntN(len(keys))
		w := walletOf(i)
		key := transfer.StoreKey(w, keys[i])
		cur, err := s.Get(ctx, key)
		switch {
		case errors.Is(err, transfer.ErrNotFound):
			seq++
			rec := chargedRecord(limits, keys[i], fmt.Sprintf("owner-%d", seq), w)
			rec.ClaimID = fmt.Sprintf("claim-random-%d", seq)
			_, won, err := s.Claim(ctx, rec, t0)
			if le, ok := errors.AsType[*transfer.LimitError](err); ok && le.Code == transfer.CodeDailyLimitExceeded {
				if _, gerr := s.Get(ctx, key); !errors.Is(gerr, transfer.ErrNotFound) {
					t.Fatalf("step %d: a refused claim left an item", step)
				}
				break
			}
			if err != nil || !won {
				t.Fatalf("step %d: claim of a free key: won=%v err=%v", step, won, err)
			}
			stream = append(stream, change{nil, &rec})
		case err != nil:
			t.Fatalf("step %d: Get: %v", step, err)
		default:
			if rng.IntN(4) == 0 { // a retry of the key: lost to the holder, charges nothing
				again := chargedRecord(limits, keys[i], "owner-replay", w)
				again.ClaimID = fmt.Sprintf("claim-replay-%d", step)
				if held, won, err := s.Claim(ctx, again, t0); err != nil || won || held.ClaimID != cur.ClaimID {
					t.Fatalf("step %d: a claim of a held key: won=%v err=%v", step, won, err)
				}
				break
			}
			next := cur
			next.Version, next.LeaseOwner, next.LeaseExpiresAt = cur.Version+1, "", time.Time{}
			old := cur
			switch r := rng.IntN(5); {
			case cur.Status == transfer.StatusReplayable || cur.Status == transfer.StatusRejected:
				// Settled: its TTL removes it (what the stream sees of a TTL's removal).
				if err := s.Delete(ctx, key, transfer.Expect(cur)); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				stream = append(stream, change{&old, nil})
				continue
			case r == 0 || r == 1 && cur.Status == transfer.StatusInDoubt:
				next = settle(cur, transfer.StatusReplayable, t0.Unix()+3600)
			case r == 1:
				next = settle(cur, transfer.StatusRejected, t0.Unix()+3600)
			case r == 2 && cur.Status == transfer.StatusInFlight:
				next = settle(cur, transfer.StatusInDoubt, 0)
			default: // a release, or an operator's discard of an item in doubt
				if err := s.Delete(ctx, key, transfer.Expect(cur)); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				stream = append(stream, change{&old, nil})
				continue
			}
			if err := s.Replace(ctx, next, transfer.Expect(cur)); err != nil {
				t.Fatalf("step %d: Replace: %v", step, err)
			}
			stream = append(stream, change{&old, &next})
		}
		deliver(delivered + rng.IntN(len(stream)-delivered+1)) // the stream lags
		for _, c := range counters {
			if n, err := s.Counter(ctx, c.Counter); err != nil || n > c.Cap || n < 0 {
				t.Fatalf("step %d: counter %s = %d (%v), cap %d", step, c.Counter, n, err, c.Cap)
			}
		}
	}
	deliver(len(stream))
	// Standing: the charges of every incarnation no change gave back.
	givenBack := map[string]bool{}
	standing := map[string]int64{}
	for _, c := range stream {
		if id, charges := transfer.GiveBackOf(c.old, c.next); charges != nil {
			givenBack[id] = true
		}
	}
	for _, c := range stream {
		if c.old == nil && !givenBack[c.next.ClaimID] { // the claim's change, once per incarnation
			for _, ch := range c.next.Charges {
				standing[ch.Counter] += ch.Stroops
			}
		}
	}
	for _, c := range counters {
		if n, err := s.Counter(ctx, c.Counter); err != nil || n != standing[c.Counter] {
			t.Fatalf("counter %s = %d (%v), want %d: the charges still standing", c.Counter, n, err, standing[c.Counter])
		}
	}
}
