package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// putBatch writes keys as async items of one batch, parked in_doubt, as a submitter leaves them
// when its budget ends. The batch item holds a second outer hash (a replacement by fee) that the
// keys' items do not.
func (f *fixture) putBatch(t *testing.T, keys ...string) (transfer.BatchEnvelope, []transfer.Record) {
	t.Helper()
	ctx := context.Background()
	taken := f.takeKeys(t, keys...)
	b := transfer.BatchEnvelope{Version: 1, CreatedAt: t0}
	for _, rec := range taken {
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	attachedEnv := transfer.Envelope{InnerHash: hashOf("batch", false), OuterHash: hashOf("batch", true), MaxTime: t0.Unix() + 30, SubmittedLedger: 50, Channel: "GCHAN"}
	b.Envelope = attachedEnv
	b.Envelope.XDR = "AAAA-signed"
	b.Envelope.OuterHashes = []string{hashOf("batch", true), hashOf("bumped", true)}
	if err := f.store.PutBatch(ctx, b); err != nil {
		t.Fatal(err)
	}
	return b, f.attachInDoubt(t, taken, attachedEnv, "TRANSFER_TIMEOUT")
}

// takeKeys claims keys of wallet as a submitter's in_flight takes of async withdrawals.
func (f *fixture) takeKeys(t *testing.T, keys ...string) []transfer.Record {
	t.Helper()
	var taken []transfer.Record
	for _, k := range keys {
		rec := transfer.Record{
			StoreKey: transfer.StoreKey(wallet, k), Status: transfer.StatusInFlight, Fingerprint: "secret-fingerprint", Async: true,
			Request: transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Amount: "12.5", Asset: "USDC", Stroops: 125_000_000},
			ClaimID: "claim-" + k, ClientKey: k, LeaseOwner: "submitter", LeaseExpiresAt: t0.Add(time.Minute), Version: 1, CreatedAt: t0, UpdatedAt: t0,
		}
		if _, won, err := f.store.Claim(context.Background(), rec, t0); err != nil || !won {
			t.Fatalf("claim %s: %v %v", k, won, err)
		}
		taken = append(taken, rec)
	}
	return taken
}

// attachInDoubt attaches taken to env as one batch, each key at its index (one all-or-nothing
// write), then parks each in_doubt with failingCode; it returns the parked items as stored.
func (f *fixture) attachInDoubt(t *testing.T, taken []transfer.Record, env transfer.Envelope, failingCode string) []transfer.Record {
	t.Helper()
	ctx := context.Background()
	var attached []transfer.Record
	for i, rec := range taken {
		attached = append(attached, transfer.BatchAttached(rec, env, transfer.BatchRef{Index: i, Size: len(taken)}, t0))
	}
	if err := transfer.ReplaceAllItems(ctx, f.store, taken, attached); err != nil {
		t.Fatal(err)
	}
	var parked []transfer.Record
	for _, rec := range attached {
		next := transfer.InDoubtRecord(rec, failingCode, t0)
		if err := transfer.ReplaceItem(ctx, f.store, rec, next); err != nil {
			t.Fatal(err)
		}
		got, err := f.store.Get(ctx, rec.StoreKey)
		if err != nil {
			t.Fatal(err)
		}
		parked = append(parked, got)
	}
	return parked
}

// An operator's resolve of a batched key: the hash must be one of the batch item's (a later outer
// hash included), the key's own item must be the batch's operation at its index, and the ledger
// must show it; it settles that key alone.
func TestResolveABatchedKey(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-res1", "batch-res2")
	resolve := func(key, hash string) string {
		return `{"action":"resolve","storeKey":"` + key + `","transactionHash":"` + hash + `","operator":"alice"}`
	}
	refused(t, f, resolve(recs[0].StoreKey, hashOf("other", false)), reconcile.CodeHashMismatch)
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupSuccess, Hash: b.Envelope.InnerHash, Ledger: 77}
	got := mustDo(t, f, resolve(recs[1].StoreKey, hashOf("bumped", true)))
	if got["resolution"] != "replayable" || got["transactionHash"] != b.Envelope.InnerHash {
		t.Fatalf("resolve = %v", got)
	}
	stored, err := f.store.Get(context.Background(), recs[1].StoreKey)
	if err != nil || stored.Status != transfer.StatusReplayable || stored.Batch == nil || stored.Batch.Index != 1 {
		t.Fatalf("resolved key %+v, %v", stored, err)
	}
	if other, _ := f.store.Get(context.Background(), recs[0].StoreKey); other.Status != transfer.StatusInDoubt {
		t.Fatalf("the other key was written: %s", other.Status)
	}
}

// A batched key whose item names an operation its batch gives another key is never resolved.
func TestResolveABatchedKeyNotInItsBatch(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-mis1", "batch-mis2")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupSuccess, Hash: b.Envelope.InnerHash, Ledger: 77}
	rec := recs[0]
	next := rec
	next.Batch = &transfer.BatchRef{Index: 1, Size: 2}
	next.Version++
	if err := f.store.Replace(context.Background(), next, transfer.Expect(rec)); err != nil {
		t.Fatal(err)
	}
	refused(t, f, `{"action":"resolve","storeKey":"`+rec.StoreKey+`","transactionHash":"`+b.Envelope.InnerHash+`","operator":"alice"}`, reconcile.CodeHashMismatch)
}

// An operator's discard of a batched key whose batch failed on a neighbour's operation: the key is
// queued again (nothing moved), not rejected and not released.
func TestDiscardABatchedKeyWhoseNeighbourFailed(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-dis1", "batch-dis2")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash, Ledger: 77,
		ResultCodes: []string{"tx_failed", "op_success", "op_no_trust"}}
	got := mustDo(t, f, `{"action":"resolve","storeKey":"`+recs[0].StoreKey+`","discard":true,"operator":"alice","reason":"batch"}`)
	if got["resolution"] != "requeued" {
		t.Fatalf("discard = %v", got)
	}
	if stored, err := f.store.Get(context.Background(), recs[0].StoreKey); err != nil || stored.Status != transfer.StatusQueued || stored.Batch != nil {
		t.Fatalf("discarded key %+v, %v", stored, err)
	}
}

// opLedger is the fixture's ledger that also reads a landed transaction's operations.
type opLedger struct {
	*ledger
	payments map[string][]transfer.ChainPayment // by hash, in operation order
}

func (l opLedger) PaymentAt(_ context.Context, hash string, index int) (transfer.ChainPayment, error) {
	ps := l.payments[hash]
	if index < 0 || index >= len(ps) {
		return transfer.ChainPayment{}, fmt.Errorf("no payment: %w", transfer.ErrNotFound)
	}
	return ps[index], nil
}

// With a ledger that reads operations, a resolve of a batched key checks on chain that the
// transaction's operation at the key's index pays its request; one that pays anything else (the
// operations in another order than the batch item says) is refused.
func TestResolveABatchedKeyChecksItsOperationOnChain(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-chk1", "batch-chk2")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupSuccess, Hash: b.Envelope.InnerHash, Ledger: 77}
	mine := transfer.ChainPayment{Hash: b.Envelope.InnerHash, Direction: transfer.DirectionOut, Counterparty: wallet, Asset: "USDC", Stroops: 125_000_000}
	other := mine
	other.Stroops = 1
	ol := opLedger{ledger: f.ledger, payments: map[string][]transfer.ChainPayment{b.Envelope.InnerHash: {mine, other}}}
	svc := reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: ol, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: f.log})
	resolve := func(key string) (any, error) {
		return svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: key,
			TransactionHash: b.Envelope.InnerHash, Operator: "alice"})
	}
	var re *reconcile.Error
	if _, err := resolve(recs[1].StoreKey); !errors.As(err, &re) || re.Code != reconcile.CodeHashMismatch {
		t.Fatalf("resolve of a key whose operation on chain pays another amount: %v", err)
	}
	if got, _ := f.store.Get(context.Background(), recs[1].StoreKey); got.Status != transfer.StatusInDoubt {
		t.Fatalf("the refused key was written: %s", got.Status)
	}
	// The same account and amount, but to a muxed address of it, or into the vault: not this
	// transfer's payment.
	muxed := mine
	muxed.Muxed, muxed.MuxedID = "MA7QYNF7SOWQ3GLR2BGMZEHXAVIRZA4KVWLTJJFC7MGXUA74P7UJUAAAAAAAAAAAACJUQ", "9"
	inbound := mine
	inbound.Direction = transfer.DirectionIn
	for name, p := range map[string]transfer.ChainPayment{"muxed": muxed, "inbound": inbound} {
		ol.payments[b.Envelope.InnerHash][0] = p
		if _, err := resolve(recs[0].StoreKey); !errors.As(err, &re) || re.Code != reconcile.CodeHashMismatch {
			t.Fatalf("resolve of a key whose operation on chain is %s: %v", name, err)
		}
	}
	ol.payments[b.Envelope.InnerHash][0] = mine
	ans, err := resolve(recs[0].StoreKey)
	if err != nil || ans.(*reconcile.ResolveAnswer).Resolution != "replayable" {
		t.Fatalf("resolve of a key whose operation pays it: %+v, %v", ans, err)
	}
	// The answer and a get name the key's operation in the batch's transaction: 0, not "none".
	if i := ans.(*reconcile.ResolveAnswer).OperationIndex; i == nil || *i != 0 {
		t.Fatalf("resolve's operationIndex %v, want 0", i)
	}
	got, err := svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionGet, StoreKey: recs[0].StoreKey})
	if err != nil {
		t.Fatal(err)
	}
	if i := got.(*reconcile.GetAnswer).Item.OperationIndex; i == nil || *i != 0 {
		t.Fatalf("get's operationIndex %v, want 0", i)
	}
}

// A batch item keeps no TTL while any of its keys is in doubt (transfer.ReleaseBatch): an
// operator's resolve of one key leaves it so; the resolve of the last starts it (now + KeyTTL +
// transfer.BatchKeep).
func TestResolvingTheLastKeyOfABatchStartsItsTTL(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-ttl1", "batch-ttl2")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupSuccess, Hash: b.Envelope.InnerHash, Ledger: 77}
	resolve := func(key string) string {
		return `{"action":"resolve","storeKey":"` + key + `","transactionHash":"` + b.Envelope.InnerHash + `","operator":"alice"}`
	}
	expiry := func() int64 {
		got, err := f.store.GetBatch(context.Background(), b.Envelope.InnerHash)
		if err != nil {
			t.Fatal(err)
		}
		return got.ExpiresAt
	}
	mustDo(t, f, resolve(recs[0].StoreKey))
	if e := expiry(); e != 0 {
		t.Fatalf("batch item with a key still in doubt expires at %d, want never", e)
	}
	mustDo(t, f, resolve(recs[1].StoreKey))
	if e, want := expiry(), t0.Add(time.Hour+transfer.BatchKeep).Unix(); e != want {
		t.Fatalf("batch item once its last key is resolved expires at %d, want %d", e, want)
	}
}

// A resolve of a batched key whose batch FAILED is refused with what the sweep will do for that
// key: queue it again when its own operation did not fail (a neighbour's did), store the
// rejection when it did.
func TestResolveABatchedKeyOfAFailedBatchSaysWhatItsOperationMeans(t *testing.T) {
	f := newFixture(t)
	b, recs := f.putBatch(t, "batch-fail1", "batch-fail2")
	f.ledger.landed[b.Envelope.InnerHash] = transfer.Lookup{Status: transfer.LookupFailed, Hash: b.Envelope.InnerHash, Ledger: 77,
		ResultCodes: []string{"tx_failed", "op_success", "op_no_trust"}}
	for i, want := range []string{"queues it again", "store the rejection"} {
		_, err := f.svc.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: recs[i].StoreKey,
			TransactionHash: b.Envelope.InnerHash, Operator: "alice"})
		var re *reconcile.Error
		if !errors.As(err, &re) || re.Code != reconcile.CodeTransactionFailed || !strings.Contains(re.Message, want) {
			t.Fatalf("resolve of operation %d: %v; want %s saying it %s", i, err, reconcile.CodeTransactionFailed, want)
		}
	}
}
