package stellarsim

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"

	"github.com/stellar/go-stellar-sdk/xdr"
)

// serveFriendbot funds ?addr= with Options.FriendbotAmount from the root
// account. Like the other helpers it writes the ledger directly (no
// transaction is submitted or recorded), so it works with manual closing too.
// The answer is shaped as Horizon's transaction resource, which is what
// horizonclient.Fund parses; an existing account gets a 400
// transaction_failed with op_already_exists, as the real friendbot answers.
func (n *Network) serveFriendbot(w http.ResponseWriter, r *http.Request) {
	addr := r.URL.Query().Get("addr")
	if err := validAddress(addr); err != nil {
		writeProblem(w, problem{Type: "bad_request", Title: "Bad Request", Status: http.StatusBadRequest,
			Detail: "The request you sent was invalid in some way.", Extras: map[string]any{"invalid_field": "addr", "reason": err.Error()}})
		return
	}
	n.mu.Lock()
	err := n.createAccountLocked(addr, n.opts.FriendbotAmount)
	latest := n.latestLocked()
	var meta string
	if err == nil {
		meta, err = n.createdAccountMetaLocked(addr)
	}
	n.mu.Unlock()
	if err != nil {
		if errors.Is(err, ErrExists) {
			writeProblem(w, problem{Type: "transaction_failed", Title: "Transaction Failed", Status: http.StatusBadRequest,
				Detail: "The transaction failed when submitted to the stellar network.",
				Extras: map[string]any{"result_codes": map[string]any{"transaction": "tx_failed", "operations": []string{"op_already_exists"}}}})
			return
		}
		writeProblem(w, problem{Type: "server_error", Title: "Internal Server Error", Status: http.StatusInternalServerError, Detail: err.Error()})
		return
	}
	h := sha256.Sum256([]byte("friendbot:" + addr))
	hash := hex.EncodeToString(h[:])
	writeJSON(w, http.StatusOK, map[string]any{
		"id": hash, "hash": hash, "successful": true, "ledger": latest.Sequence,
		"created_at": latest.CloseTime, "source_account": n.root.Address(), "fee_account": n.root.Address(),
		"source_account_sequence": "0", "fee_charged": "0", "max_fee": "0", "operation_count": 1,
		"envelope_xdr": "", "result_xdr": "", "result_meta_xdr": meta, "memo_type": "none", "signatures": []string{},
	})
}

// createdAccountMetaLocked is a TransactionMeta whose one operation created account addr, as the
// create-account transaction of the real friendbot records it. The JS SDK's
// rpc.Server.requestAirdrop reads the new account's sequence number from result_meta_xdr
// (findCreatedAccountSequenceInTransactionMeta) and would otherwise look the hash up with
// getTransaction, which finds nothing here: no transaction is applied. Callers hold n.mu.
func (n *Network) createdAccountMetaLocked(addr string) (string, error) {
	a := n.state.accounts[addr]
	if a == nil {
		return "", ErrNotFound
	}
	data, err := a.entryXDR()
	if err != nil {
		return "", err
	}
	meta := txMeta(1, false, nil)
	meta.V4.Operations[0].Changes = xdr.LedgerEntryChanges{{
		Type:    xdr.LedgerEntryChangeTypeLedgerEntryCreated,
		Created: &xdr.LedgerEntry{LastModifiedLedgerSeq: xdr.Uint32(a.lastModified), Data: data},
	}}
	return xdr.MarshalBase64(meta)
}
