package transfer

import (
	"fmt"
	"time"
)

// MinKeyTTL is the shortest replay window allowed: a replayable or rejected item is kept at least
// this long after it settles. After the window the key is a new transfer (README, "The guarantee"),
// so a window shorter than a client's retry horizon would let a late retry pay again.
const MinKeyTTL = time.Hour

// Settings are the orchestrator's tunables. The orchestrator asks for them on every call (seed
// 000, "Configuration": read per call, so an operator can change them without a redeploy).
type Settings struct {
	// Timeout caps one submission (TRANSFER_ORCHESTRATION_TIMEOUT_MS, default 45 s).
	Timeout time.Duration
	// DeadlineMargin is kept free before the invocation's deadline for the final writes
	// (TRANSFER_DEADLINE_MARGIN_MS, default 2 s).
	DeadlineMargin time.Duration
	// KeyTTL is how long replayable and rejected items are kept (IDEMPOTENCY_KEY_TTL_MS, default
	// 24 h, at least MinKeyTTL): the replay window, after which the key is a new transfer.
	KeyTTL time.Duration
	// ProofWindow is how long before the end of the budget the envelope's maxTime is set, so that
	// a ledger closing after maxTime can prove it dead before the budget ends: one ledger interval
	// (5 s) for the next close, plus the 1-3 s before RPC and Horizon show it (visibility lag), plus
	// a lookup (TRANSFER_PROOF_WINDOW_MS, default 9 s).
	ProofWindow time.Duration
	// MinValidity is the least time from now to maxTime an envelope is built with. stellar-core
	// refuses an envelope whose maxTime is below the last close time plus its upper-bound
	// close-time offset (twice the expected ledger interval plus the time since the last close:
	// about now + 10 s on a 5 s network; LedgerManager / getUpperBoundCloseTimeOffset, checked in
	// TransactionFrame::isTooLate at submission and again at every close), so a shorter one is
	// refused txTOO_LATE, or dropped from the queue at the next close. Default 12 s: two 5 s
	// intervals and 2 s for clock skew (TRANSFER_MIN_VALIDITY_MS).
	MinValidity time.Duration
	// MaxKeyLength bounds a client key (TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH, default 255).
	MaxKeyLength int
	// BatchSize is the most queued transfers the submitter pays with one transaction (BATCH_SIZE,
	// 1 to MaxBatchOperations; 0 or 1, the default, runs each alone: RunQueued). doc.go, "Batches".
	BatchSize int
	// TransactionsPerInvocation is the most batches (transactions) RunQueuedBatch forms from one
	// submitter event (SUBMITTER_TRANSACTIONS_PER_INVOCATION; template.yaml's k: the event
	// source gives an invocation k x BATCH_SIZE messages); the queued transfers past what they
	// carry are delivered again a ledger later, untouched. 0, the default, forms as many as the
	// event's messages fill. doc.go, "Batches".
	TransactionsPerInvocation int
}

// DefaultSettings are the defaults (README.md, "Configuration").
func DefaultSettings() Settings {
	return Settings{
		Timeout:        45 * time.Second,
		DeadlineMargin: 2 * time.Second,
		KeyTTL:         24 * time.Hour,
		ProofWindow:    9 * time.Second,
		MinValidity:    12 * time.Second,
		MaxKeyLength:   DefaultMaxKeyLength,
	}
}

// ConfigError is a setting out of its allowed range. Transfer and Settle refuse to run with one:
// nothing is claimed or written (a retryable 503 CONFIGURATION_INVALID to the client).
type ConfigError struct {
	// Setting is the environment variable's name; Detail says what is wrong.
	Setting string
	Detail  string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("configuration: %s %s", e.Setting, e.Detail) }

// Validate checks the settings a call depends on. Errors: *ConfigError.
func (s Settings) Validate() error {
	if s.BatchSize < 0 || s.BatchSize > MaxBatchOperations {
		return &ConfigError{Setting: "BATCH_SIZE", Detail: fmt.Sprintf("is %d; a transaction holds 1 to %d operations", s.BatchSize, MaxBatchOperations)}
	}
	if s.TransactionsPerInvocation < 0 {
		return &ConfigError{Setting: "SUBMITTER_TRANSACTIONS_PER_INVOCATION", Detail: fmt.Sprintf("is %d; it counts transactions, 0 for no bound", s.TransactionsPerInvocation)}
	}
	if s.KeyTTL < MinKeyTTL {
		return &ConfigError{Setting: "IDEMPOTENCY_KEY_TTL_MS", Detail: fmt.Sprintf("is %d ms; the replay window must be at least %d ms (one hour)", s.KeyTTL.Milliseconds(), MinKeyTTL.Milliseconds())}
	}
	return nil
}

// misconfigured is what a client sees when Validate fails: nothing was claimed or submitted.
func misconfigured(err error) *UnavailableError {
	return &UnavailableError{Code: CodeConfigurationInvalid, Detail: "the service is misconfigured; nothing was submitted", RetryAfter: time.Minute, Err: err}
}
