package stellar_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The classic lane's market over Horizon while others' contract calls fill the Soroban lane.
// Horizon's /fee_stats puts every transaction of its last 5 ledgers into one distribution, a
// Soroban call at its whole fee charged (resource fee included) over its one operation (stellar/go
// services/horizon/internal/db2/history, Q.FeeStats), so on a network where contract calls are a
// large share of the transactions its high percentiles are resource fees, tens of thousands of
// stroops, while payments clear at the base fee. The service over Horizon bids the classic lane
// from classic transactions only.

// hznSorobanRig is a Horizon payment rig (channels fee-bumped by the fee account when channels >
// 0) whose network runs vault contracts, after 8 ledgers of others' contract calls, 6 a ledger,
// bidding 200 to 2,000 stroops of inclusion fee on top of their resource fees, and of classic
// payments from others given by classic (nothing when its PerLedger is 0).
func hznSorobanRig(t *testing.T, o payRigOpts, classic stellarsim.Congestion) *payRig {
	t.Helper()
	o.backend, o.feePercentile, o.vaultHost = "horizon", 90, true
	r := newPayRig(t, o)
	p := classic
	p.SorobanPerLedger, p.SorobanFeeMin, p.SorobanFeeMax = 6, 200, 2_000
	if p.Seed == 0 {
		p.Seed = 31
	}
	if err := r.net.SetCongestion(p); err != nil {
		t.Fatal(err)
	}
	r.ledgers(8)
	return r
}

// horizonFeeStatsP90 reads Horizon's /fee_stats fee_charged p90 through horizonclient.
func horizonFeeStatsP90(t *testing.T, r *payRig) int64 {
	t.Helper()
	fs, err := (&horizonclient.Client{HorizonURL: r.net.URL()}).FeeStats()
	if err != nil {
		t.Fatal(err)
	}
	return fs.FeeCharged.P90
}

// A quiet classic lane beside a busy Soroban lane: the payment bids and is charged the base fee,
// never FEE_ABOVE_CAP, although /fee_stats' fee_charged p90 (contract calls' resource fees) is
// above the cap. With the vault as the source and with fee-bumped channels.
func TestHorizonSorobanTrafficLeavesTheClassicBidAtTheBaseFee(t *testing.T) {
	for _, channels := range []int{0, 2} {
		t.Run(map[int]string{0: "vault", 2: "channels"}[channels], func(t *testing.T) {
			const maxFee = 2_000
			r := hznSorobanRig(t, payRigOpts{channels: channels, classicOps: 20, maxFee: maxFee}, stellarsim.Congestion{})
			p90 := horizonFeeStatsP90(t, r)
			if p90 <= maxFee {
				t.Fatalf("/fee_stats fee_charged p90 %d stroops: want contract calls' fees above the cap %d (the trap this test sets)", p90, maxFee)
			}
			start := r.clock.Now()
			out, err := r.transfer("quiet-classic-1", 5)
			if err != nil {
				t.Fatalf("transfer: %v (the classic lane is quiet; /fee_stats p90 %d)", err, p90)
			}
			if took := r.clock.Now().Sub(start); took > transfer.DefaultSettings().Timeout {
				t.Errorf("landed after %v, past the budget", took)
			}
			sent := r.ours()
			if len(sent) == 0 {
				t.Fatal("nothing sent")
			}
			if bid := offered(t, sent[0].EnvelopeXDR); bid != 100 {
				t.Errorf("bid %d stroops per slot, want the base fee 100 (no classic ledger cleared above it; /fee_stats p90 %d)", bid, p90)
			}
			a, ok := r.net.Transaction(out.TransactionHash)
			slots := int64(1 + min(channels, 1))
			if !ok || a.Status != "SUCCESS" || a.FeeCharged != 100*slots {
				t.Errorf("%s: %+v, %v; want SUCCESS charged the base fee for %d slots", out.TransactionHash, a, ok, slots)
			}
		})
	}
}

// The same quiet classic lane does not read as surge priced: a fee-bumped payment waiting in the
// queue is not replaced (a replacement would pay 10x for nothing), whatever /fee_stats' p99 says.
func TestHorizonSorobanTrafficIsNoClassicSurge(t *testing.T) {
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: 10_000_000}, stellarsim.Congestion{})
	ctx := context.Background()
	env, err := r.ledger.Prepare(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: "1", Asset: "USDC", Stroops: unit},
		transfer.Terms{MaxTime: r.clock.Now().Add(time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.ledger.(interface {
		Done(context.Context, transfer.Envelope)
	}).Done(ctx, env)
	_, err = r.ledger.(transfer.Replacer).Replace(ctx, env)
	if !errors.Is(err, transfer.ErrNoReplacement) {
		t.Fatalf("Replace: %v, want ErrNoReplacement: the classic lane is not surge priced", err)
	}
}

// A surge-priced classic lane beside the Soroban traffic: others bid 200 to 2,000 stroops for 30
// classic operations a ledger into 20. The bid is the classic clearing rates' p90 over Horizon's
// last 5 ledgers (nearest rank: their highest), what those ledgers charged payments, not the
// contract calls' fees; the payment lands charged its ledger's clearing fee.
func TestHorizonSorobanTrafficBidsTheClassicClearingRate(t *testing.T) {
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: 10_000_000}, stellarsim.Congestion{Seed: 11, PerLedger: 30, FeeMin: 200, FeeMax: 2_000})
	page, err := (&horizonclient.Client{HorizonURL: r.net.URL()}).Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, l := range page.Embedded.Records {
		c, _, ok := r.net.ClearingFee(uint32(l.Sequence))
		if !ok {
			t.Fatalf("no clearing fee for ledger %d", l.Sequence)
		}
		want = max(want, c)
	}
	p90 := horizonFeeStatsP90(t, r)
	if want <= 100 || p90 <= want {
		t.Fatalf("highest classic clearing fee %d, /fee_stats p90 %d: want a surge below the contract calls' fees", want, p90)
	}
	out, err := r.transfer("surged-classic-1", 5)
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	sent := r.ours()
	if bid := offered(t, sent[0].EnvelopeXDR); bid != want {
		t.Errorf("bid %d stroops per slot, want %d: the highest classic clearing fee of Horizon's last 5 ledgers (/fee_stats p90 %d)", bid, want, p90)
	}
	a, ok := r.net.Transaction(out.TransactionHash)
	if !ok || a.Status != "SUCCESS" {
		t.Fatalf("%s: %+v, %v", out.TransactionHash, a, ok)
	}
	if classic, _, _ := r.net.ClearingFee(a.Ledger); a.FeeCharged != 2*classic {
		t.Errorf("charged %d in ledger %d, want its clearing fee %d for 2 slots", a.FeeCharged, a.Ledger, classic)
	}
}

// A Horizon that does not serve GET /ledgers/{seq}/transactions (a front answers it not_found,
// as Horizon answers an unknown resource) is read from /fee_stats as before: the bid never falls
// below what /fee_stats shows, so it can only overbid, never underbid the classic market.
func TestHorizonWithoutLedgerTransactionsFallsBackToFeeStats(t *testing.T) {
	var refused atomic.Int32
	front := withoutLedgerTransactions(t, &refused)
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: 10_000_000, horizonFront: front}, stellarsim.Congestion{})
	p90 := horizonFeeStatsP90(t, r)
	if _, err := r.transfer("old-horizon-1", 5); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if refused.Load() == 0 {
		t.Fatal("the service never asked for a ledger's transactions")
	}
	if bid := offered(t, r.ours()[0].EnvelopeXDR); bid != p90 {
		t.Errorf("bid %d stroops per slot, want /fee_stats fee_charged p90 %d (the fallback)", bid, p90)
	}
}

// The classic market's cost in Horizon requests: a cold read is GET /ledgers plus one
// GET /ledgers/{seq}/transactions per ledger of the 5 that holds transactions; within
// FeeStatsTTL a second envelope reads nothing; after a ledger closes only the new ledgers are
// read (a closed ledger's rate is kept). /fee_stats is never asked.
func TestHorizonClassicMarketRequests(t *testing.T) {
	ledgerTxs := regexp.MustCompile(`^/ledgers/[0-9]+/transactions$`)
	var perLedger, feeStats atomic.Int32
	front := func(horizonURL string) string {
		u, err := url.Parse(horizonURL)
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			switch {
			case ledgerTxs.MatchString(req.URL.Path):
				perLedger.Add(1)
			case req.URL.Path == "/fee_stats":
				feeStats.Add(1)
			}
			proxy.ServeHTTP(w, req)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	r := hznSorobanRig(t, payRigOpts{channels: 2, classicOps: 20, maxFee: 10_000_000, horizonFront: front}, stellarsim.Congestion{})
	ctx := context.Background()
	done := r.ledger.(interface {
		Done(context.Context, transfer.Envelope)
	}).Done
	prepare := func() {
		t.Helper()
		env, err := r.ledger.Prepare(ctx, transfer.Request{OperationType: transfer.Withdraw, WalletAddress: r.wallet, Amount: "1", Asset: "USDC", Stroops: unit},
			transfer.Terms{MaxTime: r.clock.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		done(ctx, env)
	}
	prepare()
	if n := perLedger.Load(); n < 1 || n > 5 {
		t.Errorf("cold read: %d ledger transaction pages, want 1 to 5", n)
	}
	cold := perLedger.Load()
	prepare()
	if n := perLedger.Load() - cold; n != 0 {
		t.Errorf("a second envelope within FeeStatsTTL read %d ledger transaction pages, want 0", n)
	}
	r.ledgers(1)
	prepare()
	if n := perLedger.Load() - cold; n < 1 || n > 2 {
		t.Errorf("after one more ledger: %d ledger transaction pages, want the new ledgers' (1 or 2)", n)
	}
	if n := feeStats.Load(); n != 0 {
		t.Errorf("GET /fee_stats asked %d times", n)
	}
}
