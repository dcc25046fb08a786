package transfer

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The typed errors a call ends with, by what went wrong (doc.go, "Classification").

func failingCode(rec Record) string {
	if rec.Result != nil && rec.Result.Code != "" {
		return rec.Result.Code
	}
	return CodeInternalError
}

// sendFailure is the failing code for a send that may have reached the network: the network
// answered unexpectedly (SUBMISSION_FAILED), the call ran out of time (TRANSFER_TIMEOUT), or it
// failed some other way mid-submit, e.g. a socket error (INTERNAL_ERROR).
func sendFailure(err error) string {
	switch {
	case errors.Is(err, ErrUnexpectedAnswer):
		return CodeSubmissionFailed
	case errors.Is(err, context.DeadlineExceeded):
		return CodeTimeout
	default:
		return CodeInternalError
	}
}

// notSent reports whether a send failed before anything reached the network: the ledger says
// so, or the circuit breaker did not let the call through.
func notSent(err error) bool {
	var u *UnavailableError
	return errors.Is(err, ErrNotSent) || errors.As(err, &u) && u.Code == CodeCircuitOpen
}

// storeUnavailable is STORE_UNAVAILABLE for a write that failed where nothing of the request was
// sent and nothing can land: the key is free, or holds only this call's own envelope-less or
// proven-dead claim. Only then is "nothing was submitted" true.
func storeUnavailable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; nothing was submitted", Err: err}
}

// storeUnavailableHeld is STORE_UNAVAILABLE where the key holds an item whose envelope may land
// (a take-over of an expired lease that could not be written): the client must not read it as
// "nothing moved", only as "retry with the same key".
func storeUnavailableHeld(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Err: err,
		Detail: "the idempotency store is unavailable; a transfer under this key may already be under way: retry with the same key to learn its outcome (it never runs twice)"}
}

// storeUnavailableUnknown is STORE_UNAVAILABLE for a claim that failed and whose key could not be
// read back: nothing of this call was sent, but the key may hold this request's earlier transfer
// (landed, accepted or in doubt), so only "retry with the same key" is true.
func storeUnavailableUnknown(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Err: err,
		Detail: "the idempotency store is unavailable and the key could not be read; a transfer under this key may already have been submitted: retry with the same key to learn its outcome (it never runs twice)"}
}

// storeUnreadable is STORE_UNAVAILABLE for a read (GET, history, a message's item) that failed:
// it says nothing of what was submitted.
func storeUnreadable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; retry", Err: err}
}

// prepareFailure types an error from Ledger.Prepare: nothing was sent, so it is retryable unless
// the ledger typed it already (a validation error, a circuit open).
func prepareFailure(err error) error {
	var p ProblemError
	if errors.As(err, &p) {
		return err
	}
	return &UnavailableError{Code: CodeRPCError, Detail: "the transaction could not be prepared; nothing was submitted", Err: err}
}

// refused is the answer to a first send the network refused before inclusion (nothing moved, the
// key is released): CHANNELS_BUSY with the ledger's Retry-After when the refusal says the
// transaction source's queue slot is taken (SendResult.SourceBusy), else RPC_ERROR.
func refused(res SendResult) *UnavailableError {
	if res.Status == SendTryAgainLater && res.SourceBusy > 0 {
		return &UnavailableError{Code: CodeChannelsBusy, RetryAfter: res.SourceBusy,
			Detail: "the transaction source account is busy with another transfer; nothing moved"}
	}
	detail := "the network refused the transaction before inclusion; nothing moved"
	if res.Code != "" {
		detail = fmt.Sprintf("the network refused the transaction before inclusion (%s); nothing moved", res.Code)
	} else if res.Status == SendTryAgainLater {
		detail = "the network asked to try again later; nothing moved"
	}
	return &UnavailableError{Code: CodeRPCError, Detail: detail, RetryAfter: time.Second}
}

// sourceBusy reports whether err is CHANNELS_BUSY: no transaction source was free.
func sourceBusy(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u) && u.Code == CodeChannelsBusy
}

func expired() *UnavailableError {
	return &UnavailableError{Code: CodeTransactionExpired, Detail: "the transaction expired without landing; nothing moved", RetryAfter: time.Second}
}
