package transfer

import "time"

// Settings are the orchestrator's tunables. The orchestrator asks for them on every call (seed
// 000, "Configuration": read per call, so an operator can change them without a redeploy).
type Settings struct {
	// Timeout caps one submission (TRANSFER_ORCHESTRATION_TIMEOUT_MS, default 45 s).
	Timeout time.Duration
	// DeadlineMargin is kept free before the invocation's deadline for the final writes
	// (TRANSFER_DEADLINE_MARGIN_MS, default 2 s).
	DeadlineMargin time.Duration
	// KeyTTL is how long replayable and rejected items are kept (IDEMPOTENCY_KEY_TTL_MS, default 24 h).
	KeyTTL time.Duration
	// ProofWindow is how long before the end of the budget the envelope's maxTime is set, so that
	// a ledger closing after maxTime can prove it dead before the budget ends (about one ledger
	// interval and a little more; TRANSFER_PROOF_WINDOW_MS, default 7 s).
	ProofWindow time.Duration
	// MaxKeyLength bounds a client key (TRANSFER_ORCHESTRATION_MAX_KEY_LENGTH, default 255).
	MaxKeyLength int
}

// DefaultSettings are the seed's defaults.
func DefaultSettings() Settings {
	return Settings{
		Timeout:        45 * time.Second,
		DeadlineMargin: 2 * time.Second,
		KeyTTL:         24 * time.Hour,
		ProofWindow:    7 * time.Second,
		MaxKeyLength:   DefaultMaxKeyLength,
	}
}
