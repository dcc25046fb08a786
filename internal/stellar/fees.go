package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// How an envelope's fee is bid. stellar-core fills each ledger per surge-pricing lane (classic
// operations; Soroban transactions) with the highest fee rates (inclusion fee per operation, a fee
// bump counting one operation more: TransactionFrameBase::getNumOperations) and, when a lane left
// a valid transaction out, charges every transaction it took the lowest included rate
// (src/herder/SurgePricingUtils.cpp, TxSetUtils computeLaneBaseFee): a bid is the most an
// envelope pays, not what it pays, so bidding above the clearing rate costs (nearly) nothing.
// A bid below it waits in the queue, is evicted by higher bids or aged out after 4 ledgers
// (TRANSACTION_QUEUE_TIMEOUT_LEDGERS) and banned, and the transfer then waits for its maxTime.
//
// The rate per operation slot is therefore the highest of:
//   - the base fee (BaseFeeStroops);
//   - the lane's recent fees at FEE_PERCENTILE: RPC getFeeStats inclusionFee for classic
//     payments, sorobanInclusionFee for contract calls; over Horizon, the classic clearing
//     rates of its last 5 ledgers (horizon_fees.go);
//   - the fee the network last named for the lane (a txINSUFFICIENT_FEE answer's feeCharged,
//     refusedAsTooLow), for FeeHintTTL;
//   - a floor the caller sets (a replacement by fee passes core's 10x rule here: replace.go);
//   - for a batch (more than one payment) while the lane is surge priced, the lane's p99
//     (batchRate): it needs all its slots in one ledger at once.
//
// MAX_FEE_STROOPS is the most one transfer may pay: an envelope of n payments (a batch) may bid up
// to n x MAX_FEE_STROOPS in all, resource fee included (one transfer: the cap itself), so a batch's
// rate per slot, and its replacement at 10x (replace.go), has the room a single transfer's has.
// When the rate does not fit, the transfer (or every transfer of the batch) is answered
// FEE_ABOVE_CAP at once and nothing is sent: an envelope capped below the market would only sit in
// the queue until it is evicted.
//
// stellar-rpc's classic window divides a fee bump's charge by its inner operations alone
// (cmd/stellar-rpc/internal/feewindow/feewindow.go, FeeWindows.IngestFees: feeCharged /
// len(tx.Envelope.Operations())), where core divides by one more, so a one-payment fee bump
// enters the window at twice its rate; sorobanInclusionFee likewise holds a fee bump's whole
// inclusion fee, over two slots. The figure is used as it is, as a rate per slot: it is at most
// (ops+1)/ops too high, which raises the bid only (charged at the clearing rate all the same),
// never lowers it below what the market pays; the price is that FEE_ABOVE_CAP can answer while
// the true clearing rate is up to half the cap per slot when the window is all one-operation fee
// bumps: give MAX_FEE_STROOPS that headroom. Deflating the figure instead would underbid a window
// of plain transactions by as much, and an underbid is the failure this avoids. Over Horizon the
// rates are read per ledger from its classic transactions, a fee bump's charge over its slots as
// core counts them (horizon_fees.go); Horizon's /fee_stats is not used where that can be read: it
// mixes Soroban transactions in at their whole fee, resource fee included.

// FeeStatsTTL is how long the network's fee statistics are reused: about one ledger, the rate at
// which they change.
const FeeStatsTTL = 5 * time.Second

// FeeHintTTL is how long the fee the network named in a txINSUFFICIENT_FEE answer holds, in
// ledgers (DefaultLedgerInterval each): after TRANSACTION_QUEUE_TIMEOUT_LEDGERS (4) every
// transaction queued when it was named has been included, evicted or aged out, so the queue it
// described is gone; the fee stats have caught up by then.
const FeeHintTTL = 4 * transfer.DefaultLedgerInterval

// maxFeeBoost bounds how far refusals that name no fee raise the rate: at most this many times
// the rate the fee stats call for. MAX_FEE_STROOPS still caps it.
const maxFeeBoost = 16

// feePercentiles are the percentiles both fee stats APIs publish (RPC getFeeStats and Horizon
// /fee_stats: p10 ... p90, p95, p99).
var feePercentiles = [...]int{10, 20, 30, 40, 50, 60, 70, 80, 90, 95, 99}

// validPercentile reports whether p is a percentile both fee stats APIs publish.
func validPercentile(p int) bool { return slices.Contains(feePercentiles[:], p) }

// feeDistribution is one lane's recent fees per operation, in stroops, at feePercentiles.
type feeDistribution [len(feePercentiles)]int64

func newFeeDistribution(p10, p20, p30, p40, p50, p60, p70, p80, p90, p95, p99 int64) feeDistribution {
	return feeDistribution{p10, p20, p30, p40, p50, p60, p70, p80, p90, p95, p99}
}

// at is percentile p (one of feePercentiles; p99 otherwise).
func (d feeDistribution) at(p int) int64 {
	if i := slices.Index(feePercentiles[:], p); i >= 0 {
		return d[i]
	}
	return d[len(d)-1]
}

// feeLane is a surge-pricing lane.
type feeLane int

const (
	laneClassic feeLane = iota
	laneSoroban
	laneCount
)

func (l feeLane) String() string {
	if l == laneSoroban {
		return "Soroban"
	}
	return "classic"
}

// marketFees is what one fee stats read says, per lane.
type marketFees [laneCount]feeDistribution

// feeHint is a rate per operation slot the network named for a lane, and until when it holds.
type feeHint struct {
	rate  int64
	until time.Time
}

// feeCache keeps the last fee stats read and the fee the network last named per lane.
type feeCache struct {
	mu      sync.Mutex
	market  marketFees
	readAt  time.Time
	hasRead bool
	// reading is the read under way, nil when none: envelopes that want the market meanwhile
	// wait for it rather than read again (marketFees).
	reading *feeRead
	hints   [laneCount]feeHint
}

// feeRead is one read of the fee stats under way: done closes when it has answered, err its error.
type feeRead struct {
	done chan struct{}
	err  error
}

// feeReadPoll is how often an envelope waiting for another's read of the fee stats looks whether
// it has ended (awaitRead): a read takes one round trip to Stellar RPC, or up to six to Horizon.
const feeReadPoll = 5 * time.Millisecond

// awaitRead waits until r has ended or ctx is done (then ctx.Err()), sleeping on the injected clock
// in steps of feeReadPoll. It polls rather than receive from r.done because the clock's Sleep is
// the only wait the clock knows of: under virtual time (internal/vclock: the benchmarks and the
// fault campaign) time moves only when every participant sleeps, so a waiter blocked on a channel
// would count as running and hold the clock, and with it the reader's own round trip, still.
func (c *common) awaitRead(ctx context.Context, r *feeRead) error {
	for {
		select {
		case <-r.done:
			return nil
		default:
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := c.clock.Sleep(ctx, feeReadPoll); err != nil {
			return err
		}
	}
}

// feeBid is what an envelope's fee has to cover.
type feeBid struct {
	lane feeLane
	// slots is the operation count, plus one for a fee bump (CAP-15 counts the bump as an
	// operation).
	slots int64
	// resourceFee is a Soroban transaction's declared resource fee, in stroops (0 for classic).
	resourceFee int64
	// atLeast is a rate per slot the bid must reach, 0 for none (a replacement by fee sets
	// core's FEE_MULTIPLIER x the queued rate: replace.go).
	atLeast int64
	// payments is how many transfers the envelope pays (a batch's operations; 0 counts as 1): it
	// may bid up to payments x MAX_FEE_STROOPS in all.
	payments int64
}

// capFor is the most an envelope paying payments transfers may bid in all, in stroops
// (payments x MAX_FEE_STROOPS, payments at least 1), 0 for no cap.
func (c *common) capFor(payments int64) int64 {
	if c.maxFeeStroops <= 0 {
		return 0
	}
	return mulCapped(c.maxFeeStroops, max(payments, 1))
}

// bidRate is the inclusion fee per operation slot an envelope of b offers, in stroops: the
// highest of the base fee, the lane's recent fees at FEE_PERCENTILE, the fee the network last
// named for the lane (FeeHintTTL) and b.atLeast. Nothing is ever lowered to fit the cap.
//
// Errors: *transfer.UnavailableError FEE_ABOVE_CAP (503, retryable, nothing sent) when that rate
// times b.slots plus b.resourceFee exceeds b.payments x MAX_FEE_STROOPS (capFor), its RetryAfter when the figure that
// decided may have moved (the hint's end, else the next fee stats read, at least a ledger); a
// plain error when even the base fee exceeds the cap (a configuration the network can never
// serve) or the fee stats cannot be read and none were read before.
func (c *common) bidRate(ctx context.Context, ch chain, b feeBid) (int64, error) {
	slots := max(b.slots, 1)
	rate, why := c.baseFeeStroops, "the base fee"
	if c.feePercentile > 0 {
		m, err := c.marketFees(ctx, ch)
		if err != nil {
			return 0, err
		}
		if f := m[b.lane].at(c.feePercentile); f > rate {
			rate, why = f, fmt.Sprintf("the %s fee stats' p%d", b.lane, c.feePercentile)
		}
	}
	now := c.clock.Now()
	hint := c.hint(b.lane, now)
	if hint.rate > rate {
		rate, why = hint.rate, "the fee the network named when it last refused a transaction as paying too little"
	}
	if b.atLeast > rate {
		rate, why = b.atLeast, "the replacement's minimum"
	}
	limit := c.capFor(b.payments)
	budget := int64(math.MaxInt64)
	if limit > 0 {
		if budget = (limit - b.resourceFee) / slots; budget < c.baseFeeStroops {
			return 0, fmt.Errorf("stellar: fee %d stroops exceeds %s", c.baseFeeStroops*slots+b.resourceFee, c.capText(b.payments))
		}
	}
	if b.payments > 1 && c.feePercentile > 0 {
		// A batch's raise never makes it FEE_ABOVE_CAP: it stops at the budget.
		f, err := c.batchRate(ctx, ch, b)
		if err != nil {
			return 0, err
		}
		if f = min(f, budget); f > rate {
			rate = f
		}
	}
	if limit <= 0 {
		return rate, nil
	}
	if rate <= budget {
		return rate, nil
	}
	interval := sources.LedgerInterval(c.interval)
	retry := interval
	if hint.rate == rate {
		retry = max(retry, hint.until.Sub(now))
	}
	return 0, &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, RetryAfter: retry.Round(time.Second),
		Detail: fmt.Sprintf("the %s lane needs %d stroops per operation (%s); this transaction would need %d stroops in all, above %s; nothing was submitted",
			b.lane, rate, why, rate*slots+b.resourceFee, c.capText(b.payments))}
}

// capText names the cap of an envelope paying payments transfers: "MAX_FEE_STROOPS 100000" for
// one, "100 x MAX_FEE_STROOPS 100000 (10000000)" for a batch.
func (c *common) capText(payments int64) string {
	if payments <= 1 {
		return fmt.Sprintf("MAX_FEE_STROOPS %d", c.maxFeeStroops)
	}
	return fmt.Sprintf("%d x MAX_FEE_STROOPS %d (%d)", payments, c.maxFeeStroops, c.capFor(payments))
}

// hint is the lane's fee hint if it still holds at now.
func (c *common) hint(lane feeLane, now time.Time) feeHint {
	fc := c.fees
	fc.mu.Lock()
	defer fc.mu.Unlock()
	if h := fc.hints[lane]; now.Before(h.until) {
		return h
	}
	return feeHint{}
}

// refusedAsTooLow learns from an ERROR txINSUFFICIENT_FEE answer to env, whose result is tr:
// the envelopes built after it, for FeeHintTTL, offer at least the rate it names. stellar-core
// puts the full fee the transaction would need in feeCharged when its queue is full
// (TransactionQueue::canAdd after TxQueueLimiter::canAddTx, the inclusion fee from
// computeBetterFee plus the resource fee) or a fee bump offers less than its inner transaction
// (FeeBumpTransactionFrame::commonValidPreSeqNum); the rate is that fee, less the envelope's
// resource fee, over its operation slots, rounded up. An answer that names no more than env
// already offered (core's own fee floor check leaves feeCharged 0) says only "more": the rate
// doubles, up to maxFeeBoost times what the fee stats call for. The refusal proves env dead only
// under the domain's rule (a first send); the fee it names is a fact about the queue either way.
//
// The refusal of an older fee bump of an inner transaction this process has since wrapped at a
// higher fee (a replacement by fee, feeGuard.noteFee) teaches nothing: stellar-core refuses it
// because the replacement is queued for its source, naming 10x the replacement's fee
// (TransactionQueue::canAdd, canReplaceByFee), a price of that source's slot, not the lane's.
func (c *common) refusedAsTooLow(env transfer.Envelope, tr xdr.TransactionResult) {
	shape, err := envelopeFee(env.XDR)
	if err != nil {
		return
	}
	if env.Channel != "" && c.guard.replacedAbove(env.Channel, env.InnerHash, shape.fee) {
		return
	}
	rate := shape.rate()
	named := int64(tr.FeeCharged)
	if tr.Result.Code == xdr.TransactionResultCodeTxInsufficientFee && named > shape.fee {
		rate = ceilDiv(named-shape.resourceFee, shape.slots)
	} else {
		c.fees.mu.Lock()
		market := c.fees.market[shape.lane].at(c.feePercentile)
		c.fees.mu.Unlock()
		rate = min(2*max(rate, 1), maxFeeBoost*max(market, c.baseFeeStroops))
	}
	fc := c.fees
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.hints[shape.lane] = feeHint{rate: rate, until: c.clock.Now().Add(FeeHintTTL)}
}

// envelopeShape is what an envelope's fee covers.
type envelopeShape struct {
	lane        feeLane
	ops         int64 // operations: the transfers it pays
	slots       int64 // operations, plus one for a fee bump
	fee         int64 // the whole fee offered (a fee bump's outer fee), stroops
	resourceFee int64 // declared Soroban resource fee
}

// rate is the inclusion fee per slot the envelope offers.
func (s envelopeShape) rate() int64 { return (s.fee - s.resourceFee) / max(s.slots, 1) }

// envelopeFee reads env's lane, slots and fees from its XDR.
func envelopeFee(b64 string) (envelopeShape, error) {
	var e xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &e); err != nil {
		return envelopeShape{}, err
	}
	var s envelopeShape
	var ext xdr.TransactionExt
	switch e.Type {
	case xdr.EnvelopeTypeEnvelopeTypeTxFeeBump:
		s.fee, s.slots = e.FeeBumpFee(), 1
		ext = e.FeeBump.Tx.InnerTx.V1.Tx.Ext
	case xdr.EnvelopeTypeEnvelopeTypeTx:
		s.fee = int64(e.V1.Tx.Fee)
		ext = e.V1.Tx.Ext
	case xdr.EnvelopeTypeEnvelopeTypeTxV0:
		s.fee = int64(e.V0.Tx.Fee)
	default:
		return envelopeShape{}, fmt.Errorf("stellar: envelope type %s", e.Type)
	}
	ops := e.Operations()
	s.ops = int64(len(ops))
	s.slots += s.ops
	if ext.V == 1 && ext.SorobanData != nil {
		s.resourceFee = int64(ext.SorobanData.ResourceFee)
	}
	if len(ops) == 1 {
		switch ops[0].Body.Type {
		case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
			s.lane = laneSoroban
		}
	}
	return s, nil
}

func ceilDiv(a, b int64) int64 {
	if b <= 0 {
		return a
	}
	return (a + b - 1) / b
}

// marketFees returns the cached fee stats, reading them again after FeeStatsTTL. When a read
// fails it keeps using the last ones it has. One read at a time: the envelopes a process prepares
// at once (a submitter batch) that come while a read is under way wait for it and take its
// answer, since a read costs several requests over Horizon (horizon_fees.go) and would answer
// each of them the same. golang.org/x/sync/singleflight would do the same, but it is not a
// dependency and this is a few lines under the mutex the cache already has.
func (c *common) marketFees(ctx context.Context, ch chain) (marketFees, error) {
	fc := c.fees
	now := c.clock.Now()
	fc.mu.Lock()
	for {
		if fc.hasRead && now.Sub(fc.readAt) < FeeStatsTTL {
			defer fc.mu.Unlock()
			return fc.market, nil
		}
		r := fc.reading
		if r == nil {
			break
		}
		fc.mu.Unlock()
		if err := c.awaitRead(ctx, r); err != nil {
			fc.mu.Lock()
			defer fc.mu.Unlock()
			if fc.hasRead {
				return fc.market, nil
			}
			return marketFees{}, fmt.Errorf("stellar: reading fee stats: %w", err)
		}
		fc.mu.Lock()
		if fc.hasRead {
			defer fc.mu.Unlock()
			return fc.market, nil
		}
		// The read failed with nothing read before. Its own envelope's end (a cancelled or
		// expired context) says nothing of the network: this envelope reads for itself.
		if !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded) {
			defer fc.mu.Unlock()
			return marketFees{}, fmt.Errorf("stellar: reading fee stats: %w", r.err)
		}
	}
	r := &feeRead{done: make(chan struct{})}
	fc.reading = r
	fc.mu.Unlock()
	m, err := ch.feeStats(ctx)
	fc.mu.Lock()
	defer fc.mu.Unlock()
	fc.reading, r.err = nil, err
	close(r.done)
	if err != nil {
		if fc.hasRead {
			return fc.market, nil
		}
		return marketFees{}, fmt.Errorf("stellar: reading fee stats: %w", err)
	}
	fc.market, fc.readAt, fc.hasRead = m, now, true
	return m, nil
}

// batchRate is the rate per slot an envelope of b.payments > 1 (a batch) bids while its lane is
// surge priced (surgePriced), 0 otherwise: the lane's highest published percentile (p99), the most
// any recent ledger charged per slot. A single payment's rate (FEE_PERCENTILE, about the clearing
// rate) is left out of a ledger whenever the others above it leave less than its slots; a batch of
// n takes n+1 slots at once, so it bids as the highest recent clearing rate, which surge pricing
// charges only when the batch is itself the marginal transaction (an uncongested lane charges the
// base fee whatever the bid). It is capped by the envelope's budget as any rate is.
func (c *common) batchRate(ctx context.Context, ch chain, b feeBid) (int64, error) {
	surge, err := c.surgePriced(ctx, ch, b.lane)
	if err != nil || !surge {
		return 0, err
	}
	m, err := c.marketFees(ctx, ch)
	if err != nil {
		return 0, err
	}
	return m[b.lane].at(99), nil
}
