package stellar

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// fakeLedgerHorizon is a Horizon whose latest ledger, seq, holds txs in application order: GET
// /ledgers?order=desc lists it (its counts those of txs), GET /ledgers/{seq}/transactions pages
// them (cursor: the index of the last record read). pages counts the pages asked for.
func fakeLedgerHorizon(t *testing.T, seq int32, txs []xdr.TransactionEnvelope) (*HorizonLedger, *atomic.Int32) {
	t.Helper()
	b64 := make([]string, len(txs))
	for i, e := range txs {
		s, err := xdr.MarshalBase64(e)
		if err != nil {
			t.Fatal(err)
		}
		b64[i] = s
	}
	var pages atomic.Int32
	txsPath := "/ledgers/" + strconv.Itoa(int(seq)) + "/transactions"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/hal+json")
		switch req.URL.Path {
		case "/ledgers":
			var page hProtocol.LedgersPage
			failed := int32(0)
			page.Embedded.Records = []hProtocol.Ledger{{Sequence: seq, SuccessfulTransactionCount: int32(len(txs)), FailedTransactionCount: &failed,
				BaseFee: 100, BaseReserve: 5_000_000, MaxTxSetSize: 1_000}}
			_ = json.NewEncoder(w).Encode(page)
		case txsPath:
			pages.Add(1)
			from := 0
			if c := req.URL.Query().Get("cursor"); c != "" {
				n, err := strconv.Atoi(c)
				if err != nil {
					http.Error(w, "cursor", http.StatusBadRequest)
					return
				}
				from = n + 1
			}
			limit, _ := strconv.Atoi(req.URL.Query().Get("limit"))
			if limit <= 0 || limit > 200 {
				limit = 10
			}
			var page hProtocol.TransactionsPage
			for i := from; i < len(txs) && i < from+limit; i++ {
				page.Embedded.Records = append(page.Embedded.Records, hProtocol.Transaction{ID: strconv.Itoa(i), PT: strconv.Itoa(i),
					Hash: strconv.Itoa(i), Ledger: seq, Successful: true, EnvelopeXdr: b64[i]})
			}
			_ = json.NewEncoder(w).Encode(page)
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)
	return horizonLedgerAt(t, srv.URL, testPassphrase), &pages
}

// A busy pubnet ledger holds up to 1,000 classic operations and, since protocol 23, up to 2,000
// Soroban transactions (stellarsim.PubnetLaneLimits): 3,000 records, 15 pages of Horizon's 200.
// Horizon lists them in application order, the classic phase first (horizon_fees.go), so the
// classic lane's bids are all read from the first pages: another party's payment above the
// queued envelope's rate among them allows the replacement, however many contract calls follow
// and however few pages may be read.
func TestReplaceOverHorizonReadsTheClassicPhaseOfABusyLedger(t *testing.T) {
	other := keypair.MustRandom().Address()
	var txs []xdr.TransactionEnvelope
	for i := range 1_000 {
		fee := uint32(100)
		if i == 700 {
			fee = 1_000
		}
		txs = append(txs, plainTx(t, other, fee, 1))
	}
	soroban := plainTx(t, other, 1_000_000, 1)
	soroban.V1.Tx.Operations[0].Body = xdr.OperationBody{Type: xdr.OperationTypeRestoreFootprint, RestoreFootprintOp: &xdr.RestoreFootprintOp{}}
	for range 2_000 {
		txs = append(txs, soroban)
	}
	l, pages := fakeLedgerHorizon(t, 500, txs)
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	fee := keypair.MustRandom().Address()
	if err := l.outbidByOthers(context.Background(), horizonChain{l}, shape, fee, map[string]bool{}); err != nil {
		t.Fatalf("outbidByOthers: %v, want a replacement (another party bid 1,000 per slot against 400)", err)
	}
	if got := pages.Load(); got > horizonBidPages {
		t.Fatalf("%d pages read, want at most %d", got, horizonBidPages)
	}
}
