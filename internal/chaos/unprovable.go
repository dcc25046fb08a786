package chaos

import (
	"context"

	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// settleUnprovable is, after healing, the operator that the README's table of deployments calls
// for under a load balancer (Config.LoadBalanced): there death is proven by the source account's
// sequence number alone, so an envelope whose source's sequence number moved past its own before
// it was proven dead (its channel leased again once a ledger closed after its maxTime, or, with
// the vault as the only source, the vault's next transfer) stays in doubt until an operator looks
// it up in full history and forces the discard. Only such items are handed over: in_doubt, past
// maxTime by the ledger, never applied (the local network's full history), their source's
// sequence number at or past the envelope's (so no later ledger can prove anything). Every other
// item must still be settled by the service's own proof; a run that is not load balanced never
// calls this. A batched key is judged by its batch's envelope (the batch item's XDR), each key
// of the batch discarded alone. It returns how many discards it forced.
func (r *rig) settleUnprovable(ctx context.Context) int {
	forced := 0
	for k := range r.cfg.Keys {
		rec, err := r.store.Get(ctx, r.storeKey(k))
		if err != nil || rec.Status != transfer.StatusInDoubt || rec.Envelope == nil {
			continue
		}
		env := *rec.Envelope
		if rec.Batch != nil {
			// A batched key's item holds the envelope's hashes; its XDR is the batch item's.
			b, err := r.store.GetBatch(ctx, env.InnerHash)
			if err != nil {
				continue
			}
			env = b.Envelope
		}
		if !r.unprovable(env) {
			continue
		}
		got, err := r.ops.Do(ctx, reconcile.Request{Action: reconcile.ActionGet, StoreKey: rec.StoreKey})
		if err != nil {
			continue
		}
		it := got.(*reconcile.GetAnswer).Item
		if ch := it.Chain; ch == nil || ch.Error != "" || !ch.MaxTimePassed || ch.HistoryCovers || ch.ProvenDead || ch.Status != string(transfer.LookupNotFound) {
			continue
		}
		_, err = r.ops.Do(ctx, reconcile.Request{Action: reconcile.ActionResolve, StoreKey: it.StoreKey, Operator: "chaos-operator",
			Discard: true, Force: true, Reason: "not in full history, maxTime has passed, its sequence number is used", InnerHash: it.InnerHash})
		r.operated("heal_forced_discard", err)
		if err == nil {
			forced++
		}
	}
	return forced
}

// unprovable reports whether the local network never applied env and its source account's
// sequence number is at or past env's: no sequence-number proof can ever hold for it.
func (r *rig) unprovable(env transfer.Envelope) bool {
	for _, h := range env.Hashes() {
		if _, ok := r.net.Transaction(h); h != "" && ok {
			return false
		}
	}
	var e xdr.TransactionEnvelope
	if err := xdr.SafeUnmarshalBase64(env.XDR, &e); err != nil {
		return false
	}
	src := e.SourceAccount().ToAccountId()
	acc, ok := r.net.Account(src.Address())
	return ok && acc.Sequence >= e.SeqNum()
}
