package transfer

import (
	"context"
	"errors"
	"time"
)

// What a stored item shows to a client: replays, stored rejections and the GET view (README.md,
// "The HTTP API": three statuses).

// View is what GET /wallets/{wallet}/transfers/{key} shows: three statuses (README.md, "The HTTP API").
type View struct {
	// Status is "pending" (queued, in flight or in doubt), "success", "error" or "cancelled".
	Status          string
	TransactionHash string
	Ledger          uint32
	// InDoubt is true while the outcome is unknown and awaits reconciliation.
	InDoubt bool
	// Problem describes a stored rejection (Status "error").
	Problem *Problem
	// CancelledAt and CancelledBy (Status "cancelled") are when and by whom (Canceller.Caller)
	// it was cancelled, from the item's Audit; a history entry, whose index holds no audit, has
	// CancelledAt from the item's last write (the cancellation) and no CancelledBy.
	CancelledAt time.Time
	CancelledBy string
}

// View returns what is stored for (wallet, clientKey). Errors: *NotFoundError, or a wrapped store
// failure.
func (o *Orchestrator) View(ctx context.Context, wallet, clientKey string) (View, error) {
	rec, err := o.Store.Get(ctx, StoreKey(wallet, clientKey))
	if errors.Is(err, ErrNotFound) || err == nil && rec.Expired(o.Clock.Now()) {
		return View{}, &NotFoundError{}
	}
	if err != nil {
		return View{}, storeUnreadable(err)
	}
	return viewOf(rec), nil
}

// viewOf is what a client sees of rec: "success" with the hash and ledger (replayable), "error"
// with the stored rejection (rejected), "cancelled" with when and by whom, else "pending"
// (InDoubt while in_doubt).
func viewOf(rec Record) View {
	switch rec.Status {
	case StatusCancelled:
		v := View{Status: "cancelled", CancelledAt: rec.UpdatedAt}
		if a := rec.Audit; a != nil && a.Action == AuditCancel {
			v.CancelledAt, v.CancelledBy = a.At, a.Operator
		}
		return v
	case StatusReplayable:
		if rec.Result == nil {
			return View{Status: "success"}
		}
		return View{Status: "success", TransactionHash: rec.Result.TransactionHash, Ledger: rec.Result.Ledger}
	case StatusRejected:
		p := storedRejection(rec).Problem()
		return View{Status: "error", TransactionHash: p.TransactionHash, Problem: &p}
	default:
		return View{Status: "pending", InDoubt: rec.Status == StatusInDoubt}
	}
}

func replay(rec Record) Outcome {
	if rec.Result == nil {
		return Outcome{Replayed: true}
	}
	return Outcome{TransactionHash: rec.Result.TransactionHash, Ledger: rec.Result.Ledger, Replayed: true}
}

// replayedRejection is the stored rejection as every later call sees it (Idempotent-Replayed).
func replayedRejection(rec Record) *RejectedError {
	rej := storedRejection(rec)
	rej.replayed = true
	return rej
}

func storedRejection(rec Record) *RejectedError {
	if rec.Result == nil {
		return &RejectedError{Code: CodeTransactionFailed, Detail: "the transfer was rejected"}
	}
	r := rec.Result
	return &RejectedError{Code: r.Code, StoredStatus: r.HTTPStatus, Detail: r.Detail, TransactionHash: r.TransactionHash, ResultCodes: r.ResultCodes}
}
