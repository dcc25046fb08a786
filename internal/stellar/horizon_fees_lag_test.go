package stellar_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"

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
	ledgerTxs := regexp.MustCompile(`^/ledgers/[0-9]+/transactions$`)
	var asked, feeStats atomic.Int32
	front := func(horizonURL string) string {
		u, err := url.Parse(horizonURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			switch {
			case ledgerTxs.MatchString(req.URL.Path):
				// The first ledger asked is the newest one GET /ledgers listed: the instance that
				// answers this request has not ingested it yet.
				if asked.Add(1) == 1 {
					w.Header().Set("Content-Type", "application/problem+json")
					w.WriteHeader(http.StatusNotFound)
					_, _ = w.Write([]byte(`{"type":"https://stellar.org/horizon-errors/not_found","title":"Resource Missing","status":404,` +
						`"detail":"The resource at the url requested was not found.  This usually occurs for one of two reasons:  The url requested is not valid, or no data in our database could be found with the parameters provided."}`))
					return
				}
			case req.URL.Path == "/fee_stats":
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
	if asked.Load() < 2 {
		t.Fatalf("%d ledger transaction pages asked: the lagging instance's answer was the only one", asked.Load())
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
