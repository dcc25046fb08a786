package stellarsim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"time"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// What the network records of an applied transaction, and how it names it.

// AppliedTx is one transaction included in a ledger (SUCCESS or FAILED).
type AppliedTx struct {
	Hash             string      `json:"hash"`                    // inner transaction hash
	FeeBumpHash      string      `json:"fee_bump_hash,omitempty"` // outer hash when fee-bumped
	Source           string      `json:"source"`
	FeeSource        string      `json:"fee_source"`
	Sequence         int64       `json:"sequence,string"`
	Ledger           uint32      `json:"ledger"`
	CloseTime        time.Time   `json:"close_time"`
	ApplicationOrder int32       `json:"application_order"`
	Status           string      `json:"status"` // SUCCESS or FAILED
	FeeCharged       int64       `json:"fee_charged"`
	ResultCode       string      `json:"result_code"` // of the (inner) transaction: txSUCCESS, txFAILED, txBAD_SPONSORSHIP
	OpResults        []string    `json:"op_results"`  // Horizon names: op_success, op_underfunded, ...
	Ops              []OpSummary `json:"operations"`
	// MemoType and Memo are the transaction's memo as Horizon's transaction record shows it
	// (memo_type none, text, id, hash or return; memo the text, the id in decimal, a hash in
	// base64), memo absent for none.
	MemoType      string `json:"memo_type"`
	Memo          string `json:"memo,omitempty"`
	MaxTime       int64  `json:"max_time,omitempty"`
	EnvelopeXDR   string `json:"envelope_xdr"`
	ResultXDR     string `json:"result_xdr"`
	ResultMetaXDR string `json:"result_meta_xdr"`
	// txEvents and opEvents are the events its meta carries (events.go), kept decoded for
	// getEvents; opEvents is nil for a failed transaction.
	txEvents []xdr.TransactionEvent
	opEvents [][]xdr.ContractEvent
}

// OpSummary is an operation in brief.
type OpSummary struct {
	Type        string `json:"type"`
	Source      string `json:"source"`
	Destination string `json:"destination,omitempty"`
	Asset       string `json:"asset,omitempty"`
	Amount      int64  `json:"amount,omitempty"` // stroops; the limit for change_trust
	// DestinationMuxed and DestinationMuxedID: a payment to a muxed account (SEP-23) names it and
	// its id here, as Horizon's payment operation does (to_muxed, to_muxed_id); Destination is
	// the account it credits.
	DestinationMuxed   string `json:"destination_muxed,omitempty"`
	DestinationMuxedID string `json:"destination_muxed_id,omitempty"`
}

var opTypeNames = map[xdr.OperationType]string{
	xdr.OperationTypeCreateAccount:                 "create_account",
	xdr.OperationTypePayment:                       "payment",
	xdr.OperationTypeChangeTrust:                   "change_trust",
	xdr.OperationTypeBeginSponsoringFutureReserves: "begin_sponsoring_future_reserves",
	xdr.OperationTypeEndSponsoringFutureReserves:   "end_sponsoring_future_reserves",
	xdr.OperationTypeSetOptions:                    "set_options",
	xdr.OperationTypeInvokeHostFunction:            "invoke_host_function",
	xdr.OperationTypeExtendFootprintTtl:            "extend_footprint_ttl",
	xdr.OperationTypeRestoreFootprint:              "restore_footprint",
}

func opTypeName(t xdr.OperationType) string {
	if s, ok := opTypeNames[t]; ok {
		return s
	}
	return t.String()
}

func summarizeOp(t *txInfo, op xdr.Operation) OpSummary {
	s := OpSummary{Type: opTypeName(op.Body.Type), Source: t.opSource(op)}
	switch op.Body.Type {
	case xdr.OperationTypeCreateAccount:
		s.Destination = op.Body.CreateAccountOp.Destination.Address()
		s.Asset = "native"
		s.Amount = int64(op.Body.CreateAccountOp.StartingBalance)
	case xdr.OperationTypePayment:
		dest := op.Body.PaymentOp.Destination
		s.Destination = dest.ToAccountId().Address()
		if m, ok := dest.GetMed25519(); ok {
			s.DestinationMuxed = dest.Address()
			s.DestinationMuxedID = strconv.FormatUint(uint64(m.Id), 10)
		}
		s.Asset = assetFromXDR(op.Body.PaymentOp.Asset).String()
		s.Amount = int64(op.Body.PaymentOp.Amount)
	case xdr.OperationTypeChangeTrust:
		if a, ok := changeTrustAsset(op.Body.ChangeTrustOp.Line); ok {
			s.Asset = a.String()
		}
		s.Amount = int64(op.Body.ChangeTrustOp.Limit)
	case xdr.OperationTypeBeginSponsoringFutureReserves:
		s.Destination = op.Body.BeginSponsoringFutureReservesOp.SponsoredId.Address()
	}
	return s
}

// ledgerHash is a stand-in ledger hash, stable for a sequence and close time.
func ledgerHash(seq uint32, closeTime int64) string {
	var b [12]byte
	binary.BigEndian.PutUint32(b[:4], seq)
	binary.BigEndian.PutUint64(b[4:], uint64(closeTime))
	h := sha256.Sum256(b[:])
	return hex.EncodeToString(h[:])
}
