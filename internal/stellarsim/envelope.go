package stellarsim

import (
	"encoding/hex"
	"fmt"

	"github.com/stellar/go-stellar-sdk/network"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// txInfo is a decoded envelope with what the rules need.
type txInfo struct {
	env       xdr.TransactionEnvelope
	envXDR    string
	fullHash  string // hash of the envelope as submitted (outer hash for a fee bump)
	innerHash string // hash of the inner transaction (== fullHash when not a fee bump)
	innerRaw  [32]byte
	fullRaw   [32]byte
	feeBump   bool
	source    string // inner transaction source
	feeSource string // who pays the fee (fee-bump source, or source)
	seq       int64
	innerFee  int64
	outerFee  int64 // fee-bump fee; 0 when not a fee bump
	ops       []xdr.Operation
	// soroban is the (inner) transaction's SorobanTransactionData, nil for a
	// classic transaction; resourceFee is its declared resource fee (stroops).
	soroban     *xdr.SorobanTransactionData
	resourceFee int64
}

// decodeEnvelope parses a base64 TransactionEnvelope and hashes it with the
// network passphrase. An error means the XDR itself is unusable.
func decodeEnvelope(b64, passphrase string) (*txInfo, error) {
	var env xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(b64, &env); err != nil {
		return nil, fmt.Errorf("decoding transaction envelope: %w", err)
	}
	t := &txInfo{env: env, envXDR: b64}
	full, err := network.HashTransactionInEnvelope(env, passphrase)
	if err != nil {
		return nil, fmt.Errorf("hashing transaction envelope: %w", err)
	}
	t.fullRaw = full
	t.innerRaw = full
	if env.IsFeeBump() {
		t.feeBump = true
		inner, err := network.HashTransaction(env.FeeBump.Tx.InnerTx.V1.Tx, passphrase)
		if err != nil {
			return nil, fmt.Errorf("hashing inner transaction: %w", err)
		}
		t.innerRaw = inner
		t.outerFee = env.FeeBumpFee()
		t.feeSource = env.FeeBumpAccount().ToAccountId().Address()
	}
	t.fullHash = hex.EncodeToString(t.fullRaw[:])
	t.innerHash = hex.EncodeToString(t.innerRaw[:])
	t.source = env.SourceAccount().ToAccountId().Address()
	if !t.feeBump {
		t.feeSource = t.source
	}
	t.seq = env.SeqNum()
	t.innerFee = int64(env.Fee())
	t.ops = env.Operations()
	if t.soroban = sorobanData(env); t.soroban != nil {
		t.resourceFee = int64(t.soroban.ResourceFee)
	}
	return t, nil
}

// sorobanData is the (inner) transaction's Soroban extension, if any.
func sorobanData(env xdr.TransactionEnvelope) *xdr.SorobanTransactionData {
	var tx *xdr.Transaction
	switch {
	case env.IsFeeBump() && env.FeeBump.Tx.InnerTx.V1 != nil:
		tx = &env.FeeBump.Tx.InnerTx.V1.Tx
	case env.V1 != nil:
		tx = &env.V1.Tx
	default:
		return nil
	}
	if tx.Ext.V != 1 {
		return nil
	}
	return tx.Ext.SorobanData
}

// isSorobanOp reports whether op is one of the three Soroban operations.
func isSorobanOp(op xdr.Operation) bool {
	switch op.Body.Type {
	case xdr.OperationTypeInvokeHostFunction, xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
		return true
	}
	return false
}

// opSource is the account an operation acts for.
func (t *txInfo) opSource(op xdr.Operation) string {
	if op.SourceAccount != nil {
		return op.SourceAccount.ToAccountId().Address()
	}
	return t.source
}

// feeRate is the inclusion fee per operation (the fee minus the declared
// Soroban resource fee), counting the fee-bump wrapper as one more op (that
// is how core compares a fee bump against what it replaces).
func (t *txInfo) feeRate() float64 {
	if t.feeBump {
		return float64(t.outerFee-t.resourceFee) / float64(len(t.ops)+1)
	}
	return t.innerRate()
}

// innerRate is the inner transaction's inclusion fee per operation.
func (t *txInfo) innerRate() float64 {
	return float64(t.innerFee-t.resourceFee) / float64(max(len(t.ops), 1))
}
