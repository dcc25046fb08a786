package stellarsim

import (
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"

	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Horizon's transaction resources: GET /transactions/{hash}, by inner or outer hash.

func (n *Network) hTransaction(w http.ResponseWriter, r *http.Request) {
	hash := strings.ToLower(r.PathValue("hash"))
	n.mu.Lock()
	a, ok := n.byHash[hash]
	latest := n.viewOf(r, "horizon").latest
	oldest := n.oldestAt(latest)
	n.mu.Unlock()
	if !ok || a.Ledger < oldest || a.Ledger > latest {
		writeProblem(w, problemNotFound)
		return
	}
	writeHAL(w, http.StatusOK, n.horizonTx(n.links(r), a, hash))
}

// horizonTx renders an applied transaction as Horizon does. Asked by the
// inner hash of a fee bump, Horizon answers with the inner hash as "hash".
func (n *Network) horizonTx(lb links, a *AppliedTx, asked string) hProtocol.Transaction {
	var env xdr.TransactionEnvelope
	_ = xdr.SafeUnmarshalBase64(a.EnvelopeXDR, &env)
	tx := hProtocol.Transaction{
		ID: a.Hash, PT: strconv.FormatInt(int64(a.Ledger)<<32|int64(a.ApplicationOrder)<<12, 10),
		Successful: a.Status == "SUCCESS", Hash: a.Hash, Ledger: int32(a.Ledger), LedgerCloseTime: a.CloseTime,
		Account: a.Source, AccountSequence: a.Sequence, FeeAccount: a.FeeSource, FeeCharged: a.FeeCharged,
		MaxFee: int64(env.Fee()), OperationCount: int32(len(a.Ops)),
		EnvelopeXdr: a.EnvelopeXDR, ResultXdr: a.ResultXDR, ResultMetaXdr: a.ResultMetaXDR,
		MemoType: "none", Signatures: sigStrings(env.Signatures()),
	}
	if a.FeeBumpHash != "" {
		tx.FeeBumpTransaction = &hProtocol.FeeBumpTransaction{Hash: a.FeeBumpHash, Signatures: sigStrings(env.FeeBumpSignatures())}
		tx.InnerTransaction = &hProtocol.InnerTransaction{Hash: a.Hash, Signatures: sigStrings(env.Signatures()), MaxFee: int64(env.Fee())}
		if asked != a.Hash {
			tx.ID, tx.Hash = a.FeeBumpHash, a.FeeBumpHash
			tx.MaxFee = env.FeeBumpFee()
			tx.Signatures = tx.FeeBumpTransaction.Signatures
		}
	}
	tx.MemoType, tx.Memo = horizonMemo(env.Memo())
	if tb := env.TimeBounds(); tb != nil {
		tx.Preconditions = &hProtocol.TransactionPreconditions{TimeBounds: &hProtocol.TransactionPreconditionsTimebounds{
			MinTime: strconv.FormatUint(uint64(tb.MinTime), 10)}}
		if tb.MaxTime != 0 {
			tx.Preconditions.TimeBounds.MaxTime = strconv.FormatUint(uint64(tb.MaxTime), 10)
		}
	}
	tx.Links.Self = lb.link("/transactions/" + tx.Hash)
	tx.Links.Transaction = tx.Links.Self
	tx.Links.Account = lb.link("/accounts/" + a.Source)
	tx.Links.Ledger = lb.link("/ledgers/" + strconv.FormatUint(uint64(a.Ledger), 10))
	return tx
}

func sigStrings(sigs []xdr.DecoratedSignature) []string {
	out := make([]string, len(sigs))
	for i, s := range sigs {
		out[i] = base64.StdEncoding.EncodeToString(s.Signature)
	}
	return out
}

// resultCodes is Horizon's extras.result_codes for a TransactionResult.
func resultCodes(res xdr.TransactionResult) hProtocol.TransactionResultCodes {
	rc := hProtocol.TransactionResultCodes{TransactionCode: horizonTxCode(res.Result.Code)}
	ops := res.Result.Results
	if p := res.Result.InnerResultPair; p != nil {
		rc.InnerTransactionCode = horizonTxCode(p.Result.Result.Code)
		ops = p.Result.Result.Results
	}
	if ops != nil {
		for _, o := range *ops {
			rc.OperationCodes = append(rc.OperationCodes, opCodeName(o))
		}
	}
	return rc
}

func txFailedProblem(envXDR string, res xdr.TransactionResult) problem {
	resXDR, _ := xdr.MarshalBase64(res)
	return problem{Type: "transaction_failed", Title: "Transaction Failed", Status: http.StatusBadRequest,
		Detail: "The transaction failed when submitted to the stellar network. The `extras.result_codes` field on this response contains further details.  Descriptions of each code can be found at: https://developers.stellar.org/docs/data/apis/horizon/api-reference/errors/http-status-codes/horizon-specific/transaction-failed",
		Extras: map[string]any{"envelope_xdr": envXDR, "result_codes": resultCodes(res), "result_xdr": resXDR}}
}

// horizonMemo is a transaction's memo as Horizon's transaction record shows it (services/horizon
// resourceadapter, PopulateTransaction: memo_type, and memo as the text, the id in decimal, or a
// hash or return hash in standard base64); "none" and "" without one.
func horizonMemo(m xdr.Memo) (memoType, memo string) {
	switch m.Type {
	case xdr.MemoTypeMemoText:
		return "text", m.MustText()
	case xdr.MemoTypeMemoId:
		return "id", strconv.FormatUint(uint64(m.MustId()), 10)
	case xdr.MemoTypeMemoHash:
		h := m.MustHash()
		return "hash", base64.StdEncoding.EncodeToString(h[:])
	case xdr.MemoTypeMemoReturn:
		h := m.MustRetHash()
		return "return", base64.StdEncoding.EncodeToString(h[:])
	}
	return "none", ""
}
