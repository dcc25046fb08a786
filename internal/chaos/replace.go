package chaos

import (
	"context"
	"fmt"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Replace passes a replacement by fee (transfer.Replacer) through to the ledger, so the campaign's
// outbid envelopes are replaced as in production. The replacement's outer hash is another hash
// of the same key: it is recorded for ownerOf, or a replacement that lands would belong to no key.
func (l *faultyLedger) Replace(ctx context.Context, env transfer.Envelope) (transfer.Envelope, error) {
	r, ok := l.Ledger.(transfer.Replacer)
	if !ok {
		return transfer.Envelope{}, fmt.Errorf("%w: the ledger cannot replace", transfer.ErrNoReplacement)
	}
	next, err := r.Replace(ctx, env)
	if err != nil {
		return next, err
	}
	l.mu.Lock()
	if id, ok := l.owner[env.InnerHash]; ok && next.OuterHash != "" {
		l.owner[next.OuterHash] = id
	}
	l.mu.Unlock()
	l.events.add("replacements")
	return next, nil
}

var _ transfer.Replacer = (*faultyLedger)(nil)

// viewHashes is every hash of an operator's view of an item: the inner hash, then every outer
// hash (OuterHashes when it was replaced by fee, else OuterHash alone).
func viewHashes(it reconcile.Item) []string {
	e := transfer.Envelope{InnerHash: it.InnerHash, OuterHash: it.OuterHash, OuterHashes: it.OuterHashes}
	return e.Hashes()
}
