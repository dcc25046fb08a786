package stellar

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	"github.com/stellar/go-stellar-sdk/network"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Reading one operation of a landed transaction (transfer.OperationReader): what an operator's
// resolve of a batched key checks on chain before it settles the key with a hash
// (internal/transfer/doc.go, "Batches"), so that the hash is accepted only when the transaction's
// own operation at the key's index pays the key's request.

var (
	_ transfer.OperationReader = (*RPCLedger)(nil)
	_ transfer.OperationReader = (*HorizonLedger)(nil)
)

// PaymentAt reads the transaction whose hash is hash with getTransaction (stellar-rpc finds a
// fee bump by its inner hash too) and returns operation index of its envelope as a payment from
// the vault (paymentAt). Errors: transfer.ErrNotFound (wrapped) when the RPC holds no such
// transaction, or it did not succeed (a FAILED transaction moved nothing), or operation index is
// not a payment of a configured asset from the vault; the RPC's or a decoding error otherwise.
func (l *RPCLedger) PaymentAt(ctx context.Context, hash string, index int) (transfer.ChainPayment, error) {
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetTransactionResponse, error) {
		return c.GetTransaction(ctx, protocol.GetTransactionRequest{Hash: hash})
	})
	if err != nil {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: getTransaction %s: %w", hash, err)
	}
	switch resp.Status {
	case protocol.TransactionStatusSuccess:
	case protocol.TransactionStatusNotFound, protocol.TransactionStatusFailed:
		return transfer.ChainPayment{}, fmt.Errorf("stellar: no successful transaction %s (%s): %w", hash, resp.Status, transfer.ErrNotFound)
	default:
		return transfer.ChainPayment{}, fmt.Errorf("stellar: getTransaction %s: unknown status %q", hash, resp.Status)
	}
	return l.paymentAt(resp.EnvelopeXDR, index, resp.Ledger, time.Unix(resp.LedgerCloseTime, 0).UTC())
}

// PaymentAt is RPCLedger.PaymentAt over Horizon's GET /transactions/{hash} (which finds a fee
// bump by its inner hash too; 404: not found).
func (l *HorizonLedger) PaymentAt(ctx context.Context, hash string, index int) (transfer.ChainPayment, error) {
	tx, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Transaction, error) { return c.TransactionDetail(hash) })
	switch {
	case horizonclient.IsNotFoundError(err):
		return transfer.ChainPayment{}, fmt.Errorf("stellar: no transaction %s: %w", hash, transfer.ErrNotFound)
	case err != nil:
		return transfer.ChainPayment{}, fmt.Errorf("stellar: GET /transactions/%s: %w", hash, err)
	case !tx.Successful:
		return transfer.ChainPayment{}, fmt.Errorf("stellar: transaction %s failed: %w", hash, transfer.ErrNotFound)
	}
	return l.paymentAt(tx.EnvelopeXdr, index, uint32(tx.Ledger), tx.LedgerCloseTime.UTC())
}

// paymentAt decodes envXDR (base64 TransactionEnvelope; a fee bump's inner transaction is read)
// and returns its operation index as a payment from the vault: Hash the inner transaction's hash,
// OuterHash the fee bump's; Counterparty the destination's G... account and, for an M...
// destination, Muxed and MuxedID; Asset the configured code (as configured), Stroops the amount;
// Direction out, Op index and Ops the count, Ledger and CloseTime as given. Errors:
// transfer.ErrNotFound (wrapped) when index is out of range or that operation is not a payment
// whose source is the vault (its own, or the transaction's) of a configured asset (code and
// issuer); a decoding error otherwise.
func (c *common) paymentAt(envXDR string, index int, ledger uint32, closeTime time.Time) (transfer.ChainPayment, error) {
	raw, err := base64.StdEncoding.DecodeString(envXDR)
	if err != nil {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: a landed transaction's envelope: %w", err)
	}
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshal(raw, &env); err != nil {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: a landed transaction's envelope: %w", err)
	}
	h, err := network.HashTransactionInEnvelope(env, c.passphrase)
	if err != nil {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: a landed transaction's hash: %w", err)
	}
	inner, outer := hex.EncodeToString(h[:]), ""
	if env.IsFeeBump() {
		innerEnv := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: env.FeeBump.Tx.InnerTx.V1}
		ih, err := network.HashTransactionInEnvelope(innerEnv, c.passphrase)
		if err != nil {
			return transfer.ChainPayment{}, fmt.Errorf("stellar: a landed fee bump's inner hash: %w", err)
		}
		inner, outer = hex.EncodeToString(ih[:]), inner
	}
	ops := env.Operations()
	if index < 0 || index >= len(ops) {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: transaction %s has %d operations, none at %d: %w", inner, len(ops), index, transfer.ErrNotFound)
	}
	op := ops[index]
	p, ok := op.Body.GetPaymentOp()
	if !ok {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: operation %d of %s is a %s, not a payment: %w", index, inner, op.Body.Type, transfer.ErrNotFound)
	}
	src := env.SourceAccount().ToAccountId().Address()
	if op.SourceAccount != nil {
		src = op.SourceAccount.ToAccountId().Address()
	}
	if src != c.vaultAccount {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: operation %d of %s pays from %s, not the vault: %w", index, inner, src, transfer.ErrNotFound)
	}
	var typ xdr.AssetType
	var code, issuer string
	if err := p.Asset.Extract(&typ, &code, &issuer); err != nil {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: operation %d of %s: its asset: %w", index, inner, err)
	}
	va, configured := c.assets.find(code)
	if typ == xdr.AssetTypeAssetTypeNative || !configured || va.credit.Code != code || va.credit.Issuer != issuer {
		return transfer.ChainPayment{}, fmt.Errorf("stellar: operation %d of %s pays an asset that is not configured: %w", index, inner, transfer.ErrNotFound)
	}
	cp := transfer.ChainPayment{
		Hash: inner, OuterHash: outer, Ledger: ledger, CloseTime: closeTime, Op: index, Ops: len(ops),
		Direction: transfer.DirectionOut, Counterparty: p.Destination.ToAccountId().Address(),
		Asset: va.credit.Code, Stroops: int64(p.Amount), Memo: memoOf(env.Memo()),
	}
	if p.Destination.Type == xdr.CryptoKeyTypeKeyTypeMuxedEd25519 {
		cp.Muxed, _ = p.Destination.GetAddress()
		cp.MuxedID = strconv.FormatUint(uint64(p.Destination.Med25519.Id), 10)
	}
	return cp, nil
}
