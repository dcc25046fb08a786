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

func storeUnavailable(err error) *UnavailableError {
	return &UnavailableError{Code: CodeStoreUnavailable, Detail: "the idempotency store is unavailable; nothing was submitted", Err: err}
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
