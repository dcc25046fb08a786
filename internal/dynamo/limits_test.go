package dynamo_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// chargedClaim is claimRecord carrying the wallet's and the asset's charges of a 10 USDC transfer.
func chargedClaim(k, owner string, limits transfer.Limits) transfer.Record {
	rec := claimRecord(key(k), owner, "fp-"+k)
	rec.ClaimID = "claim-" + k + "-" + owner
	rec.Request.Amount, rec.Request.Stroops = "10", 10*transfer.StroopsPerUnit
	rec.Charges = limits.Charges(rec.Request, t0)
	return rec
}

// TestChargedClaimIsOneTransactionAndALostOneReadsNothingBack holds the cost of a claim with
// limits: one TransactWriteItems of three items (the claim, the wallet's and the asset's
// counters) where the claim without limits is one PutItem, and a lost claim is the one
// transaction and, since minidyn leaves the holder out of the cancellation reason as it does of
// PutItem's ConditionalCheckFailedException (DynamoDB returns it: ALL_OLD), one consistent read.
func TestChargedClaimIsOneTransactionAndALostOneReadsNothingBack(t *testing.T) {
	f := minidynFixture(t)
	ctx := context.Background()
	limits := transfer.Limits{"USDC": {WalletDaily: 100 * transfer.StroopsPerUnit, AssetDaily: 1000 * transfer.StroopsPerUnit}}
	rec := chargedClaim("charged-cost", "owner-a", limits)
	if _, won, err := f.store.Claim(ctx, rec, t0); err != nil || !won {
		t.Fatalf("Claim: won=%v err=%v", won, err)
	}
	if got := f.counter.Counts(); got["TransactWriteItems"] != 1 || got[dynamotest.TransactItems] != 3 || f.counter.Total() != 1 {
		t.Fatalf("a charged claim made %v, want one TransactWriteItems of 3 items", got)
	}
	if u := f.counter.WriteUnits(); u != 6 {
		t.Fatalf("a charged claim costs %d write units, want 6", u)
	}
	f.counter.Reset()
	held, won, err := f.store.Claim(ctx, chargedClaim("charged-cost", "owner-b", limits), t0)
	if err != nil || won || held.ClaimID != rec.ClaimID {
		t.Fatalf("lost Claim: won=%v err=%v holder %q", won, err, held.ClaimID)
	}
	if c := f.counter.Counts(); c["TransactWriteItems"] != 1 || f.counter.Total() != 2 || c["GetItem"] != 1 {
		t.Fatalf("a lost charged claim made %v, want the one transaction and a read back", c)
	}
	if n, err := f.store.Counter(ctx, rec.Charges[1].Counter); err != nil || n != rec.Request.Stroops {
		t.Fatalf("asset counter = %d, %v; want one charge", n, err)
	}
}

// TestChargedClaimWithoutTransactionsIsRefused: a client without TransactWriteItems cannot keep a
// limit, so a charged claim writes nothing and fails.
func TestChargedClaimWithoutTransactionsIsRefused(t *testing.T) {
	client, _ := dynamotest.Minidyn(t)
	table := dynamotest.NewStore(t, client).Table()
	s := dynamo.New(withoutTransactions{client}, table)
	rec := chargedClaim("no-transactions", "owner-a", transfer.Limits{"USDC": {AssetDaily: 100 * transfer.StroopsPerUnit}})
	if _, _, err := s.Claim(context.Background(), rec, t0); !errors.Is(err, dynamo.ErrNoTransactions) {
		t.Fatalf("Claim = %v, want ErrNoTransactions", err)
	}
	if _, err := s.Get(context.Background(), rec.StoreKey); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the refused claim left an item: %v", err)
	}
}

// withoutTransactions hides every method but dynamo.Client's.
type withoutTransactions struct{ dynamo.Client }
