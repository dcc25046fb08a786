package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// batchEnv is a batch's envelope as its keys' items hold it: maxTime at 1,000 s, submitted at
// ledger 100, fee-bumped.
var batchEnv = transfer.Envelope{InnerHash: strings.Repeat("aa", 32), OuterHash: strings.Repeat("bb", 32), MaxTime: 1000, SubmittedLedger: 100}

// Each key of a batch is judged by its own operation's result (doc.go, "Batches").
func TestJudgeOperationJudgesEachKeyByItsOwnOperation(t *testing.T) {
	failed := func(codes ...string) transfer.Lookup {
		return transfer.Lookup{Status: transfer.LookupFailed, ResultCodes: codes, Ledger: 120}
	}
	dead := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: 130, LatestLedgerCloseTime: time.Unix(1001, 0), OldestLedger: 1}
	pending := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: 110, LatestLedgerCloseTime: time.Unix(999, 0), OldestLedger: 1}
	for _, tc := range []struct {
		name      string
		lk        transfer.Lookup
		index     int
		want      transfer.OperationVerdict
		shortfall string
	}{
		{"landed", transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 120}, 3, transfer.VerdictLanded, ""},
		{"its own destination has no trustline", failed("tx_failed", "op_success", "op_no_trust"), 1, transfer.VerdictRejected, ""},
		{"a neighbour's destination has no trustline", failed("tx_failed", "op_success", "op_no_trust"), 0, transfer.VerdictRequeue, ""},
		{"its own line is full", failed("tx_failed", "op_line_full", "op_success"), 0, transfer.VerdictRejected, ""},
		{"its own destination does not exist", failed("tx_failed", "op_no_destination"), 0, transfer.VerdictRejected, ""},
		{"its own trustline is not authorized", failed("tx_failed", "op_success", "op_not_authorized"), 1, transfer.VerdictRejected, ""},
		// The vault ran short on a later operation: every key is requeued and the batch pages.
		{"the vault ran short on its own operation", failed("tx_failed", "op_success", "op_underfunded"), 1, transfer.VerdictRequeue, transfer.CodeVaultUnderfunded},
		{"the vault ran short on a neighbour's", failed("tx_failed", "op_success", "op_underfunded"), 0, transfer.VerdictRequeue, transfer.CodeVaultUnderfunded},
		{"one key's destination and the vault both failed", failed("tx_failed", "op_no_trust", "op_underfunded"), 0, transfer.VerdictRejected, transfer.CodeVaultUnderfunded},
		{"the fee account could not pay: no operation results", failed("tx_insufficient_balance"), 0, transfer.VerdictRequeue, transfer.CodeFeeAccountUnderfunded},
		{"no result for its operation", failed("tx_failed", "op_no_trust"), 1, transfer.VerdictRequeue, ""},
		{"proven dead", dead, 0, transfer.VerdictRequeue, ""},
		{"pending", pending, 0, transfer.VerdictUndecided, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, short := transfer.JudgeOperation(batchEnv, tc.lk, tc.index)
			if got != tc.want || short != tc.shortfall {
				t.Fatalf("JudgeOperation(%v, operation %d) = %s, %q; want %s, %q", tc.lk.ResultCodes, tc.index, got, short, tc.want, tc.shortfall)
			}
		})
	}
}

func TestDestinationSideCodes(t *testing.T) {
	for code, want := range map[string]bool{"op_no_trust": true, "op_not_authorized": true, "op_line_full": true,
		"op_no_destination": true, "op_underfunded": false, "op_src_no_trust": false, "op_success": false} {
		if got := transfer.DestinationSide(code); got != want {
			t.Errorf("DestinationSide(%q) = %v, want %v", code, got, want)
		}
	}
}

func TestBatchMinTimeIsTheClaimsAndInThePast(t *testing.T) {
	one := transfer.BatchMinTime([]string{"claim-a"})
	if !one.Equal(transfer.ClaimMinTime("claim-a")) {
		t.Fatalf("a batch of one claim: %v, want its claim's %v", one, transfer.ClaimMinTime("claim-a"))
	}
	ab, ba := transfer.BatchMinTime([]string{"claim-a", "claim-b"}), transfer.BatchMinTime([]string{"claim-b", "claim-a"})
	if ab.Equal(ba) || ab.Equal(one) {
		t.Fatalf("batches of other claims or orders share a minTime: %v %v %v", ab, ba, one)
	}
	if limit := time.Date(2004, 1, 1, 0, 0, 0, 0, time.UTC); !ab.Before(limit) || ab.Unix() < 1 {
		t.Fatalf("minTime %v is not in the past", ab)
	}
}

func TestBatchRefIsCheckedBeforeAnyWrite(t *testing.T) {
	env := batchEnv
	base := transfer.Record{StoreKey: "transfer:x", Async: true, Envelope: &env, Batch: &transfer.BatchRef{Index: 0, Size: 2}}
	if err := transfer.CheckBatchRef(base); err != nil {
		t.Fatalf("a well-formed reference: %v", err)
	}
	if err := transfer.CheckBatchRef(transfer.Record{StoreKey: "transfer:y"}); err != nil {
		t.Fatalf("no reference: %v", err)
	}
	for name, mutate := range map[string]func(*transfer.Record){
		"no envelope":       func(r *transfer.Record) { r.Envelope = nil },
		"synchronous":       func(r *transfer.Record) { r.Async = false },
		"index past size":   func(r *transfer.Record) { r.Batch = &transfer.BatchRef{Index: 2, Size: 2} },
		"negative index":    func(r *transfer.Record) { r.Batch = &transfer.BatchRef{Index: -1, Size: 2} },
		"over 100":          func(r *transfer.Record) { r.Batch = &transfer.BatchRef{Index: 0, Size: 101} },
		"an empty batch":    func(r *transfer.Record) { r.Batch = &transfer.BatchRef{} },
		"requeued and kept": func(r *transfer.Record) { r.Envelope = nil; r.Status = transfer.StatusQueued },
	} {
		rec := base
		mutate(&rec)
		if transfer.CheckBatchRef(rec) == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// lossyBatchStore applies ReplaceAll and then loses its answer, once.
type lossyBatchStore struct {
	*transfertest.Store
	lost bool
}

func (s *lossyBatchStore) ReplaceAll(ctx context.Context, writes []transfer.ItemWrite) error {
	err := s.Store.ReplaceAll(ctx, writes)
	if err == nil && !s.lost {
		s.lost = true
		return errors.New("read tcp 127.0.0.1:8000: connection reset by peer")
	}
	return err
}

// ReplaceAllItems recognises its own transaction whose answer was lost, and does not mistake a
// failed condition for one.
func TestReplaceAllItemsRecognisesItsOwnLostTransaction(t *testing.T) {
	ctx := context.Background()
	s := &lossyBatchStore{Store: transfertest.NewStore()}
	var taken, attached []transfer.Record
	for i, key := range []string{"k1", "k2"} {
		rec := transfer.Record{StoreKey: "transfer:" + key, ClaimID: "claim-" + key, Status: transfer.StatusInFlight,
			LeaseOwner: "owner", LeaseExpiresAt: time.Unix(2000, 0), Version: 2, Async: true}
		s.Put(rec)
		taken = append(taken, rec)
		env := batchEnv
		next := rec
		next.Envelope, next.Batch, next.Version = &env, &transfer.BatchRef{Index: i, Size: 2}, 3
		attached = append(attached, next)
	}
	if err := transfer.ReplaceAllItems(ctx, s, taken, attached); err != nil {
		t.Fatalf("a transaction that applied with its answer lost: %v", err)
	}
	for _, rec := range attached {
		if got, _ := s.Item(rec.StoreKey); got.Version != 3 || got.Batch == nil || got.Batch.Index != rec.Batch.Index {
			t.Fatalf("%s after the attach: %+v", rec.StoreKey, got)
		}
	}
	// Written again from the same read, its conditions fail on the items it wrote: that is its own
	// write (a retry the store could not tell from a new request), and it succeeds.
	if err := transfer.ReplaceAllItems(ctx, s, taken, attached); err != nil {
		t.Fatalf("the same transaction again: %v", err)
	}
	// Another writer took the second key over: the transaction fails, names it, writes nothing.
	over := attached[1]
	over.LeaseOwner, over.Version = "owner-takeover", 4
	s.Put(over)
	var requeued []transfer.Record
	for _, rec := range attached {
		requeued = append(requeued, transfer.Requeued(rec, time.Unix(1500, 0)))
	}
	err := transfer.ReplaceAllItems(ctx, s, attached, requeued)
	var bce *transfer.BatchConditionError
	if !errors.As(err, &bce) || len(bce.Failed) != 1 || bce.Failed[0] != "transfer:k2" || !strings.Contains(fmt.Sprint(bce), "transfer:k2") {
		t.Fatalf("a transaction over a key another writer changed: %v, want a BatchConditionError naming transfer:k2", err)
	}
	if got, _ := s.Item("transfer:k1"); got.Status != transfer.StatusInFlight || got.Version != 3 {
		t.Fatalf("the first key was written by a failed transaction: %+v", got)
	}
	if err := transfer.ReplaceAllItems(ctx, s, taken, attached[:1]); err == nil {
		t.Fatal("ReplaceAllItems with more items read than written: accepted")
	}
}

// A refused batch is requeued together while no key was taken over; once one was, the others are
// parked in doubt, never requeued (doc.go, "Batches").
func TestRequeueRefusedRequeuesTogetherOrParksInDoubt(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1500, 0)
	setup := func() (*transfertest.Store, []transfer.Record) {
		s := transfertest.NewStore()
		var held []transfer.Record
		for i, key := range []string{"k1", "k2"} {
			rec := transfer.Record{StoreKey: "transfer:" + key, ClaimID: "claim-" + key, Status: transfer.StatusInFlight,
				LeaseOwner: "owner", LeaseExpiresAt: time.Unix(2000, 0), Version: 2, Async: true}
			s.Put(rec)
			att := transfer.BatchAttached(rec, transfer.Envelope{XDR: "AAAA", InnerHash: batchEnv.InnerHash, MaxTime: 1000}, transfer.BatchRef{Index: i, Size: 2}, now)
			if att.Envelope.XDR != "" || att.Version != 3 || att.Batch.Index != i {
				t.Fatalf("BatchAttached: %+v", att)
			}
			s.Put(att)
			held = append(held, att)
		}
		return s, held
	}
	s, held := setup()
	requeued, err := transfer.RequeueRefused(ctx, s, held, transfer.CodeSubmissionFailed, now)
	if err != nil || !requeued {
		t.Fatalf("RequeueRefused with every key held: %v, %v", requeued, err)
	}
	for _, rec := range held {
		if got, _ := s.Item(rec.StoreKey); got.Status != transfer.StatusQueued || got.Envelope != nil || got.Batch != nil {
			t.Fatalf("%s: %+v, want queued with no envelope or batch", rec.StoreKey, got)
		}
	}
	s, held = setup()
	over := held[0]
	over.LeaseOwner, over.Version = "owner-takeover", over.Version+1
	s.Put(over) // a synchronous caller took the first key over and may send the envelope again
	requeued, err = transfer.RequeueRefused(ctx, s, held, transfer.CodeSubmissionFailed, now)
	if err != nil || requeued {
		t.Fatalf("RequeueRefused after a take-over: %v, %v", requeued, err)
	}
	if got, _ := s.Item("transfer:k2"); got.Status != transfer.StatusInDoubt || got.Envelope == nil || got.Envelope.InnerHash != batchEnv.InnerHash {
		t.Fatalf("the key still held: %+v, want in_doubt naming the batch", got)
	}
	if got, _ := s.Item("transfer:k1"); got.LeaseOwner != "owner-takeover" {
		t.Fatalf("the key taken over was written: %+v", got)
	}
}

func TestBatchEnvelopeValidate(t *testing.T) {
	good := transfer.BatchEnvelope{Envelope: transfer.Envelope{InnerHash: "aa", XDR: "AAAA"}, Version: 1,
		Ops: []transfer.BatchOp{{StoreKey: "transfer:a", ClaimID: "c1"}, {StoreKey: "transfer:b", ClaimID: "c2"}}}
	if err := good.Validate(); err != nil {
		t.Fatalf("a well-formed batch: %v", err)
	}
	if transfer.BatchKey("aa") != "batch:aa" {
		t.Fatalf("BatchKey = %q", transfer.BatchKey("aa"))
	}
	noClaim := good
	noClaim.Ops = []transfer.BatchOp{{StoreKey: "transfer:a"}}
	v0 := good
	v0.Version = 0
	if noClaim.Validate() == nil || v0.Validate() == nil {
		t.Fatal("a batch with an operation of no claim, or of version 0, was accepted")
	}
}

func TestFormBatches(t *testing.T) {
	const (
		g1 = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
		g2 = "GDQNY3PBOJOKYZSRMK2S7LHHGWZIUISD4QORETLMXEWXBI7KFZZMKTL3"
		m1 = "MBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OAAAAAAAAAAAAAJLK" // g1's account, id 9
	)
	item := func(key, wallet, account, asset string, memo bool) transfer.Record {
		req := transfer.Request{OperationType: transfer.Withdraw, WalletAddress: wallet, Account: account, Amount: "1", Asset: asset, Stroops: 10_000_000}
		if memo {
			req.Memo = transfer.Memo{Type: transfer.MemoText, Value: "invoice"}
		}
		return transfer.Record{StoreKey: "transfer:" + key, Request: req, Status: transfer.StatusQueued, Async: true}
	}
	items := []transfer.Record{
		item("a", g1, "", "USDC", false),
		item("b", g2, "", "USDC", false),
		item("c", m1, g1, "USDC", false), // g1's USDC trustline again: the next batch
		item("d", g2, "", "EURC", false), // another asset of g2: the same batch
		item("e", g2, "", "USDC", true),  // a memo: alone
		item("f", g2, "", "SOROBAN", false),
		item("g", g1, "", "EURC", false),
	}
	keys := func(recs []transfer.Record) string {
		var ks []string
		for _, r := range recs {
			ks = append(ks, strings.TrimPrefix(r.StoreKey, "transfer:"))
		}
		return strings.Join(ks, "")
	}
	notSoroban := func(r transfer.Request) bool { return r.Asset != "SOROBAN" }
	batches, alone := transfer.FormBatches(items, 3, notSoroban)
	var got []string
	for _, b := range batches {
		got = append(got, keys(b))
	}
	// a, b, d fill the first batch; c (g1's USDC again) and g start the second.
	if strings.Join(got, "|") != "abd|cg" || keys(alone) != "ef" {
		t.Fatalf("FormBatches(size 3) = %v, alone %q; want [abd cg], alone ef", got, keys(alone))
	}
	batches, alone = transfer.FormBatches(items, 1, notSoroban)
	if len(batches) != 0 || keys(alone) != "abcdefg" {
		t.Fatalf("FormBatches(size 1) = %d batches, alone %q; want none, every item alone", len(batches), keys(alone))
	}
	// A batch of one runs alone; an out-of-range size is 1.
	batches, alone = transfer.FormBatches(items[:1], 100, nil)
	if len(batches) != 0 || keys(alone) != "a" {
		t.Fatalf("a lone item: %d batches, alone %q", len(batches), keys(alone))
	}
	if batches, _ := transfer.FormBatches(items, 101, nil); len(batches) != 0 {
		t.Fatalf("size 101 formed %d batches, want it taken as 1", len(batches))
	}
	batches, alone = transfer.FormBatches(items, 100, nil)
	got = got[:0]
	for _, b := range batches {
		got = append(got, keys(b))
	}
	// c, g1's USDC again, would be a batch of one: it runs alone, after the memo's e.
	if strings.Join(got, "|") != "abdfg" || keys(alone) != "ec" {
		t.Fatalf("FormBatches(size 100, everything batchable) = %v, alone %q", got, keys(alone))
	}
}

// OperationIndexOf names a key's operation only when its answer names the batch's transaction:
// settled by it (paid or rejected), from Batch, or from the result's copy when the image holds
// no Batch (the wallet index); never while in doubt, for a key paid alone, or for a resolve that
// names another transaction.
func TestOperationIndexOfNamesTheBatchsTransactionOnly(t *testing.T) {
	env := batchEnv
	seven := 7
	batched := func(st transfer.Status, hash string) transfer.Record {
		return transfer.Record{Status: st, Async: true, Envelope: &env, Batch: &transfer.BatchRef{Index: 3, Size: 5},
			Result: &transfer.Result{TransactionHash: hash, Ledger: 9}}
	}
	projected := transfer.Record{Status: transfer.StatusReplayable, Result: &transfer.Result{TransactionHash: env.InnerHash, OperationIndex: &seven}}
	alone := transfer.Record{Status: transfer.StatusReplayable, Envelope: &env, Result: &transfer.Result{TransactionHash: env.InnerHash}}
	for _, tc := range []struct {
		name string
		rec  transfer.Record
		want int
		ok   bool
	}{
		{"paid", batched(transfer.StatusReplayable, env.InnerHash), 3, true},
		{"rejected", batched(transfer.StatusRejected, env.InnerHash), 3, true},
		{"in doubt", batched(transfer.StatusInDoubt, env.InnerHash), 0, false},
		{"resolved naming another transaction", batched(transfer.StatusReplayable, strings.Repeat("cc", 32)), 0, false},
		{"no transaction named", batched(transfer.StatusRejected, ""), 0, false},
		{"the wallet index's image", projected, 7, true},
		{"paid alone", alone, 0, false},
	} {
		if got, ok := transfer.OperationIndexOf(tc.rec); got != tc.want || ok != tc.ok {
			t.Errorf("%s: OperationIndexOf = %d, %v; want %d, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}
