package stellar

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"sync"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Who outbid an envelope. A surge-priced lane says the envelope has rivals, not whose: a
// deployment that sends more than the classic lane takes in a ledger surge prices the lane by
// itself, and replacing at 10x then outbids its own queued envelopes, which replace at 10x in
// turn. So before replacing a classic envelope, the latest closed ledger's classic transactions
// are read and the envelope is replaced only if one paid by someone else was included at a rate
// per operation slot at or above the envelope's: that party outbid it, or took the room at its
// price. (The Soroban lane keeps the surge rule alone: replace.go.)
//
// stellar-core fills a lane in order of inclusion fee per operation
// (src/herder/SurgePricingUtils.cpp, SurgePricingPriorityQueue::popTopTxs over the queue ordered
// by feeRate3WayCompare: inclusion fee times the other's operations, compared exactly; a fee
// bump's inclusion fee is its whole fee less a Soroban resource fee and its operations count one
// more, src/transactions/FeeBumpTransactionFrame.cpp, getInclusionFee and getNumOperations), and
// charges every included transaction the lane's base fee (src/herder/TxSetFrame.cpp,
// computeLaneBaseFee: the lowest included bid once a transaction did not fit, else the ledger's
// base fee). The ledger keeps each transaction's bid: the generalized set's classic phase holds
// the envelopes, one TXSET_COMP_TXS_MAYBE_DISCOUNTED_FEE component per base fee
// (TxSetFrame.cpp, sequentialPhaseToXdr), the Soroban phase holds them in its stages' clusters
// (parallelPhaseToXdr). A transaction's fee payer is a fee bump's fee source, else its source.
//
// Over stellar-rpc the set comes from the latest ledger's LedgerCloseMeta (getLatestLedger's
// metadataXdr, else getLedgers of that ledger); over Horizon from GET /ledgers/{seq}/transactions
// of the latest ledger, its pages up to the Soroban phase (each record has its envelope_xdr, in
// application order, the classic phase first). Behind a load balancer whose instance answering
// has not ingested the latest ledger yet, the ledger before it is read: it closed while the
// envelope waited too. A ledger's bids are read once per process (bidsCache). A Horizon that does
// not serve that resource (horizon_fees.go) keeps the surge rule alone. A ledger that cannot be
// read is no replacement this ledger: a plain error, judged again at the next.

// errBidsUnknown is a backend that cannot list a ledger's transactions (a Horizon without GET
// /ledgers/{seq}/transactions): the surge rule alone decides, as before.
var errBidsUnknown = errors.New("stellar: the latest ledger's transactions cannot be listed here")

// errOwnBidsOnly is the reason an envelope outbid only by this deployment is not replaced.
const errOwnBidsOnly = "outbid only by this deployment's own transactions"

// ledgerBid is one transaction a closed ledger included: who paid its fee and what it bid.
type ledgerBid struct {
	lane         feeLane
	feeSource    string // a fee bump's outer fee source, else the source: its account (G...), muxed or not
	inclusionFee int64  // the fee offered less a declared Soroban resource fee, stroops
	slots        int64  // operations, plus one for a fee bump
}

// laneBids is the transactions the latest closed ledger included.
type laneBids struct {
	ledger uint32
	bids   []ledgerBid
}

// bidsCache keeps the bids of the last closed ledger read. A closed ledger's transaction set never
// changes, and every envelope this process judges while it is the latest asks for it: read once,
// not once per envelope (over Horizon up to 7 requests each, against its rate limit, in the
// congested ledgers that make envelopes wait; over stellar-rpc a LedgerCloseMeta of megabytes
// decoded each time).
type bidsCache struct {
	mu sync.Mutex
	lb laneBids
}

// get returns the bids of ledger seq when they are the ones kept.
func (b *bidsCache) get(seq uint32) (laneBids, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.lb, seq != 0 && b.lb.ledger == seq
}

// keep records lb (never changed after: readers share its bids).
func (b *bidsCache) keep(lb laneBids) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if lb.ledger >= b.lb.ledger {
		b.lb = lb
	}
}

// bidOf reads e's fee payer, lane and bid; false for an envelope it cannot read.
func bidOf(e xdr.TransactionEnvelope) (ledgerBid, bool) {
	var b ledgerBid
	var src xdr.MuxedAccount
	var ext xdr.TransactionExt
	switch {
	case e.Type == xdr.EnvelopeTypeEnvelopeTypeTxFeeBump && e.FeeBump != nil && e.FeeBump.Tx.InnerTx.V1 != nil:
		b.inclusionFee, b.slots = int64(e.FeeBump.Tx.Fee), 1
		src, ext = e.FeeBump.Tx.FeeSource, e.FeeBump.Tx.InnerTx.V1.Tx.Ext
	case e.Type == xdr.EnvelopeTypeEnvelopeTypeTx && e.V1 != nil:
		b.inclusionFee = int64(e.V1.Tx.Fee)
		src, ext = e.V1.Tx.SourceAccount, e.V1.Tx.Ext
	case e.Type == xdr.EnvelopeTypeEnvelopeTypeTxV0 && e.V0 != nil:
		b.inclusionFee = int64(e.V0.Tx.Fee)
		src = xdr.MuxedAccount{Type: xdr.CryptoKeyTypeKeyTypeEd25519, Ed25519: &e.V0.Tx.SourceAccountEd25519}
	default:
		return ledgerBid{}, false
	}
	ops := e.Operations()
	b.slots += int64(len(ops))
	if ext.V == 1 && ext.SorobanData != nil {
		b.inclusionFee -= int64(ext.SorobanData.ResourceFee)
	}
	if len(ops) == 1 {
		switch ops[0].Body.Type {
		case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
			b.lane = laneSoroban
		}
	}
	if _, err := src.GetAddress(); err != nil || b.slots <= 0 {
		return ledgerBid{}, false
	}
	// A muxed fee source (M...) is paid by its underlying account, whatever its mux id: the
	// vault's or the fee account's under one is still this deployment's bid. GetAddress
	// succeeding is what keeps ToAccountId from panicking.
	aid := src.ToAccountId()
	acct, err := aid.GetAddress()
	if err != nil {
		return ledgerBid{}, false
	}
	b.feeSource = acct
	return b, true
}

// atOrAbove reports whether b bid at least inclusionFee over slots per operation slot, compared
// as feeRate3WayCompare does (b's fee x slots against inclusionFee x b's slots, no division).
func (b ledgerBid) atOrAbove(inclusionFee, slots int64) bool {
	if b.inclusionFee < 0 || inclusionFee <= 0 {
		return b.inclusionFee >= 0 && inclusionFee <= 0
	}
	h1, l1 := bits.Mul64(uint64(b.inclusionFee), uint64(slots))
	h2, l2 := bits.Mul64(uint64(inclusionFee), uint64(b.slots))
	return h1 > h2 || (h1 == h2 && l1 >= l2)
}

// setBids is the transactions of a LedgerCloseMeta's transaction set: a generalized set's
// phases, or a legacy set's envelopes.
func setBids(meta xdr.LedgerCloseMeta) ([]ledgerBid, error) {
	var envs []xdr.TransactionEnvelope
	var set *xdr.GeneralizedTransactionSet
	switch {
	case meta.V == 0 && meta.V0 != nil:
		envs = meta.V0.TxSet.Txs
	case meta.V == 1 && meta.V1 != nil:
		set = &meta.V1.TxSet
	case meta.V == 2 && meta.V2 != nil:
		set = &meta.V2.TxSet
	default:
		return nil, fmt.Errorf("LedgerCloseMeta version %d without its body", meta.V)
	}
	if set != nil {
		if set.V1TxSet == nil {
			return nil, fmt.Errorf("generalized transaction set version %d", set.V)
		}
		for _, ph := range set.V1TxSet.Phases {
			if ph.V0Components != nil {
				for _, c := range *ph.V0Components {
					if c.TxsMaybeDiscountedFee != nil {
						envs = append(envs, c.TxsMaybeDiscountedFee.Txs...)
					}
				}
			}
			if ph.ParallelTxsComponent != nil {
				for _, stage := range ph.ParallelTxsComponent.ExecutionStages {
					for _, cluster := range stage {
						envs = append(envs, cluster...)
					}
				}
			}
		}
	}
	bids := make([]ledgerBid, 0, len(envs))
	for _, e := range envs {
		if b, ok := bidOf(e); ok {
			bids = append(bids, b)
		}
	}
	return bids, nil
}

// latestBids reads the transactions of the latest closed ledger from its LedgerCloseMeta:
// getLatestLedger's metadataXdr (stellar-rpc 25 and later; earlier ones answer without it), else
// getLedgers of that ledger, or of the ledger before when getLedgers cannot return that one.
func (r rpcChain) latestBids(ctx context.Context) (laneBids, error) {
	latest, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLatestLedgerResponse, error) {
		return c.GetLatestLedger(ctx)
	})
	if err != nil {
		return laneBids{}, fmt.Errorf("stellar: getLatestLedger: %w", err)
	}
	seq, metaXDR := latest.Sequence, latest.LedgerMetadata
	if lb, ok := r.l.bids.get(seq); ok {
		return lb, nil
	}
	if metaXDR == "" {
		metaXDR, err = r.ledgerMeta(ctx, seq)
		if err != nil && seq > 1 {
			// Behind a load balancer the instance answering getLedgers may not hold the ledger
			// getLatestLedger named yet (RPCConfig.LoadBalanced): the one before it, which
			// closed while the envelope waited too, is the latest it can show.
			seq--
			if lb, ok := r.l.bids.get(seq); ok {
				return lb, nil
			}
			metaXDR, err = r.ledgerMeta(ctx, seq)
		}
		if err != nil {
			return laneBids{}, err
		}
	}
	var meta xdr.LedgerCloseMeta
	if err := xdr.SafeUnmarshalBase64(metaXDR, &meta); err != nil {
		return laneBids{}, fmt.Errorf("stellar: decoding metadataXdr of ledger %d: %w", seq, err)
	}
	bids, err := setBids(meta)
	if err != nil {
		return laneBids{}, fmt.Errorf("stellar: the transaction set of ledger %d: %w", seq, err)
	}
	lb := laneBids{ledger: seq, bids: bids}
	r.l.bids.keep(lb)
	return lb, nil
}

// ledgerMeta reads ledger seq's LedgerCloseMeta, base64 XDR, from getLedgers.
//
// Errors: a plain error when getLedgers fails or does not return seq first.
func (r rpcChain) ledgerMeta(ctx context.Context, seq uint32) (string, error) {
	resp, err := call(ctx, r.l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgersResponse, error) {
		return c.GetLedgers(ctx, protocol.GetLedgersRequest{StartLedger: seq, Pagination: &protocol.LedgerPaginationOptions{Limit: 1}})
	})
	if err != nil {
		return "", fmt.Errorf("stellar: getLedgers: %w", err)
	}
	if len(resp.Ledgers) == 0 || resp.Ledgers[0].Sequence != seq {
		return "", fmt.Errorf("stellar: getLedgers: ledger %d not returned", seq)
	}
	return resp.Ledgers[0].LedgerMetadata, nil
}

// horizonBidPages bounds the pages of GET /ledgers/{seq}/transactions read for one ledger: 200
// records a page, more than the classic phase of a ledger of 1,000 classic operations (at most
// 1,000 transactions) and the first record after it. The Soroban phase that follows (up to 2,000
// transactions on pubnet, stellarsim.PubnetLaneLimits) is not read: see latestBids. A ledger whose
// max_tx_set_size is larger (the validators vote it) gets the pages its classic phase can fill
// (horizonPagesFor).
const horizonBidPages = 8

// horizonMaxBidPages bounds horizonPagesFor whatever a ledger record claims: a classic lane of
// 10,000 operations, ten times pubnet's.
const horizonMaxBidPages = 52

// horizonPagesFor is the pages of 200 records ledger rec's classic phase can fill, plus the page
// that shows where it ends: never fewer than horizonBidPages, never more than horizonMaxBidPages.
func horizonPagesFor(rec hProtocol.Ledger) int {
	return min(horizonMaxBidPages, max(horizonBidPages, int(max(rec.MaxTxSetSize, 0))/200+2))
}

// latestBids reads the classic transactions of the latest closed ledger from GET /ledgers
// (latest) and the pages of GET /ledgers/{seq}/transactions (failed ones included: included and
// charged alike) up to the first Soroban transaction: Horizon lists a ledger's transactions in
// application order and stellar-core applies the classic phase first (horizon_fees.go), so every
// classic bid was read by then, and the Soroban phase, up to 2,000 transactions, would take 10
// more pages that outbidByOthers never looks at. When the instance answering has not ingested the
// newest ledger GET /ledgers listed (not_found once the resource was served), the ledger before
// it is read instead.
//
// Errors: errBidsUnknown for a Horizon that never served GET /ledgers/{seq}/transactions to this
// process; a plain error otherwise (ledgerBids).
func (h horizonChain) latestBids(ctx context.Context) (laneBids, error) {
	page, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.LedgersPage, error) {
		return c.Ledgers(horizonclient.LedgerRequest{Order: horizonclient.OrderDesc, Limit: 2})
	})
	if err != nil {
		return laneBids{}, fmt.Errorf("stellar: GET /ledgers: %w", err)
	}
	recs := page.Embedded.Records
	if len(recs) == 0 || recs[0].Sequence <= 0 {
		return laneBids{}, errors.New("stellar: GET /ledgers returned no ledger")
	}
	read := func(rec hProtocol.Ledger) (laneBids, error) {
		if lb, ok := h.l.bids.get(uint32(rec.Sequence)); ok {
			return lb, nil
		}
		lb, err := h.ledgerBids(ctx, rec)
		if err == nil {
			h.l.bids.keep(lb)
		}
		return lb, err
	}
	out, err := read(recs[0])
	if errors.Is(err, errNoLedgerTransactions) && len(recs) > 1 && recs[1].Sequence > 0 {
		// Behind a load balancer the instance answering may not hold the newest ledger yet
		// (horizon_fees.go): the one before it, which closed while the envelope waited too, is
		// the latest ledger it can show. Every read of the newest alone could meet that
		// instance, and no replacement would ever be judged.
		return read(recs[1])
	}
	return out, err
}

// ledgerBids reads the classic transactions of ledger rec (see latestBids).
//
// Errors: errBidsUnknown for not_found from a Horizon that never served the resource to this
// process; errNoLedgerTransactions (wrapped) for not_found from one that did (the answering
// instance has not ingested rec); a plain error for any other failure, a listing shorter than
// rec's counts, or more pages than its classic phase can fill (horizonPagesFor).
func (h horizonChain) ledgerBids(ctx context.Context, rec hProtocol.Ledger) (laneBids, error) {
	want := int64(rec.SuccessfulTransactionCount)
	if rec.FailedTransactionCount != nil {
		want += int64(*rec.FailedTransactionCount)
	}
	out := laneBids{ledger: uint32(rec.Sequence)}
	cursor, read, pages := "", int64(0), horizonPagesFor(rec)
	for i := 0; read < want; i++ {
		if i == pages {
			return laneBids{}, fmt.Errorf("stellar: GET /ledgers/%d/transactions: more than %d pages", rec.Sequence, pages)
		}
		txs, err := hcall(ctx, h.l, func(c *horizonclient.Client) (hProtocol.TransactionsPage, error) {
			return c.Transactions(horizonclient.TransactionRequest{ForLedger: uint(rec.Sequence), Limit: 200, Cursor: cursor, IncludeFailed: true})
		})
		if horizonclient.IsNotFoundError(err) {
			if !h.l.rates.isServed() {
				// A Horizon that has never served the resource to this process is taken for
				// one without it (horizon_fees.go): the bids cannot be read, today's rule holds.
				return laneBids{}, errBidsUnknown
			}
			return laneBids{}, fmt.Errorf("stellar: GET /ledgers/%d/transactions: %w", rec.Sequence, errNoLedgerTransactions)
		}
		if err != nil {
			return laneBids{}, fmt.Errorf("stellar: GET /ledgers/%d/transactions: %w", rec.Sequence, err)
		}
		h.l.rates.markServed()
		recs := txs.Embedded.Records
		if len(recs) == 0 {
			return laneBids{}, fmt.Errorf("stellar: GET /ledgers/%d/transactions: %d of %d transactions listed", rec.Sequence, read, want)
		}
		sorobanPhase := false
		for _, tx := range recs {
			var e xdr.TransactionEnvelope
			if err := xdr.SafeUnmarshalBase64(tx.EnvelopeXdr, &e); err != nil {
				return laneBids{}, fmt.Errorf("stellar: GET /ledgers/%d/transactions: envelope of %s: %w", rec.Sequence, tx.Hash, err)
			}
			if b, ok := bidOf(e); ok {
				out.bids = append(out.bids, b)
				sorobanPhase = sorobanPhase || b.lane == laneSoroban
			}
		}
		if sorobanPhase {
			return out, nil
		}
		read += int64(len(recs))
		cursor = recs[len(recs)-1].PagingToken()
	}
	return out, nil
}

// outbidByOthers returns nil when the latest closed ledger included, in shape's lane, a
// transaction paid by someone other than this deployment at a rate per operation slot at or
// above shape's (its inclusion fee over its slots): then replacing is worth it. Ours are those
// whose fee feeAccount paid (its fee bumps) or an account of ours paid (ours: the vault and the
// channel accounts, as a plain transaction's source).
//
// Errors: transfer.ErrNoReplacement (wrapped) when no such transaction was included, naming
// whether this deployment's own transactions were the ones at or above the rate; a plain error
// when the ledger cannot be read (no replacement this ledger).
func (c *common) outbidByOthers(ctx context.Context, ch chain, shape envelopeShape, feeAccount string, ours map[string]bool) error {
	lb, err := ch.latestBids(ctx)
	if errors.Is(err, errBidsUnknown) {
		return nil
	}
	if err != nil {
		return err
	}
	fee := shape.fee - shape.resourceFee
	own := 0
	for _, b := range lb.bids {
		if b.lane != shape.lane || !b.atOrAbove(fee, shape.slots) {
			continue
		}
		if b.feeSource == feeAccount || ours[b.feeSource] {
			own++
			continue
		}
		return nil
	}
	if own > 0 {
		return fmt.Errorf("%w: %s (ledger %d included %d of them at or above %d stroops per operation slot and no other)",
			transfer.ErrNoReplacement, errOwnBidsOnly, lb.ledger, own, shape.rate())
	}
	return fmt.Errorf("%w: ledger %d included no %s transaction at or above its %d stroops per operation slot",
		transfer.ErrNoReplacement, lb.ledger, shape.lane, shape.rate())
}

// ownSources is the accounts whose own transactions (not fee bumps) are this deployment's: the
// vault and the channel accounts (the channel keys are derived once per master seed; without
// them, the vault alone).
func (c *common) ownSources(keys signing.Keys) map[string]bool {
	ours := map[string]bool{c.vaultAccount: true}
	if c.pool != nil {
		if chans, err := c.pool.Channels(keys); err == nil {
			for _, k := range chans {
				ours[k.Address()] = true
			}
		}
	}
	return ours
}
