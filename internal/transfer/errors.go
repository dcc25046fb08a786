package transfer

import (
	"fmt"
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
	// CodeServiceSideFailure: the transaction was included and failed for a reason on the service's
	// side, not the destination's or the request's (the vault's or the channel's signers or
	// thresholds, a missing vault account, the contract call's resources or fees, or a result code
	// the service does not know: SourceShortfall); its sequence number was consumed, so it can never
	// land: nothing moved and the key is free. So is a first send the network refused for the same
	// reasons before inclusion (txBAD_AUTH, txBAD_AUTH_EXTRA, txNO_ACCOUNT, txFAILED: refused,
	// serviceSideSendCodes), nothing sent and no fee. Retry with the same key once an operator has
	// looked. It pages (alert "service-side-failure").
	CodeServiceSideFailure = "SERVICE_SIDE_FAILURE"
	// CodeFeeAboveCap: the fee the network needs now (its recent fees, or the fee it named when
	// it refused a transaction as paying too little) is above MAX_FEE_STROOPS; nothing was sent
	// and the key is free. RetryAfter is when that figure may have moved.
	CodeFeeAboveCap = "FEE_ABOVE_CAP"
)

// Kind is what kind of problem a typed error reports, in the domain's terms. It is what a door
// chooses its own answer by (internal/api maps each kind to an HTTP status), so the domain
// carries no status of any protocol. The code names the problem within its kind; one code can
// come with two kinds (TRANSACTION_EXPIRED as an UnavailableError, or held by a stored
// rejection).
type Kind string

const (
	// KindMalformed: the request cannot be read as a transfer at all: a header or field is
	// missing, or is not in its syntax (an Idempotency-Key of the wrong length or alphabet, a body
	// that is not the JSON object, a history page size or cursor out of its form). Fixing the
	// request's form fixes it.
	KindMalformed Kind = "malformed"
	// KindUnacceptable: the request is well-formed, but what it asks is not one this service
	// accepts: a wallet that is no Stellar address, an amount out of range, an asset or an
	// operation this deployment does not serve. The same request is refused every time.
	KindUnacceptable Kind = "unacceptable"
	// KindConflict: the key's item stands in the way: used for a different request, still held
	// by another call, or in doubt until reconciled.
	KindConflict Kind = "conflict"
	// KindUnavailable: a dependency failed or refused before anything could land; the key is free.
	KindUnavailable Kind = "unavailable"
	// KindRejected: a stored rejection, settled for good, that every retry of the key replays.
	KindRejected Kind = "rejected"
	// KindNotFound: nothing is stored under the wallet and key.
	KindNotFound Kind = "not_found"
)

// Problem is what a typed error says about itself, for a door (internal/api) to render, there
// as RFC 9457 problem details.
type Problem struct {
	Code           string
	Kind           Kind
	Classification Classification
	Detail         string
	// RetryAfter is set when the caller should wait before retrying.
	RetryAfter time.Duration
	// TransactionHash and ResultCodes accompany a stored rejection of a transaction that was
	// included in a ledger (fee charged).
	TransactionHash string
	ResultCodes     []string
	// OperationIndex is the 0-based index of the key's operation in TransactionHash's transaction
	// when a batch's transaction rejected it (OperationIndexOf; doc.go, "Batches": every answer
	// names the operation's index); nil for a transfer sent alone.
	OperationIndex *int
	// FailingCode is what made a transfer indeterminate (for example TRANSFER_TIMEOUT).
	FailingCode string
	// State is the transfer's state when a cancellation is refused or answered
	// (TRANSFER_NOT_CANCELLABLE: in_flight, in_doubt, success or error; TRANSFER_CANCELLED:
	// cancelled); "" otherwise.
	State string
	// Replayed is true when the answer is a stored outcome replayed, not decided by this call.
	Replayed bool
	// StoredStatus is Result.HTTPStatus of a replayed rejection whose item holds one (0 when it
	// holds none): the door answers it as stored, so that such an item replays what it was
	// written with, whatever the door's table says today.
	StoredStatus int
	// Limit names the limit a LimitError refused the transfer under, and LimitCap its cap as a
	// canonical decimal amount (limits.go).
	Limit    string
	LimitCap string
}

// ProblemError is implemented by every typed error of this package; use errors.As to find it.
type ProblemError interface {
	error
	Problem() Problem
}

// ValidationError (KindMalformed or KindUnacceptable, terminal): a malformed key or request, or a
// well-formed one this service does not accept; it never reaches the network and nothing is
// stored for it (unless it refuses a queued request: queued.go, rejectQueued).
type ValidationError struct {
	Code string
	// Kind is KindMalformed or KindUnacceptable.
	Kind Kind
	// Field names the offending request field or header.
	Field  string
	Detail string
}

func (e *ValidationError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Detail) }

// Problem implements ProblemError.
func (e *ValidationError) Problem() Problem {
	return Problem{Code: e.Code, Kind: e.Kind, Classification: Terminal, Detail: e.Detail}
}

func malformed(code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Kind: KindMalformed, Field: field, Detail: fmt.Sprintf(format, args...)}
}

func unacceptable(code, field, format string, args ...any) *ValidationError {
	return &ValidationError{Code: code, Kind: KindUnacceptable, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// ConflictError (KindConflict, terminal): the key was used before with a different canonical request.
type ConflictError struct{}

func (e *ConflictError) Error() string {
	return CodeKeyConflict + ": idempotency key was used with a different request"
}

// Problem implements ProblemError.
func (e *ConflictError) Problem() Problem {
	return Problem{Code: CodeKeyConflict, Kind: KindConflict, Classification: Terminal,
		Detail: "This Idempotency-Key was already used for a different transfer of this wallet (keys are scoped to the wallet, deposits and withdrawals alike; an M... address shares the keys of its G... account)."}
}

// InDoubtError (KindConflict, indeterminate): the outcome is unknown until reconciled. Every caller gets
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
	return Problem{Code: CodeInDoubt, Kind: KindConflict, Classification: Indeterminate,
		Detail:      "The transfer may or may not have landed; it is blocked until it is reconciled from the ledger.",
		RetryAfter:  e.RetryAfter,
		FailingCode: e.FailingCode}
}

// InProgressError (KindConflict, retryable): another invocation holds the key and did not settle within
// this caller's budget.
type InProgressError struct {
	RetryAfter time.Duration
}

func (e *InProgressError) Error() string {
	return CodeInProgress + ": another request with this key is still running"
}

// Problem implements ProblemError.
func (e *InProgressError) Problem() Problem {
	return Problem{Code: CodeInProgress, Kind: KindConflict, Classification: Retryable,
		Detail: "A request with this Idempotency-Key is still being processed.", RetryAfter: e.RetryAfter}
}

// UnavailableError (KindUnavailable, retryable): a dependency failed and nothing was submitted (or what was
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
	return Problem{Code: e.Code, Kind: KindUnavailable, Classification: Retryable,
		Detail: e.Detail, RetryAfter: e.RetryAfter}
}

// RejectedError (KindRejected, terminal): a stored rejection that every retry of the key replays.
// When the transaction was included and failed, TransactionHash and ResultCodes say so.
type RejectedError struct {
	Code string
	// StoredStatus is the item's Result.HTTPStatus, 0 when it holds none (Problem.StoredStatus).
	StoredStatus    int
	Detail          string
	TransactionHash string
	ResultCodes     []string
	// OperationIndex is the key's operation (0-based) in TransactionHash's transaction when that
	// transaction was a batch's (OperationIndexOf); nil otherwise.
	OperationIndex *int

	replayed bool // read from the store rather than decided by this call
}

func (e *RejectedError) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Detail) }

// Problem implements ProblemError.
func (e *RejectedError) Problem() Problem {
	return Problem{Code: e.Code, Kind: KindRejected, Classification: Terminal, Detail: e.Detail,
		TransactionHash: e.TransactionHash, ResultCodes: e.ResultCodes, OperationIndex: e.OperationIndex,
		Replayed: e.replayed, StoredStatus: e.StoredStatus}
}

// NotFoundError (KindNotFound, terminal): no transfer is stored under the wallet and key.
type NotFoundError struct{}

// CodeNotFound is the code of NotFoundError.
const CodeNotFound = "TRANSFER_NOT_FOUND"

func (e *NotFoundError) Error() string { return CodeNotFound + ": no transfer for this wallet and key" }

// Problem implements ProblemError.
func (e *NotFoundError) Problem() Problem {
	return Problem{Code: CodeNotFound, Kind: KindNotFound, Classification: Terminal,
		Detail: "No transfer is stored for this wallet and Idempotency-Key."}
}
