package chaos

import (
	"fmt"
	"strconv"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The campaign's requests: one per key, each with its own amount, and in classic runs muxed
// destinations and memos mixed in; and the check that each transaction carries its own.

func (r *rig) input(k int) transfer.Input {
	// Each key has its own amount, so a transaction's amount names the key it belongs to.
	amount := strconv.Itoa(k + 1)
	op := transfer.Withdraw
	if r.contract != "" && k%2 == 0 {
		op = transfer.Deposit
	}
	in := transfer.Input{ClientKey: fmt.Sprintf("chaos-key-%06d", k), Request: transfer.Request{
		OperationType: op, WalletAddress: r.wallet, Amount: amount, Asset: "USDC",
		Stroops: int64(k+1) * transfer.StroopsPerUnit,
	}}
	if r.contract == "" {
		// Classic payments mix in muxed destinations (an M... of the wallet, id k) and id memos:
		// their keys are the wallet's all the same (transfer.Wallet.Scope), and judge checks that
		// each transaction carries exactly its key's.
		if k%3 == 1 {
			m, err := xdr.MuxedAccountFromAccountId(r.wallet, uint64(k))
			if err != nil {
				panic("chaos: the wallet has no muxed address: " + err.Error())
			}
			in.Request.WalletAddress, in.Request.Account, in.Request.MuxedID = m.Address(), r.wallet, uint64(k)
		}
		if k%4 == 2 {
			in.Request.Memo = transfer.Memo{Type: transfer.MemoID, Value: strconv.Itoa(k)}
		}
	}
	return in
}

// carriesItsRequest reports how tx differs from key k's request in what a muxed destination and
// a memo put on chain: the muxed id of its payment (none for a G... wallet) and its memo, as the
// local network's record shows them from the envelope. "" when it carries exactly its own.
func (r *rig) carriesItsRequest(k int, tx stellarsim.AppliedTx) string {
	req := r.input(k).Request
	if len(tx.Ops) != 1 || tx.Ops[0].Type != "payment" {
		return ""
	}
	wantID, wantMemoType, wantMemo := "", "none", ""
	if req.Account != "" {
		wantID = strconv.FormatUint(req.MuxedID, 10)
	}
	if !req.Memo.IsZero() {
		wantMemoType, wantMemo = string(req.Memo.Type), req.Memo.Value
	}
	if tx.Ops[0].DestinationMuxedID != wantID || tx.Ops[0].Destination != r.wallet || tx.MemoType != wantMemoType || tx.Memo != wantMemo {
		return fmt.Sprintf("transaction %s pays %s (muxed id %q) with memo %s %q, want %s (muxed id %q) with memo %s %q",
			short(tx.Hash), tx.Ops[0].Destination, tx.Ops[0].DestinationMuxedID, tx.MemoType, tx.Memo, r.wallet, wantID, wantMemoType, wantMemo)
	}
	return ""
}

func (r *rig) storeKey(k int) string { return transfer.StoreKey(r.wallet, r.input(k).ClientKey) }
