package chaos

import (
	"context"
	"errors"
	"fmt"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Cancels in the async campaign (doc.go; README.md, "Asynchronous transfers", Cancel).

// cancels reports whether the async campaign cancels key k: one key in six, whose first caller
// sends a DELETE right after its POST, racing the submitter's pollers and the key's other callers
// under the same faults and crashes.
func (r *rig) cancels(k int) bool { return r.cfg.Async && k%6 == 4 }

// cancelAsync is a DELETE of key k by caller (Orchestrator.Cancel); it counts the answer and
// reports whether it was 200 (the transfer is cancelled).
func (r *rig) cancelAsync(ctx context.Context, k int, caller string) bool {
	_, err := r.orch.Cancel(ctx, r.input(k).Request.Wallet(), r.input(k).ClientKey, transfer.Canceller{Caller: caller})
	var nc *transfer.NotCancellableError
	switch {
	case err == nil:
		r.answers.add("cancel: cancelled")
		return true
	case errors.As(err, &nc):
		r.answers.add("cancel: not cancellable, " + nc.State)
	default:
		r.answers.add("cancel: " + r.answer(transfer.Outcome{}, err))
	}
	return false
}

// judgeCancelled is what must hold of key (rec, read with err) once it ended cancelled: the
// item is cancelled, holds no envelope or lease, no transaction applied for it (txs) and no
// client was told of a success (seen).
func judgeCancelled(key string, rec transfer.Record, err error, txs []stellarsim.AppliedTx, seen []string) []string {
	switch {
	case err != nil || rec.Status != transfer.StatusCancelled:
		return []string{fmt.Sprintf("key %s: a retry answered TRANSFER_CANCELLED, the item is %s (%v)", key, rec.Status, err)}
	case len(txs) > 0:
		return []string{fmt.Sprintf("key %s: cancelled, but %d transactions applied (first %s)", key, len(txs), short(txs[0].Hash))}
	case len(seen) > 0:
		return []string{fmt.Sprintf("key %s: cancelled, but a client saw success %s", key, seen[0])}
	case rec.Envelope != nil || rec.LeaseOwner != "":
		return []string{fmt.Sprintf("key %s: cancelled, but the item holds an envelope or a lease", key)}
	}
	return nil
}
