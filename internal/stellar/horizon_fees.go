package stellar

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
)

// The classic lane's market over Horizon.
//
// Horizon's GET /fee_stats is no classic market: it puts every transaction of its last 5
// ledgers into one distribution, a Soroban transaction at its whole fee charged, resource fee
// included, over its one operation (stellar/go services/horizon/internal/db2/history/
// operation.go, feeStatsQueryTemplate and Q.FeeStats). On a network where contract calls are a
// large share of the transactions, its high percentiles are resource fees, tens of thousands of
// stroops, while payments clear at the base fee: bid from it, the service would answer
// FEE_ABOVE_CAP while the classic lane is quiet, reserve that much against the fee account, and
// take every wait for a surge and replace the envelope.
//
// So the classic lane is read from the ledgers themselves. stellar-core charges every
// transaction of a surge-pricing lane the lane's base fee per operation slot, a fee bump counting
// one more (src/herder/TxSetFrame.cpp, computeLaneBaseFee and the inclusion fee map after it;
// charged by TransactionFrame::getFee as min(inclusion fee, baseFee x slots)), and that base fee
// is the network's unless the lane left a valid transaction out, then the lowest rate taken. A
// DEX lane (MAX_DEX_TX_OPERATIONS_IN_TX_SET, unset on pubnet) gets a base fee at least the
// generic lane's there, so the lowest rate charged to any classic transaction of a ledger is the
// rate a payment cleared at: the ledger's classic clearing rate. stellar-core applies the classic
// phase before the Soroban phase (TxSetFrame.cpp, ApplicableTxSetFrame::getPhasesInApplyOrder,
// phases in TxSetPhase order) and Horizon lists a ledger's transactions by TOID, that is in
// application order (stellar/go services/horizon/internal/db2/history/transaction.go,
// TransactionsQ.ForLedger), so the first page of GET /ledgers/{seq}/transactions holds the
// ledger's first classic transactions, if it has any; a page without one is a ledger whose
// classic lane took nothing, and cleared at the base fee.
//
// The distribution the bid and the surge judgment read is that of the clearing rates of the
// last horizonFeeLedgers ledgers (the window /fee_stats uses), one figure a ledger,
// nearest-rank percentiles as Horizon's percentile_disc: with 5 ledgers, p90 and p99 are the
// highest of the five, p50 the middle one. Every classic transaction of a ledger paid the same
// rate, so the per-transaction distribution the other backend publishes is these rates weighted
// by each ledger's transactions; a ledger each gives the surge ledgers (full ones) no less than
// their share at the top percentiles used here. surgeShown then says whether any of those
// ledgers cleared above the base fee.
//
// Cost: GET /ledgers?order=desc&limit=5, plus one GET /ledgers/{seq}/transactions?limit=10 for
// each of those ledgers that holds transactions and was not read before (a closed ledger's
// charges never change, so its rate is kept while it is in the window). Read once per
// FeeStatsTTL per process: 6 requests cold, then about 2 per read (one new ledger a read), shared
// by every transfer the process prepares in that time, against 1 (GET /fee_stats) before.
//
// not_found for one ledger's transactions is no sign that Horizon lacks the route: every
// supported release serves it, and answers not_found for a ledger its database does not hold yet
// (stellar/stellar-horizon internal/db2/history/transaction.go, TransactionsQ.ForLedger reads the
// ledger's row first; sql.ErrNoRows is problem.NotFound, internal/httpx/server.go). Behind a load
// balancer (horizon.stellar.org) GET /ledgers can come from an instance a ledger ahead of the one
// answering GET /ledgers/{seq}/transactions. Such a ledger is left out of that read (the window
// is then the one the lagging instance's own /fee_stats would use) and asked again at the next;
// the window is read oldest first, the ledgers every instance holds. A Horizon that has never
// answered a page of that resource to this process and answers not_found is taken for one that
// does not serve it (an empty ledger, whose rate needs no request, proves nothing), and read as
// before, from /fee_stats: that never bids below the classic market (its figures include it), at
// the price above.

// horizonFeeLedgers is how many of the latest ledgers the classic market is read from: Horizon's
// own /fee_stats window (Q.FeeStats: the last 5 ledgers).
const horizonFeeLedgers = 5

// horizonLedgerSample is how many of a ledger's first transactions are read for its classic
// clearing rate: any classic one tells it, and they come first.
const horizonLedgerSample = 10

// errNoLedgerTransactions is Horizon answering not_found to GET /ledgers/{seq}/transactions for
// a ledger it just listed: the answering instance has not ingested it yet, or (for every ledger
// of the window) Horizon does not serve the resource.
var errNoLedgerTransactions = errors.New("stellar: Horizon answered not_found for a ledger's transactions")

// classicRates keeps the classic clearing rate, stroops per operation slot, of the ledgers read.
type classicRates struct {
	mu   sync.Mutex
	rate map[uint32]int64
	// served is whether Horizon has answered a page of GET /ledgers/{seq}/transactions: after
	// that, not_found for a ledger is that ledger not ingested by the instance that answered.
	served bool
}

func (r *classicRates) markServed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.served = true
}

func (r *classicRates) isServed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served
}

func (r *classicRates) get(seq uint32) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.rate[seq]
	return v, ok
}

// keep records seq's rate and forgets the ledgers before oldest.
func (r *classicRates) keep(seq uint32, rate int64, oldest uint32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rate == nil {
		r.rate = map[uint32]int64{}
	}
	r.rate[seq] = rate
	for s := range r.rate {
		if s < oldest {
			delete(r.rate, s)
		}
	}
}

// feeStats reads the classic clearing rates of Horizon's last horizonFeeLedgers ledgers (see
// above) into the classic lane's distribution. HorizonLedger builds classic payments only (the
// service calls contracts over Stellar RPC), so the Soroban lane holds the same figures.
//
// Errors: a plain error when the ledgers or a ledger's transactions cannot be read, or Horizon
// lists no ledger; a ledger whose transactions are not_found is left out once Horizon has served
// that resource, and before that (or when every ledger is left out) Horizon is taken for one
// without GET /ledgers/{seq}/transactions and read from /fee_stats instead
// (feeStatsAllTransactions).
func (h horizonChain) feeStats(ctx context.Context) (marketFees, error) {
	page, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.LedgersPage, error) {
		return c.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: horizonFeeLedgers})
	})
	if err != nil {
		return marketFees{}, fmt.Errorf("stellar: GET /ledgers: %w", err)
	}
	recs := page.Embedded.Records
	if len(recs) == 0 || recs[0].Sequence <= 0 {
		return marketFees{}, fmt.Errorf("stellar: GET /ledgers returned no ledger")
	}
	h.l.reserve.observe(int64(recs[0].BaseReserve), h.l.clock.Now())
	oldest := uint32(max(recs[len(recs)-1].Sequence, 0))
	rates := make([]int64, 0, len(recs))
	// Oldest first: the ledger a lagging instance is most likely to hold is asked first, so a
	// cold read learns whether Horizon serves the resource from it.
	for _, rec := range slices.Backward(recs) {
		seq := uint32(max(rec.Sequence, 0))
		rate, ok := h.l.rates.get(seq)
		if !ok {
			if rate, err = h.classicClearingRate(ctx, rec); err != nil {
				if !errors.Is(err, errNoLedgerTransactions) {
					return marketFees{}, err
				}
				if !h.l.rates.isServed() {
					// Never served: Horizon does not serve the resource. An empty ledger's
					// rate, known without asking, proves nothing of it.
					return h.feeStatsAllTransactions(ctx)
				}
				// Not ingested by the instance that answered (see above): left out of this
				// read, not kept, asked again at the next one.
				continue
			}
			h.l.rates.keep(seq, rate, oldest)
		}
		rates = append(rates, rate)
	}
	if len(rates) == 0 {
		return h.feeStatsAllTransactions(ctx)
	}
	d := nearestRank(rates)
	return marketFees{d, d}, nil
}

// classicClearingRate is the lowest fee charged per operation slot to a classic transaction of
// ledger rec among its first horizonLedgerSample transactions, failed ones included (charged
// alike), or rec's base fee when it has none.
func (h horizonChain) classicClearingRate(ctx context.Context, rec hProtocol.Ledger) (int64, error) {
	base := int64(rec.BaseFee)
	if base <= 0 {
		base = h.l.baseFeeStroops
	}
	txs := int64(rec.SuccessfulTransactionCount)
	if rec.FailedTransactionCount != nil {
		txs += int64(*rec.FailedTransactionCount)
	}
	if txs == 0 {
		return base, nil
	}
	page, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.TransactionsPage, error) {
		return c.Transactions(horizonclient.TransactionRequest{ForLedger: uint(rec.Sequence), Limit: horizonLedgerSample, IncludeFailed: true})
	})
	if horizonclient.IsNotFoundError(err) {
		return 0, fmt.Errorf("stellar: GET /ledgers/%d/transactions: %w", rec.Sequence, errNoLedgerTransactions)
	}
	if err != nil {
		return 0, fmt.Errorf("stellar: GET /ledgers/%d/transactions: %w", rec.Sequence, err)
	}
	h.l.rates.markServed()
	lowest := int64(-1)
	for _, tx := range page.Embedded.Records {
		shape, err := envelopeFee(tx.EnvelopeXdr)
		if err != nil || shape.lane != laneClassic || shape.slots <= 0 {
			continue
		}
		if r := tx.FeeCharged / shape.slots; lowest < 0 || r < lowest {
			lowest = r
		}
	}
	if lowest < 0 {
		return base, nil
	}
	return lowest, nil
}

// nearestRank is the distribution of rates at feePercentiles, nearest rank
// (rates[ceil(p x n / 100) - 1] sorted), as Horizon's percentile_disc; all zeros for none.
func nearestRank(rates []int64) feeDistribution {
	var d feeDistribution
	if len(rates) == 0 {
		return d
	}
	sorted := append([]int64(nil), rates...)
	slices.Sort(sorted)
	n := len(sorted)
	for i, p := range feePercentiles {
		d[i] = sorted[(p*n+99)/100-1]
	}
	return d
}

// feeStatsAllTransactions reads GET /fee_stats: fee_charged per operation (a fee bump counting
// one more) over every transaction of the last 5 ledgers, Soroban ones at their whole fee. It is
// the fallback for a Horizon without GET /ledgers/{seq}/transactions: it never reads below the
// classic market, but contract calls can raise it far above.
func (h horizonChain) feeStatsAllTransactions(ctx context.Context) (marketFees, error) {
	fs, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.FeeStats, error) { return c.FeeStats() })
	if err != nil {
		return marketFees{}, fmt.Errorf("stellar: GET /fee_stats: %w", err)
	}
	d := fs.FeeCharged
	all := newFeeDistribution(d.P10, d.P20, d.P30, d.P40, d.P50, d.P60, d.P70, d.P80, d.P90, d.P95, d.P99)
	return marketFees{all, all}, nil
}

// surgeShown reports whether the classic lane's distribution shows a surge: its p99, the
// highest clearing rate of the last horizonFeeLedgers ledgers, above the base fee. A ledger's
// classic clearing rate is above the base fee only when stellar-core surge priced its classic
// lane (computeLaneBaseFee), so this is exact for the ledgers read, fee bumps included (their
// charge is divided by their slots). Read from the /fee_stats fallback, the figure mixes in
// Soroban transactions' resource fees and can show a surge the classic lane never had (a
// replacement it prompts is charged the clearing rate all the same, but the fee account
// reserves 10x).
func (h horizonChain) surgeShown(_ context.Context, _ feeLane, fees feeDistribution, base int64) (bool, error) {
	return fees.at(99) > base, nil
}
