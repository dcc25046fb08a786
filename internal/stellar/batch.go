package stellar

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/stellar/go-stellar-sdk/amount"
	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// This file is the network's side of a batch (internal/transfer/doc.go, "Batches"): several
// queued withdrawals paid by one classic transaction, one payment operation per key in the
// order given, from one transaction source (a leased channel, fee-bumped by the fee account
// once; or the vault), each operation's source the vault. It is built and signed by the code that
// builds one transfer's envelope (withSource, bidRate, seal, checkFunds); the one-transfer path
// does not call it.

// MaxBatchPayments is the most payments one batch holds: stellar-xdr's MAX_OPS_PER_TX
// (Stellar-transaction.x: `Operation operations<MAX_OPS_PER_TX>`, 100); an envelope of more does
// not decode, and stellar-rpc refuses it as invalid_xdr.
const MaxBatchPayments = 100

// BatchRequestError is a batch refused before anything was built because of one of its
// requests: Index (0-based, in the order given) and Err, that request's own refusal (a
// *transfer.ValidationError as Prepare would give it, or ErrBatchMemo, ErrBatchDuplicate). The
// domain runs that request alone and builds the batch without it.
type BatchRequestError struct {
	Index int
	Err   error
}

func (e *BatchRequestError) Error() string {
	return fmt.Sprintf("stellar: batch request %d: %v", e.Index, e.Err)
}

func (e *BatchRequestError) Unwrap() error { return e.Err }

var (
	// ErrBatchMemo: a request with a memo cannot share a transaction (Transaction.memo is one
	// per transaction).
	ErrBatchMemo = errors.New("stellar: a request with a memo is paid alone, never in a batch")
	// ErrBatchDuplicate: a second payment to the same destination account and asset in one
	// batch; its result would depend on the first's (each operation is judged after the earlier
	// ones applied: TransactionFrame::applyOperations).
	ErrBatchDuplicate = errors.New("stellar: a batch holds one payment per destination account and asset")
	// ErrBatchContract: a ContractLedger pays through the vault contract, one Soroban operation
	// per transaction (TransactionFrame::validateSorobanOpsConsistency: txMALFORMED otherwise),
	// so it never batches.
	ErrBatchContract = errors.New("stellar: a vault contract pays one transfer per transaction; contract deployments do not batch")
	// ErrBatchSize: a batch of no request or of more than MaxBatchPayments.
	ErrBatchSize = fmt.Errorf("stellar: a batch holds 1 to %d payments", MaxBatchPayments)
)

// PrepareBatch builds and signs one transaction paying every request of reqs (withdrawals, in
// order: operation i pays reqs[i]) and returns its envelope, as Prepare does for one request:
// the transaction source is a leased channel (the fee account's fee bump around it, its fee
// (n+1) x the bid rate per slot: FeeBumpTransactionFrame::getNumOperations counts the inner
// operations plus one) or the vault; every operation's source is the vault; an M... wallet's
// muxed destination is kept; the timebounds are terms' (MinTime: transfer.BatchMinTime of the
// claims, MaxTime). Nothing is sent. The vault's trustline must cover the sum per asset, and the
// fee payer the envelope's fee, as for one transfer (checkFunds: VAULT_UNDERFUNDED,
// FEE_ACCOUNT_UNDERFUNDED). Errors: ErrBatchSize; *BatchRequestError for a request Prepare would
// refuse, with a memo, or a second payment to one destination and asset;
// *transfer.BatchShortfallError when the vault cannot pay an asset's sum, with what it can pay of
// each asset (the domain decides which payments to build the batch from; none is dropped here);
// otherwise Prepare's (*transfer.UnavailableError, the context's). Done releases the lease as for
// one envelope.
func (l *RPCLedger) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return l.prepareBatch(ctx, rpcChain{l}, reqs, terms)
}

// PrepareBatch is RPCLedger.PrepareBatch over Horizon.
func (h *HorizonLedger) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return h.prepareBatch(ctx, horizonChain{h}, reqs, terms)
}

// PrepareBatch refuses: contract deployments do not batch (ErrBatchContract). The embedded
// RPCLedger's would pay the vault account's classic balance, which is not where a contract
// deployment keeps its funds.
func (l *ContractLedger) PrepareBatch(context.Context, []transfer.Request, transfer.Terms) (transfer.Envelope, error) {
	return transfer.Envelope{}, ErrBatchContract
}

// CheckDestinations refuses as PrepareBatch does (ErrBatchContract).
func (l *ContractLedger) CheckDestinations(context.Context, []transfer.Request) ([]DestinationCheck, error) {
	return nil, ErrBatchContract
}

// batchPayment is one checked operation of a batch.
type batchPayment struct {
	pay     payment
	stroops int64
	asset   vaultAsset
}

// checkBatch checks each request as Prepare does (checkPayment) and the batch's own rules.
func (c *common) checkBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) ([]batchPayment, error) {
	if len(reqs) == 0 || len(reqs) > MaxBatchPayments {
		return nil, ErrBatchSize
	}
	type dest struct{ account, asset string }
	seen := map[dest]bool{}
	pays := make([]batchPayment, len(reqs))
	for i, req := range reqs {
		if !req.Memo.IsZero() {
			return nil, &BatchRequestError{Index: i, Err: ErrBatchMemo}
		}
		pay, asset, _, err := c.checkPayment(ctx, req, terms.MaxTime)
		if err != nil {
			return nil, &BatchRequestError{Index: i, Err: err}
		}
		d := dest{pay.to.account.String(), asset.credit.Code + ":" + asset.credit.Issuer}
		if seen[d] {
			return nil, &BatchRequestError{Index: i, Err: ErrBatchDuplicate}
		}
		seen[d] = true
		pays[i] = batchPayment{pay: pay, stroops: req.Stroops, asset: asset}
	}
	return pays, nil
}

func (c *common) prepareBatch(ctx context.Context, ch chain, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	pays, err := c.checkBatch(ctx, reqs, terms)
	if err != nil {
		return transfer.Envelope{}, err
	}
	keys, err := c.loadKeys(ctx)
	if err != nil {
		return transfer.Envelope{}, err
	}
	env, err := c.withSource(ctx, ch, keys, terms.MaxTime, func(lease sources.Lease) (transfer.Envelope, error) {
		return c.buildBatch(ctx, ch, lease, pays, terms)
	})
	var short *vaultShortfall
	if errors.As(err, &short) {
		// The domain decides which keys to pay with what the vault holds (transfer.BatchShortfallError):
		// this package drops no payment of a batch by itself.
		avail := make(map[string]int64, len(short.avail))
		for i, p := range pays {
			avail[reqs[i].Asset] = short.avail[p.asset]
		}
		return transfer.Envelope{}, &transfer.BatchShortfallError{Available: avail, Err: short.err}
	}
	return env, err
}

// vaultShortfall is buildBatch's refusal of a batch the vault cannot pay in full: avail is what
// it can pay of each asset of the batch (vaultAvailable), err the refusal of the first asset short.
type vaultShortfall struct {
	avail map[vaultAsset]int64
	err   *transfer.UnavailableError
}

func (e *vaultShortfall) Error() string { return e.err.Error() }

// vaultAvailable is what the vault can pay of asset from snap (its trustline, read with
// fundsQuery): the balance less selling liabilities, as checkFunds judges a payment (0 without an
// authorized trustline); math.MaxInt64 for an asset the vault issues, which it pays without a
// trustline.
func (c *common) vaultAvailable(snap accountSnapshot, asset vaultAsset) int64 {
	if asset.credit.Issuer == c.vaultAccount {
		return math.MaxInt64
	}
	t := snap.trust
	if !t.found || !t.authorized {
		return 0
	}
	return max(t.balance-t.sellingLiabilities, 0)
}

// buildBatch is build for many payments: the source's sequence number read with the fee account
// and the first asset's vault trustline in one read (another read per further asset), the
// payments in order, sealed, checked as built, and refused when the vault cannot pay an asset's
// sum (*vaultShortfall, once every asset's trustline is read, so that it says what the vault can
// pay of each) or the fee payer the fee.
func (c *common) buildBatch(ctx context.Context, ch chain, lease sources.Lease, pays []batchPayment, terms transfer.Terms) (transfer.Envelope, error) {
	var assets []vaultAsset
	sums := map[vaultAsset]int64{}
	for _, p := range pays {
		if _, ok := sums[p.asset]; !ok {
			assets = append(assets, p.asset)
		}
		sums[p.asset] = addCapped(sums[p.asset], p.stroops)
	}
	snap, err := ch.accounts(ctx, c.fundsQuery(lease, assets[0].credit, true))
	if err != nil {
		return transfer.Envelope{}, err
	}
	ops := make([]txnbuild.Operation, len(pays))
	for i, p := range pays {
		ops[i] = &txnbuild.Payment{
			Destination:   p.pay.to.strkey(),
			Amount:        amount.StringFromInt64(p.stroops),
			Asset:         p.asset.credit,
			SourceAccount: lease.OpSource,
		}
	}
	env, err := c.buildClassic(ctx, ch, lease, snap.source.seq, ops, nil, terms)
	if err != nil {
		return transfer.Envelope{}, err
	}
	if err := checkBuiltBatch(env.XDR, pays); err != nil {
		return transfer.Envelope{}, err
	}
	var short *vaultShortfall
	avail := make(map[vaultAsset]int64, len(assets))
	for i, a := range assets {
		s := snap
		if i > 0 {
			if s, err = ch.accounts(ctx, c.fundsQuery(lease, a.credit, true)); err != nil {
				return transfer.Envelope{}, err
			}
		}
		avail[a] = c.vaultAvailable(s, a)
		if avail[a] < sums[a] {
			// The asset's own check (checkFunds judges the trustline before the fee) says why.
			if short == nil {
				var ue *transfer.UnavailableError
				if err := c.checkFunds(ctx, ch, lease, s, env, sums[a], a, true); !errors.As(err, &ue) || ue.Code != transfer.CodeVaultUnderfunded {
					return transfer.Envelope{}, fmt.Errorf("stellar: the vault's %s short of a batch's sum and not refused as such: %v", a.credit.Code, err)
				}
				short = &vaultShortfall{avail: avail, err: ue}
			}
			continue
		}
		if err := c.checkFunds(ctx, ch, lease, s, env, sums[a], a, true); err != nil {
			return transfer.Envelope{}, err
		}
	}
	if short != nil {
		return transfer.Envelope{}, short
	}
	return env, nil
}

// checkBuiltBatch is checkBuilt for a batch: the signed transaction holds exactly len(pays)
// payments, no memo, operation i exactly pays[i] (checkBuiltPayment).
func checkBuiltBatch(envXDR string, pays []batchPayment) error {
	tx, err := builtTx(envXDR)
	if err != nil {
		return err
	}
	if len(tx.Operations) != len(pays) {
		return fmt.Errorf("%w: %d operations for %d payments", errBuiltMismatch, len(tx.Operations), len(pays))
	}
	for i, op := range tx.Operations {
		if op.Body.PaymentOp == nil {
			return fmt.Errorf("%w: operation %d is not a payment", errBuiltMismatch, i)
		}
		if err := checkBuiltPayment(tx, op.Body.PaymentOp, pays[i].pay, pays[i].stroops, pays[i].asset); err != nil {
			return err
		}
	}
	return nil
}

// OpSide is what one operation's result in a batch's transaction says about whose it is
// (internal/transfer/doc.go, "Batches", "Outcomes, per key").
type OpSide string

const (
	// OpLanded: the transaction succeeded; the operation paid.
	OpLanded OpSide = "landed"
	// OpNeighbour: the transaction failed and this operation succeeded in its own scope
	// (op_success): another operation failed it, and nothing of it moved.
	OpNeighbour OpSide = "neighbour"
	// OpDestination: the destination's fault (transfer.DestinationSide: op_no_destination,
	// op_no_trust, op_not_authorized, op_line_full, which a payment is judged on before its
	// source).
	OpDestination OpSide = "destination"
	// OpSource: the paying side's fault (sourceOpCodes): the vault lacks the asset, its line, or
	// its issuer's authorization.
	OpSource OpSide = "source"
	// OpOwn: any other code of this operation's own (op_malformed, op_bad_auth, ...).
	OpOwn OpSide = "own"
	// OpNoResult: the transaction failed before its operations ran (a transaction-level code,
	// such as txINSUFFICIENT_BALANCE or txBAD_SEQ): no operation has a result of its own.
	OpNoResult OpSide = "no_result"
)

// sourceOpCodes are the payment results that fault the paying side:
// PathPaymentOpFrameBase::updateSourceBalance (op_src_no_trust, op_src_not_authorized,
// op_underfunded), the codes transfer.JudgeOperation requeues a batched key on.
var sourceOpCodes = []string{"op_underfunded", "op_src_no_trust", "op_src_not_authorized"}

// OpOutcome is one operation's result in a batch's transaction.
type OpOutcome struct {
	// Index is the operation's index, 0-based.
	Index int
	// Code is the operation's result in Horizon's spelling ("op_success", "op_no_trust", ...);
	// "" for OpNoResult.
	Code string
	Side OpSide
}

// BatchOutcomes decodes a batch's TransactionResult (base64 XDR, as getTransaction's resultXdr
// or Horizon's result_xdr give it; a fee bump's inner result is read) into the outcome of each of
// its ops operations, and returns the transaction's codes in Horizon's spelling (ResultCodes:
// the transaction's, then one per operation). Errors: undecodable XDR, or a result whose
// operation results are not ops in number (a transaction-level failure, which holds none, is
// every operation OpNoResult).
func BatchOutcomes(resultXDR string, ops int) (codes []string, out []OpOutcome, err error) {
	var r xdr.TransactionResult
	if err := xdr.SafeUnmarshalBase64(resultXDR, &r); err != nil {
		return nil, nil, fmt.Errorf("stellar: decoding a batch's result: %w", err)
	}
	codes = ResultCodes(r)
	out, err = outcomesOf(codes, ops)
	return codes, out, err
}

// LookupOutcomes is BatchOutcomes from the lookup of a batch's hashes (Lookup of either
// backend; its ResultCodes are ResultCodes of the inner result): SUCCESS is every operation
// OpLanded with "op_success". Errors: a lookup that found nothing (NOT_FOUND decides no
// operation), or FAILED codes that do not fit ops operations.
func LookupOutcomes(lk transfer.Lookup, ops int) ([]OpOutcome, error) {
	switch lk.Status {
	case transfer.LookupSuccess:
		out := make([]OpOutcome, ops)
		for i := range out {
			out[i] = OpOutcome{Index: i, Code: "op_success", Side: OpLanded}
		}
		return out, nil
	case transfer.LookupFailed:
		return outcomesOf(lk.ResultCodes, ops)
	}
	return nil, fmt.Errorf("stellar: a batch looked up %s has no operation results", lk.Status)
}

// outcomesOf classifies codes (ResultCodes: the transaction's, then one per operation).
func outcomesOf(codes []string, ops int) ([]OpOutcome, error) {
	if len(codes) == 0 {
		return nil, errors.New("stellar: a batch's result without codes")
	}
	tx := codes[0]
	out := make([]OpOutcome, ops)
	if len(codes) == 1 && tx != "tx_success" && tx != "tx_failed" {
		for i := range out {
			out[i] = OpOutcome{Index: i, Side: OpNoResult}
		}
		return out, nil
	}
	if len(codes)-1 != ops {
		return nil, fmt.Errorf("stellar: a batch of %d operations has %d results (%s)", ops, len(codes)-1, tx)
	}
	for i, c := range codes[1:] {
		out[i] = OpOutcome{Index: i, Code: c, Side: opSide(tx == "tx_success", c)}
	}
	return out, nil
}

// opSide classifies one operation's code c in a transaction that succeeded or not.
func opSide(success bool, c string) OpSide {
	switch {
	case c == "op_success" && success:
		return OpLanded
	case c == "op_success":
		return OpNeighbour
	case transfer.DestinationSide(c):
		return OpDestination
	case slices.Contains(sourceOpCodes, c):
		return OpSource
	}
	return OpOwn
}
