package chaos

import (
	"context"
	"fmt"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// judge checks the four invariants against the ledger and the store.
func (r *rig) judge(seen [][]string, settled, cancelled, toldCancelled []bool, rep *Report) []string {
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
			fmt.Fprintf(&b, "key %s: %d transactions applied:", key, len(txs))
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
		}
		for _, h := range seen[k] {
			tx, ok := r.net.Transaction(h)
			if !ok || tx.Status != "SUCCESS" {
				bad = append(bad, fmt.Sprintf("key %s: a client saw success %s, the ledger has %v/%s", key, h, ok, tx.Status))
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
