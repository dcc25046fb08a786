package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// judge checks the four invariants against the ledger and the store.
func (r *rig) judge(seen [][]string, settled, cancelled, toldCancelled []bool, rejected []string, rep *Report) []string {
	var bad []string
	applied := r.net.Applied()[r.setupTxs:]
	if r.cong != nil {
		// The congestion's own payments belong to the network, not to the campaign.
		applied = r.cong.withoutBackground(applied, r.vaultKey.Address(), r.feeAccount)
	}
	rep.Applied = len(applied)
	// Every transaction is traced to the key whose call prepared it (by its hash); restores of
	// archived contract entries move nothing and belong to no key.
	keyOf := map[string]int{}
	for k := range r.cfg.Keys {
		in := r.input(k)
		keyOf[in.Request.WalletAddress+"/"+in.Request.Amount] = k
	}
	// perKey are the transactions that decided each key: its payment applied (SUCCESS), or a
	// FAILED transaction in which its own operation failed. A FAILED batch in which the key's
	// operation succeeded (a neighbour's failed) moved nothing and decided nothing for it: the key
	// is requeued and paid by a later transaction.
	perKey := map[int][]stellarsim.AppliedTx{}
	var balance int64 = openingBalance
	for _, tx := range applied {
		if len(tx.Ops) == 1 && tx.Ops[0].Type == "restore_footprint" {
			rep.Applied--
			rep.Restores++
			continue
		}
		if restoresArchived(tx.EnvelopeXDR) {
			rep.RestoringInvocations++
		}
		if r.contract == "" && len(tx.Ops) > 0 {
			// Classic payments are counted from the network's operations: each names its key by
			// its destination and amount.
			bad = append(bad, r.attribute(tx, perKey, rep)...)
			continue
		}
		id, ok := r.ledger.ownerOf(tx.Hash)
		k, known := keyOf[id]
		if !ok || !known {
			bad = append(bad, fmt.Sprintf("transaction %s (%s) belongs to no key", tx.Hash, tx.Status))
			continue
		}
		perKey[k] = append(perKey[k], tx)
		if diff := r.carriesItsRequest(k, tx); diff != "" {
			bad = append(bad, fmt.Sprintf("key %s: %s", r.input(k).ClientKey, diff))
		}
		if tx.Status == "SUCCESS" {
			if in := r.input(k); in.Request.OperationType == transfer.Deposit {
				balance += in.Request.Stroops
			} else {
				balance -= in.Request.Stroops
			}
		}
	}
	if r.contract != "" {
		// The money itself: the wallet's vault balance moved by each key's amount exactly once.
		got, err := r.vaults.Balance(r.contract, r.wallet)
		if err != nil || got.Amount != balance {
			bad = append(bad, fmt.Sprintf("vault balance %d (%v), want %d from the applied transfers", got.Amount, err, balance))
		}
	}
	for k := range r.cfg.Keys {
		key := r.input(k).ClientKey
		txs := perKey[k]
		if len(txs) > 1 {
			var b strings.Builder
			fmt.Fprintf(&b, "key %s: %d transactions applied its payment or failed it:", key, len(txs))
			for _, tx := range txs {
				fmt.Fprintf(&b, " %s (ledger %d)", short(tx.Hash), tx.Ledger)
			}
			b.WriteString("; the item's writes:")
			for _, line := range r.held.traceOf(r.storeKey(k)) {
				b.WriteString("\n      " + line)
			}
			bad = append(bad, b.String())
		}
		rec, err := r.store.Get(context.Background(), r.storeKey(k))
		if toldCancelled[k] && (err != nil || rec.Status != transfer.StatusCancelled) {
			bad = append(bad, fmt.Sprintf("key %s: a DELETE answered cancelled, the item is %s (%v)", key, rec.Status, err))
		}
		if cancelled[k] || err == nil && rec.Status == transfer.StatusCancelled {
			bad = append(bad, judgeCancelled(key, rec, err, txs, seen[k])...)
			rep.Cancelled++
			continue
		}
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("key %s: no item after healing: %v", key, err))
		case rec.Status == transfer.StatusRejected && rejected[k] != "":
			rep.RejectedOnChain++
			if why := r.failedItself(k, rec, txs); why != "" {
				bad = append(bad, fmt.Sprintf("key %s: rejected with %s: %s", key, short(rejected[k]), why))
			}
		case rec.Status != transfer.StatusReplayable:
			var b strings.Builder
			fmt.Fprintf(&b, "key %s: item is %s after healing (envelope %s, maxTime %d); the item's writes:", key, rec.Status, short(envHash(rec)), envMaxTime(rec))
			for _, line := range r.held.traceOf(r.storeKey(k)) {
				b.WriteString("\n      " + line)
			}
			bad = append(bad, b.String())
		case len(txs) == 1 && rec.Result.TransactionHash != txs[0].Hash:
			bad = append(bad, fmt.Sprintf("key %s: item says %s, the ledger applied %s", key, rec.Result.TransactionHash, txs[0].Hash))
		case len(txs) == 0:
			bad = append(bad, fmt.Sprintf("key %s: replayable with %s but nothing applied", key, rec.Result.TransactionHash))
		case rec.Batch != nil:
			if why := r.paidAt(k, rec.Result.TransactionHash, rec.Batch.Index); why != "" {
				bad = append(bad, fmt.Sprintf("key %s: replayable with operation %d of %s: %s", key, rec.Batch.Index, short(rec.Result.TransactionHash), why))
			}
		}
		for _, h := range seen[k] {
			tx, ok := r.net.Transaction(h)
			if !ok || tx.Status != "SUCCESS" {
				bad = append(bad, fmt.Sprintf("key %s: a client saw success %s, the ledger has %v/%s", key, h, ok, tx.Status))
				continue
			}
			if r.contract == "" && r.paidIn(k, tx) != 1 {
				bad = append(bad, fmt.Sprintf("key %s: a client saw success %s, which holds %d payments of the key", key, short(h), r.paidIn(k, tx)))
			}
		}
		if !settled[k] {
			bad = append(bad, fmt.Sprintf("key %s: never landed after healing", key))
		}
	}
	return bad
}

// envMaxTime is the maxTime of the envelope a record holds (0 for none), for traces.
func envMaxTime(rec transfer.Record) int64 {
	if rec.Envelope == nil {
		return 0
	}
	return rec.Envelope.MaxTime
}

// attribute files each operation of tx, a classic transaction of the service, under the key it
// pays (keyOfPayment) in perKey when it decided that key (its transaction SUCCESS, or FAILED with
// this operation failing; a lone operation's FAILED always decides), and returns what is wrong: an
// operation that pays no key, a key paid twice in one transaction, a memo on a batch, a lone
// payment that does not carry its key's muxed id and memo (carriesItsRequest).
func (r *rig) attribute(tx stellarsim.AppliedTx, perKey map[int][]stellarsim.AppliedTx, rep *Report) []string {
	var bad []string
	inTx := map[int]bool{}
	for i, op := range tx.Ops {
		k, ok := r.keyOfPayment(op)
		if !ok {
			bad = append(bad, fmt.Sprintf("transaction %s (%s) operation %d (%s of %d to %s) pays no key", short(tx.Hash), tx.Status, i, op.Type, op.Amount, op.Destination))
			continue
		}
		key := r.input(k).ClientKey
		if inTx[k] {
			bad = append(bad, fmt.Sprintf("key %s: transaction %s holds its payment twice", key, short(tx.Hash)))
		}
		inTx[k] = true
		if why := r.paysKey(k, op); why != "" {
			bad = append(bad, fmt.Sprintf("key %s: transaction %s operation %d is a %s", key, short(tx.Hash), i, why))
		}
		if len(tx.Ops) == 1 {
			if diff := r.carriesItsRequest(k, tx); diff != "" {
				bad = append(bad, fmt.Sprintf("key %s: %s", key, diff))
			}
			perKey[k] = append(perKey[k], tx)
			continue
		}
		rep.BatchOps[tx.Status]++
		ownFailed := i < len(tx.OpResults) && tx.OpResults[i] != "op_success"
		switch {
		case tx.Status == "SUCCESS":
			perKey[k] = append(perKey[k], tx)
		case ownFailed:
			perKey[k] = append(perKey[k], tx)
			rep.BatchOps["FAILED_own_operation"]++
		}
	}
	if len(tx.Ops) > 1 {
		rep.BatchTxs[tx.Status]++
		if tx.MemoType != "none" && tx.MemoType != "" {
			bad = append(bad, fmt.Sprintf("transaction %s: a batch of %d with memo %s %q", short(tx.Hash), len(tx.Ops), tx.MemoType, tx.Memo))
		}
		if len(tx.Ops) > rep.LargestBatch {
			rep.LargestBatch = len(tx.Ops)
		}
	}
	return bad
}

// paidIn is how many operations of tx pay key k exactly (paysKey).
func (r *rig) paidIn(k int, tx stellarsim.AppliedTx) int {
	n := 0
	for _, op := range tx.Ops {
		if r.paysKey(k, op) == "" {
			n++
		}
	}
	return n
}

// paidAt says why operation index of the transaction hash is not key k's payment applied ("" when
// it is: the transaction landed SUCCESS and that operation pays exactly the key's request).
func (r *rig) paidAt(k int, hash string, index int) string {
	tx, ok := r.net.Transaction(hash)
	switch {
	case !ok:
		return "no such transaction landed"
	case tx.Status != "SUCCESS":
		return "the transaction is " + tx.Status
	case index < 0 || index >= len(tx.Ops):
		return fmt.Sprintf("the transaction has %d operations", len(tx.Ops))
	}
	return r.paysKey(k, tx.Ops[index])
}

// failedItself says why rec, key k's stored rejection, is not a destination's refusal on chain (""
// when it is): the one transaction that decided the key (txs) landed FAILED, the item names it,
// and the key's own operation in it failed.
func (r *rig) failedItself(k int, rec transfer.Record, txs []stellarsim.AppliedTx) string {
	if rec.Result == nil {
		return "the item holds no result"
	}
	if len(txs) != 1 || txs[0].Status != "FAILED" || txs[0].Hash != rec.Result.TransactionHash {
		return fmt.Sprintf("%d transactions decided the key, want the one FAILED transaction the item names", len(txs))
	}
	tx := txs[0]
	for i, op := range tx.Ops {
		if r.paysKey(k, op) != "" {
			continue
		}
		if len(tx.Ops) == 1 || (i < len(tx.OpResults) && tx.OpResults[i] != "op_success") {
			return ""
		}
		return fmt.Sprintf("its operation %d succeeded (%v): a neighbour's failure is no rejection of this key", i, tx.OpResults)
	}
	return "the transaction holds no payment of the key"
}
