package stellar_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// A Horizon behind a load balancer whose instances ingest at their own pace: GET /ledgers answered
// by an instance at ledger N, then GET /ledgers/N/transactions by one still at N-1. Real Horizon
// answers that not_found: TransactionsQ.ForLedger reads the ledger's row first
// (stellar/stellar-horizon internal/db2/history/transaction.go, ForLedger: LedgerBySequence) and
// a missing row is sql.ErrNoRows, rendered as problem.NotFound (internal/httpx/server.go,
// problem.RegisterError(sql.ErrNoRows, problem.NotFound)). Every supported Horizon serves the
// route, so that answer says the ledger is not ingested there yet, not that the route is missing:
// the classic market is still read from the ledgers' classic transactions, never from /fee_stats,
// whose contract-call resource fees would answer FEE_ABOVE_CAP while the classic lane is quiet.
func TestHorizonLedgerNotYetIngestedIsNoFallbackToFeeStats(t *testing.T) {
	ledgerTxs := regexp.MustCompile(`^/ledgers/([0-9]+)/transactions$`)
	var newest atomic.Int64 // the newest ledger GET /ledgers?order=desc last listed
	var asked, lagged, feeStats atomic.Int32
	front := func(horizonURL string) string {
		u, err := url.Parse(horizonURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		proxy.ModifyResponse = func(resp *http.Response) error {
			if resp.Request.URL.Path != "/ledgers" || resp.StatusCode != http.StatusOK {
				return nil
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			var page hProtocol.LedgersPage
			if json.Unmarshal(body, &page) == nil && resp.Request.URL.Query().Get("order") == "desc" && len(page.Embedded.Records) > 0 {
				newest.Store(int64(page.Embedded.Records[0].Sequence))
			}
			return nil
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if m := ledgerTxs.FindStringSubmatch(req.URL.Path); m != nil {
				asked.Add(1)
				// The instance that answers has not ingested the newest ledger GET /ledgers
				// just listed (once: the balancer's next pick has).
				if seq, _ := strconv.ParseInt(m[1], 10, 64); seq == newest.Load() && lagged.Add(1) == 1 {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"type":"https://stellar.org/horizon-errors/not_found","title":"Resource Missing","status":404,` +
						`"detail":"The resource at the url requested was not found.  This usually occurs for one of two reasons:  The url requested is not valid, or no data in our database could be found with the parameters provided."}`))
					return
				}
			}
			if req.URL.Path == "/fee_stats" {
				feeStats.Add(1)
			}
			proxy.ServeHTTP(w, req)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	const maxFee = 2_000
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: maxFee, horizonFront: front}, stellarsim.Congestion{})
	p90 := horizonFeeStatsP90(t, r)
	if p90 <= maxFee {
		t.Fatalf("/fee_stats fee_charged p90 %d stroops: want contract calls' fees above the cap %d (the trap this test sets)", p90, maxFee)
	}
	feeStats.Store(0)
	if _, err := r.transfer("lagging-instance-1", 5); err != nil {
		t.Fatalf("transfer: %v (the classic lane is quiet; one instance lagged a ledger; /fee_stats p90 %d)", err, p90)
	}
	if lagged.Load() == 0 || asked.Load() < 2 {
		t.Fatalf("%d ledger transaction pages asked, %d of the newest ledger: the lagging instance was never met", asked.Load(), lagged.Load())
	}
	if n := feeStats.Load(); n != 0 {
		t.Errorf("GET /fee_stats asked %d times: a ledger not yet ingested by one instance made the service bid from contract calls' fees", n)
	}
	if sent := r.ours(); len(sent) == 0 {
		t.Fatal("nothing sent")
	} else if bid := offered(t, sent[0].EnvelopeXDR); bid != 100 {
		t.Errorf("bid %d stroops per slot, want the base fee 100 (no classic ledger cleared above it)", bid)
	}
}

// A Horizon that does not serve GET /ledgers/{seq}/transactions is read from /fee_stats even when
// some ledgers of its window are empty: an empty ledger's rate (the base fee, read without asking
// for its transactions) proves nothing of the resource, and the ledgers whose transactions were
// refused are no lagging instance's. Reading the window from its empty ledgers alone would bid the
// base fee whatever the classic lane cleared at.
func TestHorizonWithoutLedgerTransactionsFallsBackDespiteEmptyLedgers(t *testing.T) {
	var refused atomic.Int32
	front := withoutLedgerTransactions(t, &refused)
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: 10_000_000, horizonFront: front},
		stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000})
	// Two empty ledgers close the window: the three before them hold the surge.
	if err := r.net.SetCongestion(stellarsim.Congestion{}); err != nil {
		t.Fatal(err)
	}
	hc := &horizonclient.Client{HorizonURL: r.net.URL()}
	for empty := 0; empty < 2; {
		r.ledgers(1)
		pg, err := hc.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if l := pg.Embedded.Records[0]; l.SuccessfulTransactionCount+*l.FailedTransactionCount == 0 {
			empty++
		} else if empty > 0 {
			t.Fatalf("ledger %d holds transactions after an empty one", l.Sequence)
		}
	}
	p90 := horizonFeeStatsP90(t, r)
	if p90 <= 100 {
		t.Fatalf("/fee_stats fee_charged p90 %d: want the surge in the window (the trap this test sets)", p90)
	}
	if _, err := r.transfer("old-horizon-empty-1", 5); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if refused.Load() == 0 {
		t.Fatal("the service never asked for a ledger's transactions")
	}
	if bid := offered(t, r.ours()[0].EnvelopeXDR); bid < p90 {
		t.Errorf("bid %d stroops per slot, want at least /fee_stats fee_charged p90 %d (the fallback), not the empty ledgers' base fee", bid, p90)
	}
}

// withoutLedgerTransactions is a horizonFront: a Horizon that does not serve GET
// /ledgers/{seq}/transactions, answering it not_found as Horizon answers an unknown resource
// (counted in refused), and passing every other request to the network's Horizon.
func withoutLedgerTransactions(t *testing.T, refused *atomic.Int32) func(horizonURL string) string {
	ledgerTxs := regexp.MustCompile(`^/ledgers/[0-9]+/transactions$`)
	return func(horizonURL string) string {
		u, err := url.Parse(horizonURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if ledgerTxs.MatchString(req.URL.Path) {
				refused.Add(1)
				w.Header().Set("Content-Type", "application/problem+json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = w.Write([]byte(`{"type":"https://stellar.org/horizon-errors/not_found","title":"Resource Missing","status":404}`))
				return
			}
			proxy.ServeHTTP(w, req)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
}
