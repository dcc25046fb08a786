package stellarsim_test

import (
	"encoding/hex"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/network"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// history lands, in ledger 2, a payment and a fee bump, then closes empty ledgers 3 and 4. It
// returns the payment's hash and the fee bump's outer and inner hashes.
func (e *env) history() (pay, outer, inner string) {
	e.t.Helper()
	a, b, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	tx := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	in := e.build(b, []txnbuild.Operation{payment(a.Address(), txnbuild.NativeAsset{}, "2")}, 0, 0)
	fb, _ := txnbuild.NewFeeBumpTransaction(txnbuild.FeeBumpTransactionParams{Inner: in, FeeAccount: payer.Address(), BaseFee: 200})
	fb, _ = fb.Sign(e.n.Passphrase(), payer)
	pay, inner = hashOf(e.t, tx, e.n.Passphrase()), hashOf(e.t, in, e.n.Passphrase())
	outer, _ = fb.HashHex(e.n.Passphrase())
	for _, s := range []string{b64(e.t, tx), b64(e.t, fb)} {
		if r := e.send(s); r.Status != "PENDING" {
			e.t.Fatalf("send: %+v", r)
		}
	}
	for range 3 {
		e.clock.Advance(5 * time.Second)
		e.n.CloseLedger()
	}
	return pay, outer, inner
}

// appliedOrder is the envelope hashes (the outer one of a fee bump, as stellar-rpc names a
// transaction) in the order the network applied them. Core shuffles a ledger's transactions
// (txset.go, applyOrder), so a test reads the order from the network rather than assuming one.
func (e *env) appliedOrder() []string {
	e.t.Helper()
	var out []string
	for _, a := range e.n.Applied() {
		h := a.Hash
		if a.FeeBumpHash != "" {
			h = a.FeeBumpHash
		}
		out = append(out, h)
	}
	return out
}

// sameSet reports whether got holds exactly the hashes of want, in any order.
func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]int{}
	for _, h := range want {
		seen[h]++
	}
	for _, h := range got {
		if seen[h]--; seen[h] < 0 {
			return false
		}
	}
	return true
}

func TestGetLatestLedgerSendsBareHeaderAndCloseMeta(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	pay, outer, _ := e.history()
	order := e.appliedOrder()
	if !sameSet(order, pay, outer) {
		t.Fatalf("applied %v, want %s and %s", order, pay, outer)
	}
	ll, err := e.rpc.GetLatestLedger(e.ctx)
	if err != nil || ll.Sequence != 4 || ll.ProtocolVersion != 26 {
		t.Fatalf("%v %+v", err, ll)
	}
	// stellar-rpc sends the bare LedgerHeader here (the JS SDK decodes it as one).
	var hdr xdr.LedgerHeader
	if err := xdr.SafeUnmarshalBase64(ll.LedgerHeader, &hdr); err != nil || uint32(hdr.LedgerSeq) != ll.Sequence ||
		int64(hdr.ScpValue.CloseTime) != ll.LedgerCloseTime || hdr.LedgerVersion != 26 || hdr.BaseFee != 100 {
		t.Fatalf("header %v %+v", err, hdr)
	}
	var lcm xdr.LedgerCloseMeta
	if err := xdr.SafeUnmarshalBase64(ll.LedgerMetadata, &lcm); err != nil || lcm.V != 2 || lcm.LedgerSequence() != 4 ||
		lcm.LedgerHash().HexString() != ll.Hash || lcm.CountTransactions() != 0 {
		t.Fatalf("meta %v %+v", err, lcm)
	}
	// Ledger 2's meta, through getLedgers, carries both transactions in the order they applied.
	page, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{StartLedger: 2, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	if err != nil || len(page.Ledgers) != 1 {
		t.Fatalf("%v %+v", err, page)
	}
	if err := xdr.SafeUnmarshalBase64(page.Ledgers[0].LedgerMetadata, &lcm); err != nil || lcm.CountTransactions() != 2 ||
		lcm.TransactionHash(0).HexString() != order[0] || lcm.TransactionHash(1).HexString() != order[1] {
		t.Fatalf("ledger 2 meta %v", err)
	}
}

func TestGetLedgersPagesLikeStellarRPC(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	e.history()
	page, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{StartLedger: 1, Pagination: &protocol.LedgerPaginationOptions{Limit: 3}})
	if err != nil || len(page.Ledgers) != 3 || page.Cursor != "3" || page.LatestLedger != 4 || page.OldestLedger != 1 ||
		page.LatestLedgerCloseTime == 0 || page.OldestLedgerCloseTime == 0 {
		t.Fatalf("%v %+v", err, page)
	}
	for i, l := range page.Ledgers {
		// getLedgers' headerXdr is the LedgerHeaderHistoryEntry, whose hash is the ledger's.
		var h xdr.LedgerHeaderHistoryEntry
		if err := xdr.SafeUnmarshalBase64(l.LedgerHeader, &h); err != nil || l.Sequence != uint32(i+1) ||
			uint32(h.Header.LedgerSeq) != l.Sequence || h.Hash.HexString() != l.Hash || int64(h.Header.ScpValue.CloseTime) != l.LedgerCloseTime {
			t.Fatalf("ledger %d: %v %+v", i, err, l)
		}
		if i > 0 && h.Header.PreviousLedgerHash.HexString() != page.Ledgers[i-1].Hash {
			t.Fatalf("ledger %d: previous hash %s, want %s", l.Sequence, h.Header.PreviousLedgerHash.HexString(), page.Ledgers[i-1].Hash)
		}
	}
	next, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{Pagination: &protocol.LedgerPaginationOptions{Cursor: page.Cursor}})
	if err != nil || len(next.Ledgers) != 1 || next.Ledgers[0].Sequence != 4 || next.Cursor != "4" {
		t.Fatalf("next page: %v %+v", err, next)
	}
	for name, req := range map[string]protocol.GetLedgersRequest{
		"start past the latest": {StartLedger: 5},
		"start and cursor":      {StartLedger: 1, Pagination: &protocol.LedgerPaginationOptions{Cursor: "1"}},
		"limit over 200":        {StartLedger: 1, Pagination: &protocol.LedgerPaginationOptions{Limit: 201}},
		"cursor at the latest":  {Pagination: &protocol.LedgerPaginationOptions{Cursor: "4"}},
		"cursor not a number":   {Pagination: &protocol.LedgerPaginationOptions{Cursor: "x"}},
	} {
		if _, err := e.rpc.GetLedgers(e.ctx, req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestGetTransactionsPagesInApplicationOrder(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	pay, outer, inner := e.history()
	order := e.appliedOrder()
	if !sameSet(order, pay, outer) {
		t.Fatalf("applied %v, want %s and %s", order, pay, outer)
	}
	all, err := e.rpc.GetTransactions(e.ctx, protocol.GetTransactionsRequest{StartLedger: 1})
	if err != nil || len(all.Transactions) != 2 || all.LatestLedger != 4 || all.OldestLedger != 1 {
		t.Fatalf("%v %+v", err, all)
	}
	for i, tx := range all.Transactions {
		if tx.TransactionHash != order[i] || tx.ApplicationOrder != int32(i+1) || tx.Status != "SUCCESS" || tx.Ledger != 2 ||
			tx.LedgerCloseTime == 0 || tx.EnvelopeXDR == "" || tx.ResultXDR == "" {
			t.Fatalf("transaction %d: %+v, want %s", i, tx, order[i])
		}
		// The envelope's own hash, the outer one for a fee bump, as stellar-rpc answers.
		if fb := tx.TransactionHash == outer; tx.FeeBump != fb {
			t.Fatalf("transaction %d: feeBump %v, want %v (payment %s, fee bump %s, inner %s)", i, tx.FeeBump, fb, pay, outer, inner)
		}
	}
	// The cursor after the last transaction is the TOID of the last ledger looked at.
	if want := "17179869185"; all.Cursor != want { // toid(4, 0, 1)
		t.Fatalf("cursor %s, want %s", all.Cursor, want)
	}
	// One a page: the cursor walks the transactions, then past the latest ledger.
	var hashes []string
	req := protocol.GetTransactionsRequest{StartLedger: 1, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}}
	for range 3 {
		p, err := e.rpc.GetTransactions(e.ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range p.Transactions {
			hashes = append(hashes, tx.TransactionHash)
		}
		req = protocol.GetTransactionsRequest{Pagination: &protocol.LedgerPaginationOptions{Cursor: p.Cursor, Limit: 1}}
	}
	if len(hashes) != 2 || hashes[0] != order[0] || hashes[1] != order[1] {
		t.Fatalf("paged %v", hashes)
	}
	if _, err := e.rpc.GetTransactions(e.ctx, protocol.GetTransactionsRequest{StartLedger: 9}); err == nil {
		t.Fatal("a start past the latest ledger: no error")
	}
}

// The ledger close meta is consistent with itself, as go-stellar-sdk's ingest reader (what
// stellar-rpc's getTransactions reads ledgers with) needs it: each result in txProcessing names an
// envelope of the transaction set by its hash, and carries meta v4.
func TestLedgerCloseMetaMatchesResultsToEnvelopes(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	pay, outer, _ := e.history()
	page, err := e.rpc.GetLedgers(e.ctx, protocol.GetLedgersRequest{StartLedger: 2, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	var lcm xdr.LedgerCloseMeta
	if err := xdr.SafeUnmarshalBase64(page.Ledgers[0].LedgerMetadata, &lcm); err != nil {
		t.Fatal(err)
	}
	envs := map[string]bool{}
	for _, env := range lcm.TransactionEnvelopes() {
		h, err := network.HashTransactionInEnvelope(env, e.n.Passphrase())
		if err != nil {
			t.Fatal(err)
		}
		envs[hex.EncodeToString(h[:])] = true
	}
	if len(envs) != 2 || lcm.CountTransactions() != 2 {
		t.Fatalf("%d envelopes, %d results", len(envs), lcm.CountTransactions())
	}
	// Results come in apply order, which core shuffles (txset.go, applyOrder): compare as a set.
	seen := map[string]bool{}
	for i := range 2 {
		h := lcm.TransactionHash(i).HexString()
		seen[h] = true
		if !envs[h] || lcm.TransactionResultPair(i).Result.Successful() != true || lcm.TxApplyProcessing(i).V != 4 {
			t.Fatalf("result %d: %s (in the set: %v)", i, h, envs[h])
		}
	}
	if !seen[pay] || !seen[outer] {
		t.Fatalf("results %v, want %s and %s", seen, pay, outer)
	}
	// The classic phase lists the envelopes as stellar-core writes a component (TxSetFrame.cpp,
	// sequentialPhaseToXdr): whole, the fee bump with its fee source and fee, in full-hash order
	// (TxSetUtils::sortTxsInHashOrder), with the lane's base fee.
	comps := *lcm.V2.TxSet.V1TxSet.Phases[0].V0Components
	if len(comps) != 1 || comps[0].TxsMaybeDiscountedFee == nil || comps[0].TxsMaybeDiscountedFee.BaseFee == nil ||
		*comps[0].TxsMaybeDiscountedFee.BaseFee != 100 {
		t.Fatalf("classic phase %+v, want one component at the base fee", comps)
	}
	var hashes []string
	for _, env := range comps[0].TxsMaybeDiscountedFee.Txs {
		h, err := network.HashTransactionInEnvelope(env, e.n.Passphrase())
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, hex.EncodeToString(h[:]))
		if hashes[len(hashes)-1] == outer && (!env.IsFeeBump() || env.FeeBumpFee() <= 0) {
			t.Fatalf("the fee bump %s listed as %s", outer, env.Type)
		}
	}
	if len(hashes) != 2 || hashes[0] > hashes[1] {
		t.Fatalf("classic envelopes %v, want both in full-hash order", hashes)
	}
}

func TestGetVersionInfo(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	v, err := e.rpc.GetVersionInfo(e.ctx)
	if err != nil || v.ProtocolVersion != 26 || v.Version == "" || v.CaptiveCoreVersion == "" {
		t.Fatalf("%v %+v", err, v)
	}
}

// A classic transaction's meta is TransactionMeta v4 without sorobanMeta, as core 23 writes it.
func TestClassicMetaIsV4(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	pay, _, _ := e.history()
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(e.getTx(pay).ResultMetaXDR, &meta); err != nil || meta.V != 4 ||
		len(meta.V4.Operations) != 1 || meta.V4.SorobanMeta != nil {
		t.Fatalf("%v %+v", err, meta)
	}
}

// The friendbot answer carries the created account in its meta, where the JS SDK's
// rpc.Server.requestAirdrop reads the new account's sequence number.
func TestFriendbotMetaCreatesTheAccount(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	kp := keypair.MustRandom()
	var out struct {
		ResultMetaXDR string `json:"result_meta_xdr"`
	}
	if code, _ := e.hDo("POST", "/friendbot/?addr="+kp.Address(), nil, &out); code != 200 {
		t.Fatalf("POST /friendbot/: %d", code)
	}
	var meta xdr.TransactionMeta
	if err := xdr.SafeUnmarshalBase64(out.ResultMetaXDR, &meta); err != nil || meta.V != 4 || len(meta.V4.Operations) != 1 {
		t.Fatalf("%v %+v", err, meta)
	}
	ch := meta.V4.Operations[0].Changes
	if len(ch) != 1 || ch[0].Type != xdr.LedgerEntryChangeTypeLedgerEntryCreated || ch[0].Created.Data.Account == nil {
		t.Fatalf("changes %+v", ch)
	}
	acct := ch[0].Created.Data.Account
	seq, _ := e.n.Account(kp.Address())
	if acct.AccountId.Address() != kp.Address() || int64(acct.SeqNum) != seq.Sequence || int64(acct.Balance) != 10_000*xlm {
		t.Fatalf("created %+v, account %+v", acct, seq)
	}
}
