package transfer

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"
)

// BreakerSettings configure the circuit breaker around the network
// (CIRCUIT_BREAKER_FAILURE_THRESHOLD, CIRCUIT_BREAKER_RESET_TIMEOUT_MS).
type BreakerSettings struct {
	// FailureThreshold is the number of consecutive network failures that opens the circuit.
	FailureThreshold uint32
	// ResetTimeout is how long the circuit stays open before one trial call is let through.
	ResetTimeout time.Duration
}

// Breaker fails fast while the network keeps failing, so a dead RPC does not absorb every
// caller's budget (README.md, "Problem types": SOROBAN_CIRCUIT_OPEN, retryable, retryAfterMs). It wraps
// sony/gobreaker; only transport failures count, not the network's answers (typed errors).
type Breaker struct {
	cb    *gobreaker.CircuitBreaker[struct{}]
	reset time.Duration

	mu       sync.Mutex
	openedAt time.Time
}

// NewBreaker returns a closed breaker. A zero FailureThreshold means 5, a zero ResetTimeout 30 s.
func NewBreaker(s BreakerSettings) *Breaker {
	if s.FailureThreshold == 0 {
		s.FailureThreshold = 5
	}
	if s.ResetTimeout <= 0 {
		s.ResetTimeout = 30 * time.Second
	}
	b := &Breaker{reset: s.ResetTimeout}
	b.cb = gobreaker.NewCircuitBreaker[struct{}](gobreaker.Settings{
		Name:    "stellar-network",
		Timeout: s.ResetTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool {
			return c.ConsecutiveFailures >= s.FailureThreshold
		},
		IsSuccessful: isNetworkAnswer,
		// A caller's own cancellation says nothing about the network.
		IsExcluded: func(err error) bool { return errors.Is(err, context.Canceled) },
		OnStateChange: func(_ string, _, to gobreaker.State) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if to == gobreaker.StateOpen {
				b.openedAt = time.Now()
			}
		},
	})
	return b
}

// isNetworkAnswer reports whether err is an answer from the network (a typed error) rather than
// a failure to reach it.
func isNetworkAnswer(err error) bool {
	if err == nil {
		return true
	}
	var p ProblemError
	return errors.As(err, &p)
}

// Open reports whether calls are refused now, and for how long at most.
func (b *Breaker) Open() (bool, time.Duration) {
	if b == nil || b.cb.State() != gobreaker.StateOpen {
		return false, 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	left := b.reset - time.Since(b.openedAt)
	if left < time.Second {
		left = time.Second
	}
	return true, left
}

// Do runs fn through the breaker. While open it returns *UnavailableError SOROBAN_CIRCUIT_OPEN
// without calling fn.
func (b *Breaker) Do(fn func() error) error {
	if b == nil {
		return fn()
	}
	_, err := b.cb.Execute(func() (struct{}, error) { return struct{}{}, fn() })
	if errors.Is(err, gobreaker.ErrOpenState) || errors.Is(err, gobreaker.ErrTooManyRequests) {
		_, left := b.Open()
		if left == 0 {
			left = time.Second
		}
		return circuitOpen(left)
	}
	return err
}

func circuitOpen(retryAfter time.Duration) *UnavailableError {
	return &UnavailableError{Code: CodeCircuitOpen, Detail: "the Stellar network is failing; not submitting for now", RetryAfter: retryAfter}
}
