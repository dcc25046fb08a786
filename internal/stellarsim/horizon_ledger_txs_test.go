package stellarsim_test

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/txnbuild"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// GET /ledgers/{seq}/transactions through horizonclient: a ledger's transactions in application
// order, a fee bump under its outer hash with fee_charged, paging by cursor, a ledger outside
// history not_found.
func TestHorizonLedgerTransactions(t *testing.T) {
	e := newEnv(t, stellarsim.Options{})
	hc := e.horizon()
	a, b, c, payer := e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm), e.funded(10*xlm)
	plain := e.build(a, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	inner := e.build(c, []txnbuild.Operation{payment(b.Address(), txnbuild.NativeAsset{}, "1")}, 0, 0)
	fb := e.feeBump(inner, payer, 300)
	for _, env := range []string{b64(t, plain), b64(t, fb)} {
		if r, err := hc.AsyncSubmitTransactionXDR(env); err != nil || r.TxStatus != "PENDING" {
			t.Fatalf("%v %+v", err, r)
		}
	}
	l := e.n.CloseLedger()
	page, err := hc.Transactions(horizonclient.TransactionRequest{ForLedger: uint(l.Sequence), IncludeFailed: true})
	if err != nil || len(page.Embedded.Records) != 2 {
		t.Fatalf("%v %+v", err, page)
	}
	outer, _ := fb.HashHex(e.n.Passphrase())
	var hashes []string
	var tokens []int64
	for _, tx := range page.Embedded.Records {
		if tx.Ledger != int32(l.Sequence) {
			t.Errorf("%s in ledger %d, asked %d", tx.Hash, tx.Ledger, l.Sequence)
		}
		hashes = append(hashes, tx.Hash)
		pt, _ := strconv.ParseInt(tx.PT, 10, 64)
		tokens = append(tokens, pt)
		if tx.Hash == outer && (tx.FeeCharged != 100*2 || tx.InnerTransaction == nil || tx.EnvelopeXdr != b64(t, fb)) {
			t.Errorf("fee bump %+v: want fee_charged 200 (the base fee for 2 slots), its inner transaction and the fee-bump envelope", tx)
		}
	}
	if !slices.Contains(hashes, outer) || !slices.Contains(hashes, hashOf(t, plain, e.n.Passphrase())) {
		t.Errorf("hashes %v, want the payment's and the fee bump's outer hash %s", hashes, outer)
	}
	if !slices.IsSorted(tokens) {
		t.Errorf("paging tokens %v, want application order", tokens)
	}
	first, err := hc.Transactions(horizonclient.TransactionRequest{ForLedger: uint(l.Sequence), Limit: 1})
	if err != nil || len(first.Embedded.Records) != 1 || first.Embedded.Records[0].Hash != hashes[0] {
		t.Fatalf("%v %+v", err, first)
	}
	next, err := hc.Transactions(horizonclient.TransactionRequest{ForLedger: uint(l.Sequence), Limit: 1, Cursor: first.Embedded.Records[0].PT})
	if err != nil || len(next.Embedded.Records) != 1 || next.Embedded.Records[0].Hash != hashes[1] {
		t.Fatalf("%v %+v", err, next)
	}
	if _, err := hc.Transactions(horizonclient.TransactionRequest{ForLedger: uint(l.Sequence) + 5}); !horizonclient.IsNotFoundError(err) {
		t.Errorf("a ledger not closed yet: %v, want not_found", err)
	}
}
