package stellar

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// unknownOpCodeResult is a FAILED result (fee 100) whose one payment operation carries a code no
// PaymentResultCode of the SDK has (a later protocol's): the SDK cannot decode it. feeBump wraps
// it as an included fee bump (txFEE_BUMP_INNER_FAILED) would be.
func unknownOpCodeResult(t *testing.T, feeBump bool) string {
	t.Helper()
	s, err := forgeUnknownOpCode(feeBump)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func forgeUnknownOpCode(feeBump bool) (string, error) {
	ops := []xdr.OperationResult{{Code: xdr.OperationResultCodeOpInner, Tr: &xdr.OperationResultTr{Type: xdr.OperationTypePayment,
		PaymentResult: &xdr.PaymentResult{Code: xdr.PaymentResultCodePaymentUnderfunded}}}}
	r := xdr.TransactionResult{FeeCharged: 100, Result: xdr.TransactionResultResult{Code: xdr.TransactionResultCodeTxFailed, Results: &ops}}
	if feeBump {
		r = xdr.TransactionResult{FeeCharged: 100, Result: xdr.TransactionResultResult{Code: xdr.TransactionResultCodeTxFeeBumpInnerFailed,
			InnerResultPair: &xdr.InnerTransactionResultPair{Result: xdr.InnerTransactionResult{FeeCharged: 100,
				Result: xdr.InnerTransactionResultResult{Code: xdr.TransactionResultCodeTxFailed, Results: &ops}}}}}
	}
	b, err := r.MarshalBinary()
	if err != nil {
		return "", err
	}
	// The payment's code is the last 4 bytes before the result's ext (and, wrapped, the inner
	// result's ext): PAYMENT_UNDERFUNDED (-2) becomes -99.
	at := len(b) - 8
	if feeBump {
		at -= 4
	}
	if int32(binary.BigEndian.Uint32(b[at:])) != int32(xdr.PaymentResultCodePaymentUnderfunded) {
		return "", fmt.Errorf("the payment's code is not at %d", at)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(0xffffff9d)) // -99
	s := base64.StdEncoding.EncodeToString(b)
	var probe xdr.TransactionResult
	if xdr.SafeUnmarshalBase64(s, &probe) == nil {
		return "", errors.New("the SDK decodes the forged code: the test proves nothing")
	}
	return s, nil
}

// TestUnknownOperationCodeIsServiceSideNotInDoubt: a FAILED inclusion whose operation code this
// build's SDK cannot decode (a protocol upgrade ahead of the service) still says txFAILED, which
// stellar-core sets only at apply once the sequence number was consumed (TransactionFrame::
// processSignatures, applyOperations): nothing moved and it can never land. Both readers report it
// FAILED with the operation unread ("op_unknown"), which transfer.SourceShortfall releases as
// SERVICE_SIDE_FAILURE (no code proves the client at fault). An error would leave the transfer in
// doubt for ever: no lookup could read it, the sweep could not settle it, and an operator could
// neither resolve nor discard it. A transaction-level code it cannot decode stays an error: it
// might have been set before the sequence check.
func TestUnknownOperationCodeIsServiceSideNotInDoubt(t *testing.T) {
	for _, feeBump := range []bool{false, true} {
		resultXDR := unknownOpCodeResult(t, feeBump)
		env := transfer.Envelope{InnerHash: strings.Repeat("ab", 32)}
		if feeBump {
			env.OuterHash = strings.Repeat("cd", 32)
		}
		e := newUnitEnv(t)
		e.fake.handle("getTransaction", func(json.RawMessage) (any, *rpcError) {
			return protocol.GetTransactionResponse{TransactionDetails: protocol.TransactionDetails{Status: protocol.TransactionStatusFailed,
				Ledger: 70, ResultXDR: resultXDR}, LatestLedger: 77, OldestLedger: 1}, nil
		})
		lk, err := e.ledger.Lookup(context.Background(), env)
		if err != nil || lk.Status != transfer.LookupFailed || !slices.Equal(lk.ResultCodes, []string{"tx_failed", "op_unknown"}) || lk.FeeChargedStroops != 100 {
			t.Fatalf("rpc (fee bump %v): %+v, %v; want FAILED [tx_failed op_unknown] fee 100", feeBump, lk, err)
		}
		if code := transfer.SourceShortfall(env, lk); code != transfer.CodeServiceSideFailure {
			t.Fatalf("rpc (fee bump %v): SourceShortfall %q, want SERVICE_SIDE_FAILURE", feeBump, code)
		}

		hlk, err := foundTx(transfer.Lookup{}, env.InnerHash, hProtocol.Transaction{Ledger: 70, Successful: false, ResultXdr: resultXDR, FeeCharged: 100})
		if err != nil || hlk.Status != transfer.LookupFailed || !slices.Equal(hlk.ResultCodes, []string{"tx_failed", "op_unknown"}) {
			t.Fatalf("horizon (fee bump %v): %+v, %v; want FAILED [tx_failed op_unknown]", feeBump, hlk, err)
		}
	}

	// An undecodable transaction-level code: still an error, never a judgement.
	b, _ := xdr.TransactionResult{FeeCharged: 100, Result: xdr.TransactionResultResult{Code: xdr.TransactionResultCodeTxBadSeq}}.MarshalBinary()
	binary.BigEndian.PutUint32(b[8:], uint32(0xffffff9d))
	bad := base64.StdEncoding.EncodeToString(b)
	if _, err := foundTx(transfer.Lookup{}, "ab", hProtocol.Transaction{Ledger: 70, ResultXdr: bad}); err == nil {
		t.Fatal("an unknown transaction-level code was judged")
	}
}

// FuzzFailedCodesOf: whatever a ledger answers as a FAILED result, reading it never panics, and
// it is judged only as what the SDK decodes or as txFAILED with its operations in order.
func FuzzFailedCodesOf(f *testing.F) {
	for _, feeBump := range []bool{false, true} {
		s, err := forgeUnknownOpCode(feeBump)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(s)
	}
	f.Add("")
	f.Add("AAAAAAAAAGT/////AAAAAA==")
	f.Fuzz(func(t *testing.T, s string) {
		_, codes, err := failedCodesOf(s)
		if err != nil {
			return
		}
		var tr xdr.TransactionResult
		if xdr.SafeUnmarshalBase64(s, &tr) == nil {
			if !slices.Equal(codes, ResultCodes(tr)) {
				t.Fatalf("decodable %q read as %v, not %v", s, codes, ResultCodes(tr))
			}
			return
		}
		if len(codes) == 0 || codes[0] != "tx_failed" {
			t.Fatalf("undecodable %q judged %v", s, codes)
		}
	})
}
