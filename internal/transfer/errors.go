package transfer

import (
	"fmt"
	"net/http"
	"time"
)

// Classification says whether a caller may retry (README.md, "Problem types"; doc.go, "Classification").
type Classification string

const (
	// Retryable: proven to have failed before anything could land; retry with the same key.
	Retryable Classification = "retryable"
	// Terminal: the request itself is invalid or was rejected; a retry replays the same answer.
	Terminal Classification = "terminal"
	// Indeterminate: the envelope may or may not have landed; blocked until reconciled.
	Indeterminate Classification = "indeterminate"
)

// Error codes a caller can see (README.md, "Problem types").
const (
	CodeKeyMissing         = "IDEMPOTENCY_KEY_MISSING"
	CodeKeyInvalid         = "IDEMPOTENCY_KEY_INVALID"
	CodeRequestInvalid     = "REQUEST_INVALID"
	CodeInvalidAddress     = "INVALID_ADDRESS"
	CodeInvalidAmount      = "INVALID_AMOUNT"
	CodeInvalidAsset       = "INVALID_ASSET"
	CodeOperationNotSupp   = "OPERATION_NOT_SUPPORTED"
	CodeKeyConflict        = "IDEMPOTENCY_KEY_CONFLICT"
	CodeInDoubt            = "TRANSFER_IN_DOUBT"
	CodeInProgress         = "TRANSFER_IN_PROGRESS"
	CodeTimeout            = "TRANSFER_TIMEOUT"
	CodeCircuitOpen        = "SOROBAN_CIRCUIT_OPEN"
	CodeSimulationError    = "SIMULATION_ERROR"
	CodeRestoreRequired    = "RESTORE_REQUIRED"
	CodeRPCError           = "RPC_ERROR"
	CodeSubmissionFailed   = "SUBMISSION_FAILED"
	CodeInternalError      = "INTERNAL_ERROR"
	CodeTransactionFailed  = "TRANSACTION_FAILED"
	CodeTransactionExpired = "TRANSACTION_EXPIRED"
	CodeNetworkUnavailable = "NETWORK_UNAVAILABLE"
	CodeStoreUnavailable   = "STORE_UNAVAILABLE"
	// CodeConfigurationInvalid: a setting read per call is out of range (Settings.Validate); nothing
	// was claimed or submitted.
	CodeConfigurationInvalid = "CONFIGURATION_INVALID"
	// CodeChannelsBusy: no transaction source was free in time (no channel account could be
	// leased, or the vault, the only source, was busy with another transfer); nothing was sent
	// and the key is free. RetryAfter estimates when one will be.
	CodeChannelsBusy = "CHANNELS_BUSY"
	// CodeSigningKeysUnavailable: the signing keys could not be loaded; nothing was signed.
	CodeSigningKeysUnavailable = "SIGNING_KEYS_UNAVAILABLE"
	// CodeVaultUnderfunded: the vault could not cover the transfer (its balance of the asset, its
	// trustline for the asset missing or not authorized by the issuer, or its XLM for the fee while
	// it is the transaction's source); nothing moved and the key is free.
	// Retry with the same key once the vault is funded. It pages (alert "vault-underfunded").
	CodeVaultUnderfunded = "VAULT_UNDERFUNDED"
	// CodeFeeAccountUnderfunded: the fee account could not pay the fee of the transfer's fee bump
	// on top of the fees it already has queued; nothing moved and the key is free. Retry with the
	// same key once the fee account is funded. It pages (alert "fee-account-underfunded").
	CodeFeeAccountUnderfunded = "FEE_ACCOUNT_UNDERFUNDED"
	// CodeFeeAboveCap: the fee the network needs now (its recent fees, or the fee it named when
	// it refused a transaction as paying too little) is above MAX_FEE_STROOPS; nothing was sent
	// and the key is free. RetryAfter is when that figure may have moved.
	CodeFeeAboveCap = "FEE_ABOVE_CAP"
)

// Problem is what a typed error says about itself, for an HTTP layer to render as RFC 9457
// problem details.
type Problem struct {
	Code           string
	Status         int
	Classification Classification
	Detail         string
	// RetryAfter is set when the caller should wait before retrying.
	RetryAfter time.Duration
	// TransactionHash and ResultCodes accompany a stored rejection of a transaction that was
	// included in a ledger (fee charged).
	TransactionHash string
	ResultCodes     []string
	// FailingCode is what made a transfer indeterminate (for example TRANSFER_TIMEOUT).
	FailingCode string
	// Replayed is true when the answer is a stored outcome replayed, not decided by this call.
	Replayed bool
}

// ProblemError is implemented by every typed error of this package; use errors.As to find it.
type ProblemError interface {
	error
	Problem() Problem
}

// ValidationError (400 or 422, terminal): a malformed key or request; it never reaches the network
// and nothing is stored for it.
type ValidationError struct {
	Code   string
	Status int
	// Field names the offending request field or header.
	Field  string
	Detail string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Detail) }

// Problem implements ProblemError.
func (e *ValidationError) Problem() Problem {
	return Problem{Code: e.Code, Status: e.Status, Classification: Terminal, Detail: e.Detail}
}

func badRequest(code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Status: http.StatusBadRequest, Field: field, Detail: fmt.Sprintf(format, args...)}
}

func unprocessable(code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Status: http.StatusUnprocessableEntity, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// ConflictError (409, terminal): the key was used before with a different canonical request.
type ConflictError struct{}

func (e *ConflictError) Error() string {
	return CodeKeyConflict + ": idempotency key was used with a different request"
}

// Problem implements ProblemError.
func (e *ConflictError) Problem() Problem {
	return Problem{Code: CodeKeyConflict, Status: http.StatusConflict, Classification: Terminal,
		Detail: "This Idempotency-Key was already used for a different transfer of this wallet (keys are scoped to the wallet, deposits and withdrawals alike)."}
}

// InDoubtError (409, indeterminate): the outcome is unknown until reconciled. Every caller gets
// it, the one that opened the window and each one after (README.md, "What the service guarantees").
type InDoubtError struct {
	// FailingCode is what made the transfer indeterminate, e.g. TRANSFER_TIMEOUT.
	FailingCode string
	RetryAfter  time.Duration
}

func (e *InDoubtError) Error() string {
	return fmt.Sprintf("%s: outcome unknown (%s)", CodeInDoubt, e.FailingCode)
}

// Problem implements ProblemError.
func (e *InDoubtError) Problem() Problem {
	return Problem{Code: CodeInDoubt, Status: http.StatusConflict, Classification: Indeterminate,
		Detail:      "The transfer may or may not have landed; it is blocked until it is reconciled from the ledger.",
		RetryAfter:  e.RetryAfter,
		FailingCode: e.FailingCode}
}

// InProgressError (409, retryable): another invocation holds the key and did not settle within
// this caller's budget.
type InProgressError struct {
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return CodeInProgress + ": another request with this key is still running"
}

// Problem implements ProblemError.
func (e *InProgressError) Problem() Problem {
	return Problem{Code: CodeInProgress, Status: http.StatusConflict, Classification: Retryable,
		Detail: "A request with this Idempotency-Key is still being processed.", RetryAfter: e.RetryAfter}
}

// UnavailableError (503, retryable): a dependency failed and nothing was submitted (or what was
// submitted is proven dead); the key is free again. RetryAfter is set when the circuit is open.
type UnavailableError struct {
	Code       string
	Detail     string
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Detail, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Detail)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Problem implements ProblemError. The wrapped error is not part of it: it may name internals.
func (e *UnavailableError) Problem() Problem {
	return Problem{Code: e.Code, Status: http.StatusServiceUnavailable, Classification: Retryable,
		Detail: e.Detail, RetryAfter: e.RetryAfter}
}

// RejectedError (422 by default, terminal): a stored
// rejection that every retry of the key replays. When the transaction was included and failed,
// TransactionHash and ResultCodes say so.
type RejectedError struct {
	Code            string
	Status          int
	Detail          string
	TransactionHash string
	ResultCodes     []string

	replayed bool // read from the store rather than decided by this call
}

func (e *RejectedError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Detail) }

// Problem implements ProblemError.
func (e *RejectedError) Problem() Problem {
	status := e.Status
	if status == 0 {
		status = http.StatusUnprocessableEntity
	}
	return Problem{Code: e.Code, Status: status, Classification: Terminal, Detail: e.Detail,
		TransactionHash: e.TransactionHash, ResultCodes: e.ResultCodes, Replayed: e.replayed}
}

// NotFoundError (404, terminal): no transfer is stored under the wallet and key.
type NotFoundError struct{}

// CodeNotFound is the code of NotFoundError.
const CodeNotFound = "TRANSFER_NOT_FOUND"

func (e *NotFoundError) Error() string { return CodeNotFound + ": no transfer for this wallet and key" }

// Problem implements ProblemError.
func (e *NotFoundError) Problem() Problem {
	return Problem{Code: CodeNotFound, Status: http.StatusNotFound, Classification: Terminal,
		Detail: "No transfer is stored for this wallet and Idempotency-Key."}
}
