package transfer

import (
	"context"
	"log/slog"
	"time"
)

// Input is one call to Transfer: a canonical request under a validated client key.
type Input struct {
	ClientKey string
	Request   Request
	// TraceID is recorded on the item for operators (X-Ray or request trace ID); may be empty.
	TraceID string
}

// Outcome is a successful transfer: the landed transaction and whether this call replayed it.
type Outcome struct {
	// TransactionHash is the hex hash of the landed transaction (the inner hash when fee-bumped).
	TransactionHash string
	// Ledger is the sequence of the ledger that included it.
	Ledger   uint32
	Replayed bool
}

// View is what GET /wallets/{wallet}/transfers/{key} shows: seed 003's three statuses.
type View struct {
	// Status is "pending" (in flight or in doubt), "success" or "error".
	Status          string
	TransactionHash string
	Ledger          uint32
	// InDoubt is true while the outcome is unknown and awaits reconciliation.
	InDoubt bool
	// Problem describes a stored rejection (Status "error").
	Problem *Problem
}

// Orchestrator runs transfers at most once per (wallet, idempotency key).
type Orchestrator struct {
	Store  Store
	Ledger Ledger
	Clock  Clock
	// Settings is called once per Transfer; nil means DefaultSettings.
	Settings func() Settings
	Logger   *slog.Logger
	// Breaker fails fast while the network is failing; nil disables it.
	Breaker *Breaker
	// NewOwner returns a unique lease owner ID per call; nil uses a random one.
	NewOwner func() string
	// Hooks, when set, is called at each step; tests use it to abandon a call (crash) there.
	Hooks func(step Step) error
}

// Step names a point in Transfer, for Hooks.
type Step string

var _ = time.Second
var _ = context.Background
