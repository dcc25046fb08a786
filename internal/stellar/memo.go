package stellar

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/stellar/go-stellar-sdk/txnbuild"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// destination is where a classic payment goes: the account it credits and, for an M... wallet,
// the muxed account (SEP-23) the operation names. stellar-core credits a muxed destination's
// account (PaymentOpFrame: toAccountID(mPayment.destination)); the id only travels with the
// operation, for the receiver to read.
type destination struct {
	account rawAddress
	muxed   *muxedAddress
}

// strkey is d as the Payment operation's Destination: the M... address of a muxed destination,
// else the G... account.
func (d destination) strkey() string {
	if d.muxed == nil {
		return d.account.String()
	}
	ma := d.muxed.muxedAccount()
	s, err := ma.GetAddress()
	if err != nil {
		// Unreachable: a muxed ed25519 account always encodes.
		panic("stellar: encoding a decoded muxed address: " + err.Error())
	}
	return s
}

// paymentDestination decodes req's wallet for a classic payment: a G... account, or an M...
// muxed account whose account and id must be the request's own Account and MuxedID (the domain
// took them apart with Addresses.ParseMuxed; a request whose parts disagree with its address
// was not made by Rules and is refused, never paid to either). A C... contract is
// OPERATION_NOT_SUPPORTED; anything else INVALID_ADDRESS.
func paymentDestination(req transfer.Request) (destination, error) {
	if len(req.WalletAddress) > 0 && req.WalletAddress[0] == 'M' {
		m, err := decodeMuxed(req.WalletAddress)
		if err != nil {
			return destination{}, invalidWallet("walletAddress is not a valid muxed account (M...)")
		}
		if req.Account != m.account.String() || req.MuxedID != m.id {
			return destination{}, invalidWallet("walletAddress does not match the request's muxed account and id")
		}
		return destination{account: m.account, muxed: &m}, nil
	}
	if req.Account != "" || req.MuxedID != 0 {
		return destination{}, invalidWallet("a muxed account and id come only with an M... walletAddress")
	}
	wallet, err := decodeAddress(req.WalletAddress)
	if err != nil {
		return destination{}, invalidWallet("walletAddress must be a G... account or an M... muxed account")
	}
	if !wallet.isAccount() {
		return destination{}, &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Kind: transfer.KindUnacceptable, Field: "walletAddress",
			Detail: "withdrawals to contract addresses (C...) need a vault contract (Soroban), which this deployment does not have yet; use a G... account"}
	}
	return destination{account: wallet}, nil
}

// txMemo is m as the transaction's memo (txnbuild's types, whose ToXDR the build calls): nil for
// no memo. It checks m again as the network takes it, so a request not made by
// transfer.CanonicalMemo cannot put another memo on the chain than the one it names: text at
// most txnbuild.MemoTextMaxLength bytes, an id in canonical decimal that fits a uint64, a hash or
// return of exactly 32 bytes in canonical lower-case hex. Errors: *transfer.ValidationError
// INVALID_MEMO.
func txMemo(m transfer.Memo) (txnbuild.Memo, error) {
	bad := func(detail string) error {
		return &transfer.ValidationError{Code: transfer.CodeInvalidMemo, Kind: transfer.KindUnacceptable, Field: "memo", Detail: detail}
	}
	switch m.Type {
	case "":
		if m.Value != "" {
			return nil, bad("a memo value needs a memo type")
		}
		return nil, nil
	case transfer.MemoText:
		if len(m.Value) > txnbuild.MemoTextMaxLength {
			return nil, bad(fmt.Sprintf("a text memo is at most %d bytes", txnbuild.MemoTextMaxLength))
		}
		return txnbuild.MemoText(m.Value), nil
	case transfer.MemoID:
		id, err := strconv.ParseUint(m.Value, 10, 64)
		if err != nil || strconv.FormatUint(id, 10) != m.Value {
			return nil, bad("an id memo is an unsigned 64-bit integer in decimal")
		}
		return txnbuild.MemoID(id), nil
	case transfer.MemoHash, transfer.MemoReturn:
		raw, err := hex.DecodeString(m.Value)
		if err != nil || len(raw) != 32 || hex.EncodeToString(raw) != m.Value {
			return nil, bad(fmt.Sprintf("a %s memo is 32 bytes in hex", m.Type))
		}
		var h [32]byte
		copy(h[:], raw)
		if m.Type == transfer.MemoHash {
			return txnbuild.MemoHash(h), nil
		}
		return txnbuild.MemoReturn(h), nil
	default:
		return nil, bad("memo type must be text, id, hash or return")
	}
}

// memoNotSupported is the refusal of what a contract call cannot carry (ContractLedger.validate).
func memoNotSupported(field, detail string) *transfer.ValidationError {
	return &transfer.ValidationError{Code: transfer.CodeMemoNotSupported, Kind: transfer.KindUnacceptable, Field: field, Detail: detail}
}

// errBuiltMismatch is checkBuilt's refusal: a bug between the request and the signed bytes.
var errBuiltMismatch = errors.New("stellar: the signed envelope does not pay what was asked; nothing was sent")

// checkBuilt decodes the signed envelope (the fee bump's inner transaction, or the transaction)
// and refuses it unless it holds exactly one payment of stroops of asset to pay's destination (the
// muxed account with its id, or the account) and exactly pay's memo, each compared as XDR bytes
// with what is built here from pay apart from txnbuild's conversion. It guards the conversion
// (txnbuild.Payment's Destination text, txnbuild.Memo's ToXDR) so that no spelling, library change
// or bug sends a payment elsewhere or with another memo than the one checked before it; a
// mismatch is errBuiltMismatch (Prepare's plain error: 503, nothing sent, the key released).
func checkBuilt(envXDR string, pay payment, stroops int64, asset vaultAsset) error {
	tx, err := builtTx(envXDR)
	if err != nil {
		return err
	}
	if len(tx.Operations) != 1 || tx.Operations[0].Body.PaymentOp == nil {
		return fmt.Errorf("%w: not one payment", errBuiltMismatch)
	}
	return checkBuiltPayment(tx, tx.Operations[0].Body.PaymentOp, pay, stroops, asset)
}

// builtTx decodes a signed envelope's transaction: the fee bump's inner one, or the transaction.
// Errors: errBuiltMismatch (wrapped).
func builtTx(envXDR string) (xdr.Transaction, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(envXDR, &env); err != nil {
		return xdr.Transaction{}, fmt.Errorf("%w: %v", errBuiltMismatch, err)
	}
	switch {
	case env.Type == xdr.EnvelopeTypeEnvelopeTypeTx && env.V1 != nil:
		return env.V1.Tx, nil
	case env.Type == xdr.EnvelopeTypeEnvelopeTypeTxFeeBump && env.FeeBump != nil && env.FeeBump.Tx.InnerTx.V1 != nil:
		return env.FeeBump.Tx.InnerTx.V1.Tx, nil
	}
	return xdr.Transaction{}, fmt.Errorf("%w: envelope type %s", errBuiltMismatch, env.Type)
}

// checkBuiltPayment is checkBuilt's comparison of one payment op of tx, and of tx's memo, with
// pay, stroops and asset.
func checkBuiltPayment(tx xdr.Transaction, op *xdr.PaymentOp, pay payment, stroops int64, asset vaultAsset) error {
	wantDest := xdr.MuxedAccount{Type: xdr.CryptoKeyTypeKeyTypeEd25519}
	if pay.to.muxed != nil {
		wantDest = pay.to.muxed.muxedAccount()
	} else {
		key := xdr.Uint256(pay.to.account.key)
		wantDest.Ed25519 = &key
	}
	wantMemo := xdr.Memo{Type: xdr.MemoTypeMemoNone}
	if pay.memo != nil {
		m, err := pay.memo.ToXDR()
		if err != nil {
			return fmt.Errorf("%w: %v", errBuiltMismatch, err)
		}
		wantMemo = m
	}
	wantAsset, err := asset.credit.ToXDR()
	if err != nil {
		return fmt.Errorf("%w: %v", errBuiltMismatch, err)
	}
	for _, pair := range [][2]interface{ MarshalBinary() ([]byte, error) }{
		{op.Destination, wantDest}, {tx.Memo, wantMemo}, {op.Asset, wantAsset},
	} {
		a, err1 := pair[0].MarshalBinary()
		b, err2 := pair[1].MarshalBinary()
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return errBuiltMismatch
		}
	}
	if int64(op.Amount) != stroops {
		return errBuiltMismatch
	}
	return nil
}
