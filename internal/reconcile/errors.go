package reconcile

import "fmt"

// Error codes. Every refusal and failure of an action is an *Error with one of them; the Lambda
// adapter (Invoke) answers a refusal with a Refusal naming it and reports a failure (the
// dependencies, CONFIGURATION_INVALID, CHANNELS_FAILED) as the function error's errorType.
const (
	CodeBadRequest    = "BAD_REQUEST"    // the payload is not valid JSON, or a field is missing or invalid
	CodeUnknownAction = "UNKNOWN_ACTION" // action is not list, get, resolve, sweep, channels, daily or report
	// CodeActionNotAllowed: a read-only service (Config.ReadOnly, InDoubtReaderFunction) was asked
	// for resolve, sweep or channels. Answered as a Problem payload, not a function error.
	CodeActionNotAllowed = "ACTION_NOT_ALLOWED"
	// CodeSecretInPayload: resolve's operator or reason holds a Stellar secret seed (they are
	// written into the item's audit and logged); nothing was done.
	CodeSecretInPayload = "SECRET_IN_PAYLOAD"
	CodeNotFound        = "NOT_FOUND"    // no item under storeKey
	CodeNotInDoubt      = "NOT_IN_DOUBT" // resolve: the item is not in_doubt (already settled, or in flight)
	CodeConflict        = "CONFLICT"     // the item changed while the action ran; read it again
	// resolve {transactionHash}
	CodeHashMismatch      = "HASH_MISMATCH"      // the hash is neither the item's inner nor outer hash (never forceable)
	CodeNotLanded         = "NOT_LANDED"         // the ledger does not show the hash SUCCESS (forceable)
	CodeTransactionFailed = "TRANSACTION_FAILED" // the ledger shows it included and FAILED (never forceable; the sweep stores the rejection)
	CodeProvenDead        = "PROVEN_DEAD"        // the ledger proves it never landed (never forceable; discard it)
	// resolve {discard}
	CodeLanded        = "LANDED"          // the envelope landed (or failed on chain): the item was settled from the ledger instead
	CodeStillCanLand  = "STILL_CAN_LAND"  // no ledger has closed after maxTime: the envelope can still land (never forceable)
	CodeNotProvenDead = "NOT_PROVEN_DEAD" // maxTime passed but the ledger's history does not cover the submission (forceable)
	// dependencies
	CodeStoreUnavailable  = "STORE_UNAVAILABLE"
	CodeLedgerUnavailable = "LEDGER_UNAVAILABLE"
	// CodeConfigurationInvalid: a setting read per call is out of range (transfer.Settings.Validate).
	CodeConfigurationInvalid = "CONFIGURATION_INVALID"
	// channel accounts
	CodeChannelsNotAvailable = "CHANNELS_NOT_AVAILABLE"
	// CodeChannelsFailed: the ledger could not list or create the channel accounts.
	CodeChannelsFailed = "CHANNELS_FAILED"
)

// Error is a typed reconcile error: Code (above) and a message for the operator. Err, when set,
// is the underlying failure (kept out of Message: it may name endpoints), and makes the error a
// failure rather than a refusal (see Invoke).
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap returns the underlying failure.
func (e *Error) Unwrap() error { return e.Err }

func refuse(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *Error { return refuse(CodeBadRequest, format, args...) }

func storeErr(err error) *Error {
	return &Error{Code: CodeStoreUnavailable, Message: "the transfer store could not be read or written", Err: err}
}

func ledgerErr(err error) *Error {
	return &Error{Code: CodeLedgerUnavailable, Message: "the Stellar ledger could not be asked", Err: err}
}
