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

// walletOf is key k's wallet (G...): the run's wallets in turn (Config.Wallets), so that a batch,
// which holds one payment per destination, can hold several keys.
func (r *rig) walletOf(k int) string {
	if len(r.wallets) == 0 {
		return r.wallet
	}
	return r.wallets[k%len(r.wallets)]
}

// keyOfPayment is the key whose payment op is (the amount names the key, in whole units), and
// whether op is one: a payment of the key's amount to the key's wallet.
func (r *rig) keyOfPayment(op stellarsim.OpSummary) (int, bool) {
	if op.Type != "payment" || op.Amount <= 0 || op.Amount%transfer.StroopsPerUnit != 0 {
		return 0, false
	}
	k := int(op.Amount/transfer.StroopsPerUnit) - 1
	if k < 0 || k >= r.cfg.Keys || op.Destination != r.walletOf(k) {
		return 0, false
	}
	return k, true
}

// paysKey reports how op differs from key k's payment (its destination, muxed id and amount), ""
// when it is exactly key k's.
func (r *rig) paysKey(k int, op stellarsim.OpSummary) string {
	req := r.input(k).Request
	wantID := ""
	if req.Account != "" {
		wantID = strconv.FormatUint(req.MuxedID, 10)
	}
	if op.Type != "payment" || op.Destination != r.walletOf(k) || op.DestinationMuxedID != wantID || op.Amount != req.Stroops {
		return fmt.Sprintf("%s of %d to %s (muxed id %q), want a payment of %d to %s (muxed id %q)",
			op.Type, op.Amount, op.Destination, op.DestinationMuxedID, req.Stroops, r.walletOf(k), wantID)
	}
	return ""
}

func (r *rig) input(k int) transfer.Input {
	// Each key has its own amount, so a transaction's amount names the key it belongs to.
	amount := strconv.Itoa(k + 1)
	op := transfer.Withdraw
	if r.contract != "" && k%2 == 0 {
		op = transfer.Deposit
	}
	wallet := r.walletOf(k)
	in := transfer.Input{ClientKey: fmt.Sprintf("chaos-key-%06d", k), Request: transfer.Request{
		OperationType: op, WalletAddress: wallet, Amount: amount, Asset: "USDC",
		Stroops: int64(k+1) * transfer.StroopsPerUnit,
	}}
	if r.contract == "" {
		// Classic payments mix in muxed destinations (an M... of the wallet, id k) and id memos:
		// their keys are the wallet's all the same (transfer.Wallet.Scope), and judge checks that
		// each transaction carries exactly its key's.
		if k%3 == 1 {
			m, err := xdr.MuxedAccountFromAccountId(wallet, uint64(k))
			if err != nil {
				panic("chaos: the wallet has no muxed address: " + err.Error())
			}
			in.Request.WalletAddress, in.Request.Account, in.Request.MuxedID = m.Address(), wallet, uint64(k)
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
	if tx.Ops[0].DestinationMuxedID != wantID || tx.Ops[0].Destination != r.walletOf(k) || tx.MemoType != wantMemoType || tx.Memo != wantMemo {
		return fmt.Sprintf("transaction %s pays %s (muxed id %q) with memo %s %q, want %s (muxed id %q) with memo %s %q",
			short(tx.Hash), tx.Ops[0].Destination, tx.Ops[0].DestinationMuxedID, tx.MemoType, tx.Memo, r.walletOf(k), wantID, wantMemoType, wantMemo)
	}
	return ""
}

func (r *rig) storeKey(k int) string { return transfer.StoreKey(r.walletOf(k), r.input(k).ClientKey) }
