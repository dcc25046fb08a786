package stellar

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// fakeLedgerHorizon is a Horizon whose latest ledger, seq, holds txs in application order: GET
// /ledgers?order=desc lists it (its counts those of txs), GET /ledgers/{seq}/transactions pages
// them (cursor: the index of the last record read). pages counts the pages asked for.
func fakeLedgerHorizon(t *testing.T, seq int32, txs []xdr.TransactionEnvelope) (*HorizonLedger, *atomic.Int32) {
	return fakeLedgersHorizon(t, []fakeLedger{{seq: seq, txs: txs}})
}

// fakeLedger is one closed ledger of fakeLedgersHorizon; missing answers its transactions
// not_found (an instance that has not ingested it).
type fakeLedger struct {
	seq       int32
	txs       []xdr.TransactionEnvelope
	missing   bool
	maxTxSize int32 // max_tx_set_size; 0: pubnet's 1,000
}

// fakeLedgersHorizon is fakeLedgerHorizon with several ledgers, newest first.
func fakeLedgersHorizon(t *testing.T, ledgers []fakeLedger) (*HorizonLedger, *atomic.Int32) {
	t.Helper()
	b64 := map[int32][]string{}
	for _, l := range ledgers {
		for _, e := range l.txs {
			s, err := xdr.MarshalBase64(e)
			if err != nil {
				t.Fatal(err)
			}
			b64[l.seq] = append(b64[l.seq], s)
		}
	}
	var pages atomic.Int32
	txsPath := regexp.MustCompile(`^/ledgers/([0-9]+)/transactions$`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		w.Header().Set("Content-Type", "application/hal+json")
		if req.URL.Path == "/ledgers" {
			limit, _ := strconv.Atoi(req.URL.Query().Get("limit"))
			var page hProtocol.LedgersPage
			for i, l := range ledgers {
				if i == limit {
					break
				}
				failed, size := int32(0), l.maxTxSize
				if size == 0 {
					size = 1_000
				}
				page.Embedded.Records = append(page.Embedded.Records, hProtocol.Ledger{Sequence: l.seq, SuccessfulTransactionCount: int32(len(l.txs)),
					FailedTransactionCount: &failed, BaseFee: 100, BaseReserve: 5_000_000, MaxTxSetSize: size})
			}
			_ = json.NewEncoder(w).Encode(page)
			return
		}
		m := txsPath.FindStringSubmatch(req.URL.Path)
		var l *fakeLedger
		for i := range ledgers {
			if m != nil && strconv.Itoa(int(ledgers[i].seq)) == m[1] && !ledgers[i].missing {
				l = &ledgers[i]
			}
		}
		if l == nil {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"type":"https://stellar.org/horizon-errors/not_found","title":"Resource Missing","status":404}`))
			return
		}
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
		for i := from; i < len(l.txs) && i < from+limit; i++ {
			page.Embedded.Records = append(page.Embedded.Records, hProtocol.Transaction{ID: strconv.Itoa(i), PT: strconv.Itoa(i),
				Hash: strconv.Itoa(i), Ledger: l.seq, Successful: true, EnvelopeXdr: b64[l.seq][i]})
		}
		_ = json.NewEncoder(w).Encode(page)
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

// Behind a load balancer, GET /ledgers can come from an instance a ledger ahead of the one that
// answers GET /ledgers/{seq}/transactions, which then answers not_found for the newest ledger
// (horizon_fees.go). Once Horizon has served the resource, that is no reason to judge nothing:
// the ledger before, which closed while the envelope waited too, shows another party's payment
// above the queued rate, and the replacement is allowed; with the ledger before showing only
// payments below it, none is.
func TestReplaceOverHorizonReadsTheLedgerBeforeOneNotYetIngested(t *testing.T) {
	other := keypair.MustRandom().Address()
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	fee := keypair.MustRandom().Address()
	for _, tc := range []struct {
		name    string
		before  uint32
		replace bool
	}{{"outbid the ledger before", 1_000, true}, {"not outbid the ledger before", 300, false}} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := fakeLedgersHorizon(t, []fakeLedger{
				{seq: 501, txs: []xdr.TransactionEnvelope{plainTx(t, other, 5_000, 1)}, missing: true},
				{seq: 500, txs: []xdr.TransactionEnvelope{plainTx(t, other, 100, 1), plainTx(t, other, tc.before, 1)}},
			})
			// The fee stats read some ledger's transactions before: Horizon serves the resource.
			l.rates.markServed()
			err := l.outbidByOthers(context.Background(), horizonChain{l}, shape, fee, map[string]bool{})
			switch {
			case tc.replace && err != nil:
				t.Fatalf("outbidByOthers: %v, want a replacement", err)
			case !tc.replace && !errors.Is(err, transfer.ErrNoReplacement):
				t.Fatalf("outbidByOthers: %v, want ErrNoReplacement", err)
			}
		})
	}
}

// A closed ledger's bids are read once per process: every envelope judged while it is the latest
// asks for them, and over Horizon each read is up to 7 requests against its rate limit, in the
// congested ledgers that make envelopes wait. A second judgment in the same ledger reads no page.
func TestReplaceReadsALedgersBidsOnceOverHorizon(t *testing.T) {
	other := keypair.MustRandom().Address()
	var txs []xdr.TransactionEnvelope
	for range 450 {
		txs = append(txs, plainTx(t, other, 100, 1))
	}
	l, pages := fakeLedgerHorizon(t, 500, txs)
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	fee := keypair.MustRandom().Address()
	for i := range 3 {
		err := l.outbidByOthers(context.Background(), horizonChain{l}, shape, fee, map[string]bool{})
		if !errors.Is(err, transfer.ErrNoReplacement) {
			t.Fatalf("judgment %d: %v, want ErrNoReplacement", i+1, err)
		}
	}
	if got := pages.Load(); got != 3 {
		t.Fatalf("%d pages read for 3 judgments of one ledger of 450 transactions, want 3", got)
	}
}

// The validators may vote a larger classic lane (max_tx_set_size): a ledger of 2,000 classic
// operations fills 10 pages of 200 before its Soroban phase. Another party's payment above the
// queued rate on its tenth page still allows the replacement: the page bound follows the lane.
func TestReplaceOverHorizonReadsAVotedLargerClassicLane(t *testing.T) {
	other := keypair.MustRandom().Address()
	var txs []xdr.TransactionEnvelope
	for i := range 2_000 {
		fee := uint32(100)
		if i == 1_950 {
			fee = 1_000
		}
		txs = append(txs, plainTx(t, other, fee, 1))
	}
	l, pages := fakeLedgersHorizon(t, []fakeLedger{{seq: 500, txs: txs, maxTxSize: 2_000}})
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	if err := l.outbidByOthers(context.Background(), horizonChain{l}, shape, keypair.MustRandom().Address(), map[string]bool{}); err != nil {
		t.Fatalf("outbidByOthers: %v, want a replacement (another party bid 1,000 per slot against 400)", err)
	}
	if got := pages.Load(); got != 10 {
		t.Fatalf("%d pages read, want the 10 of the classic phase", got)
	}
}

// A Horizon that has served GET /ledgers/{seq}/transactions and then answers not_found for both
// the newest ledger and the one before judges nothing this ledger: a plain error (judged again at
// the next), neither ErrNoReplacement, which would say who outbid the envelope, nor the surge
// rule's fallback, which is for a Horizon that never served the resource.
func TestReplaceOverHorizonServedThenNotFoundIsAPlainError(t *testing.T) {
	other := keypair.MustRandom().Address()
	l, _ := fakeLedgersHorizon(t, []fakeLedger{
		{seq: 501, txs: []xdr.TransactionEnvelope{plainTx(t, other, 5_000, 1)}, missing: true},
		{seq: 500, txs: []xdr.TransactionEnvelope{plainTx(t, other, 5_000, 1)}, missing: true},
	})
	l.rates.markServed()
	shape := envelopeShape{lane: laneClassic, ops: 1, slots: 2, fee: 400 * 2}
	err := l.outbidByOthers(context.Background(), horizonChain{l}, shape, keypair.MustRandom().Address(), map[string]bool{})
	if err == nil || errors.Is(err, transfer.ErrNoReplacement) {
		t.Fatalf("outbidByOthers: %v, want a plain error", err)
	}
}
