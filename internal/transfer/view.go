package transfer

import (
	"context"
	"errors"
	"strings"
	"time"
)

// What a stored item shows to a client: replays, stored rejections and the GET view (README.md,
// "The HTTP API": three statuses).

// View is what GET /wallets/{wallet}/transfers/{key} shows: three statuses (README.md, "The HTTP API").
type View struct {
	// Status is "pending" (queued, in flight or in doubt), "success", "error", "cancelled", or
	// "released" (only outside the replay window: an in-doubt transfer released, nothing moved).
	Status          string
	TransactionHash string
	Ledger          uint32
	// OperationIndex is the 0-based index of this transfer's operation in TransactionHash's
	// transaction when a batch's transaction paid or rejected it (OperationIndexOf); nil for a
	// transfer paid alone and while nothing is settled.
	OperationIndex *int
	// InDoubt is true while the outcome is unknown and awaits reconciliation.
	InDoubt bool
	// Problem describes a stored rejection (Status "error").
	Problem *Problem
	// CancelledAt and CancelledBy (Status "cancelled") are when and by whom (Canceller.Caller)
	// it was cancelled, from the item's Audit; a history entry, whose index holds no audit, has
	// CancelledAt from the item's last write (the cancellation) and no CancelledBy.
	CancelledAt time.Time
	CancelledBy string
	// Wallet is the wallet the transfer paid, as its request named it (a muxed address with its
	// account and id); Memo its memo, zero for none.
	Wallet Wallet
	Memo   Memo
	// OutsideReplayWindow is true when the key's replay window has ended (the item's TTL passed,
	// or its in-doubt item was released): the answer is the lasting record of its last settled
	// transfer (archive.go), and a POST with the key now starts a new transfer.
	OutsideReplayWindow bool
	// CreatedAt is when the transfer this view describes was claimed: with OutsideReplayWindow it
	// tells a record of an earlier transfer of the key from a transfer claimed after it (whose
	// item may be gone: released with nothing moved, before its own record was written).
	CreatedAt time.Time
}

// View returns what is stored for (wallet, clientKey): the item of the key in wallet's scope
// (Wallet.Scope). A muxed wallet sees only its own transfers: a key of its account's scope that
// paid the account itself or another of its muxed addresses is not found, and so is an item
// whose request names no wallet. Errors: *NotFoundError, or a wrapped store failure.
//
// The live item answers while it exists, even once expired (DynamoDB deletes expired items days
// late): it is the key's newest incarnation, so no older archive can be answered in its place. An
// expired one answers with OutsideReplayWindow. Once the item is gone, the newest incarnation's
// Archive (Orchestrator.Archives) answers, OutsideReplayWindow, while it is retained and under
// the same rule of which wallet sees it.
func (o *Orchestrator) View(ctx context.Context, wallet Wallet, clientKey string) (View, error) {
	key := StoreKey(wallet.Scope(), clientKey)
	now := o.Clock.Now()
	rec, err := o.Store.Get(ctx, key)
	switch {
	case err == nil:
		if (wallet.Muxed() || rec.Request.WalletAddress != "") && !shows(wallet, rec) {
			return View{}, &NotFoundError{}
		}
		v := viewOf(rec)
		v.OutsideReplayWindow = rec.Expired(now)
		return v, nil
	case !errors.Is(err, ErrNotFound):
		return View{}, storeUnreadable(err)
	case o.Archives == nil:
		return View{}, &NotFoundError{}
	}
	a, err := o.Archives.LatestArchive(ctx, key)
	if errors.Is(err, ErrNotFound) || err == nil && !a.Retained(now) {
		return View{}, &NotFoundError{}
	}
	if err != nil {
		return View{}, storeUnreadable(err)
	}
	if !shows(wallet, a.Record) {
		// The store key hashes the wallet to 64 bits, and a muxed wallet sees its own transfers
		// only: the archive's own wallet has the last word.
		return View{}, &NotFoundError{}
	}
	v := viewOf(a.Record)
	v.OutsideReplayWindow = true
	return v, nil
}

// shows reports whether a view or history of wallet shows rec: a record of its scope whose
// request names wallet itself or, for an account's view, any muxed address of that account.
// Addresses are compared upper case, as canonical.
func shows(wallet Wallet, rec Record) bool {
	req := rec.Request.Wallet()
	if !strings.EqualFold(req.Scope(), wallet.Scope()) {
		return false
	}
	return !wallet.Muxed() || strings.EqualFold(req.Address, wallet.Address)
}

// viewOf is what a client sees of rec: "success" with the hash and ledger (replayable), "error"
// with the stored rejection (rejected), "cancelled" with when and by whom, else "pending"
// (InDoubt while in_doubt), or "released" for the archive of an in-doubt item released (nothing
// moved); with the wallet and memo its request named.
func viewOf(rec Record) View {
	v := viewStatus(rec)
	v.Wallet, v.Memo, v.CreatedAt = rec.Request.Wallet(), rec.Request.Memo, rec.CreatedAt
	if i, ok := OperationIndexOf(rec); ok {
		v.OperationIndex = &i
	}
	return v
}

func viewStatus(rec Record) View {
	switch rec.Status {
	case StatusCancelled:
		v := View{Status: "cancelled", CancelledAt: rec.UpdatedAt}
		if a := rec.Audit; a != nil && a.Action == AuditCancel {
			v.CancelledAt, v.CancelledBy = a.At, a.Operator
		}
		return v
	case StatusReleased:
		return View{Status: "released"}
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
	out := Outcome{TransactionHash: rec.Result.TransactionHash, Ledger: rec.Result.Ledger, Replayed: true}
	if i, ok := OperationIndexOf(rec); ok {
		out.OperationIndex = &i
	}
	return out
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
	rej := &RejectedError{Code: r.Code, StoredStatus: r.HTTPStatus, Detail: r.Detail, TransactionHash: r.TransactionHash, ResultCodes: r.ResultCodes}
	if i, ok := OperationIndexOf(rec); ok {
		rej.OperationIndex = &i
	}
	return rej
}
