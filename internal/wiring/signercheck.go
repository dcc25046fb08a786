package wiring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// SignerChecker checks that signing keys can sign for their accounts on the network
// (stellar.RPCLedger.CheckSigners, ContractLedger's, HorizonLedger's; StellarLedger has it).
type SignerChecker interface {
	CheckSigners(ctx context.Context, keys signing.Keys) error
}

// The start-up check's bounds. Lambda gives an on-demand function's init 10 s (AWS Lambda
// Developer Guide, "Lambda execution environment lifecycle", Init phase) and the AWS clients
// and KMS's GetPublicKey come first, so the check gets signerCheckBudget in all: up to
// signerCheckAttempts reads of signerCheckAttemptTimeout each, signerCheckBackoff apart (then
// doubling).
const (
	signerCheckBudget         = 4 * time.Second
	signerCheckAttempts       = 3
	signerCheckAttemptTimeout = 1500 * time.Millisecond
	signerCheckBackoff        = 200 * time.Millisecond
)

// After start, a check that could not read the network is tried again at most every
// signerRecheckRead; a check that refused, every signerRecheckRefused (so that signers fixed on
// the network are taken up without a restart).
const (
	signerRecheckRead    = 10 * time.Second
	signerRecheckRefused = 30 * time.Second
)

// SignerCheck is the KeySource of SIGNER=kms (README.md, "Signing keys in KMS"): Source's keys,
// checked against the network before they sign. A KMS key that is not a signer of the account it
// signs for with enough weight would otherwise be found only at the first send, and every
// transfer would then be refused by the network (txBAD_AUTH) after a round trip.
//
// At start, Start runs the check (Ledger.CheckSigners): a refusal (signing.ErrCannotSign) makes
// the function refuse to start. What happens when the network cannot be read is a choice, made
// for a payments team: the check is tried signerCheckAttempts times within signerCheckBudget,
// and then the function starts anyway, with the check pending, and says so at ERROR. Refusing to
// start there would turn a Stellar RPC (or Horizon) outage into an outage of the whole API on
// every cold start, reads included: a transfer's status, the wallet history and the replay of a
// finished transfer do not need the network, and those are what clients ask for during an
// outage; sends fail on the same outage anyway, with their own clear answer
// (NETWORK_UNAVAILABLE, nothing submitted). A misconfigured key, by contrast, is a fact that no
// retry changes, so it stops the start, where a deployment's init errors show it (Lambda logs the
// failed init and retries it on the next invocation; the version never serves).
//
// While the check is pending, Keys runs it before handing out keys (at most every
// signerRecheckRead while the network cannot be read; meanwhile the keys are handed out
// unchecked, as before the check existed: the send then meets the same unreadable network). Once
// it has passed, Keys hands out keys without asking again. If it refuses, Keys answers the
// *signing.SignerError (so a transfer is SIGNING_KEYS_UNAVAILABLE, 503, nothing built or sent)
// and checks again every signerRecheckRefused. Safe for concurrent use; Ledger must be set
// before the first Keys or Start call.
type SignerCheck struct {
	// Source is the key source checked (SigningKeys' KMSKeys).
	Source signing.KeySource
	// Ledger reads the accounts (the assembled service's StellarLedger).
	Ledger SignerChecker
	// Clock paces the retries; nil means the system clock.
	Clock transfer.Clock
	// Logger says when a pending check passes or refuses; nil means slog.Default().
	Logger *slog.Logger

	mu      sync.Mutex
	passed  bool
	refused error     // the last refusal, while the check refuses
	next    time.Time // when a pending or refused check may run again
	running bool
}

// ErrSignerCheckPending wraps Start's error when the network could not be read: the function
// starts with the check pending.
var ErrSignerCheckPending = errors.New("wiring: the signing keys' accounts could not be read; the check runs again before the first signature")

func (g *SignerCheck) clock() transfer.Clock {
	if g.Clock == nil {
		return transfer.SystemClock{}
	}
	return g.Clock
}

func (g *SignerCheck) logger() *slog.Logger {
	if g.Logger == nil {
		return slog.Default()
	}
	return g.Logger
}

// Start runs the start-up check. It returns nil when the keys can sign; the refusals (errors.Is
// signing.ErrCannotSign; each a *signing.SignerError naming the account, the key and the
// weights) when they cannot: refuse to start; an error wrapping ErrSignerCheckPending and the
// last read error when the network could not be read in signerCheckAttempts tries: start, the
// check then runs before signing. A failure to load the keys themselves is returned as it is.
func (g *SignerCheck) Start(ctx context.Context) error {
	keys, err := g.Source.Keys(ctx)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, signerCheckBudget)
	defer cancel()
	clock, backoff := g.clock(), signerCheckBackoff
	for attempt := 1; ; attempt++ {
		err = g.checkOnce(ctx, keys)
		if err == nil || errors.Is(err, signing.ErrCannotSign) {
			g.record(err, clock.Now())
			return err
		}
		if attempt == signerCheckAttempts || clock.Sleep(ctx, backoff) != nil {
			g.record(err, clock.Now())
			return fmt.Errorf("%w (%d tries): %w", ErrSignerCheckPending, attempt, err)
		}
		backoff *= 2
	}
}

func (g *SignerCheck) checkOnce(ctx context.Context, keys signing.Keys) error {
	ctx, cancel := context.WithTimeout(ctx, signerCheckAttemptTimeout)
	defer cancel()
	return g.Ledger.CheckSigners(ctx, keys)
}

// record notes a check's outcome at now: passed (nil), refused (signing.ErrCannotSign) or
// unread (anything else).
func (g *SignerCheck) record(err error, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running = false
	switch {
	case err == nil:
		g.passed, g.refused = true, nil
	case errors.Is(err, signing.ErrCannotSign):
		g.refused, g.next = err, now.Add(signerRecheckRefused)
	default:
		g.next = now.Add(signerRecheckRead)
	}
}

// Keys returns the key source's keys once the check has passed; see SignerCheck.
func (g *SignerCheck) Keys(ctx context.Context) (signing.Keys, error) {
	keys, err := g.Source.Keys(ctx)
	if err != nil {
		return signing.Keys{}, err
	}
	clock := g.clock()
	g.mu.Lock()
	if g.passed {
		g.mu.Unlock()
		return keys, nil
	}
	if g.running || clock.Now().Before(g.next) {
		refused := g.refused
		g.mu.Unlock()
		if refused != nil {
			return signing.Keys{}, refused
		}
		return keys, nil
	}
	g.running = true
	was := g.refused
	g.mu.Unlock()

	err = g.checkOnce(ctx, keys)
	g.record(err, clock.Now())
	switch {
	case err == nil:
		g.logger().Info("signing keys checked: each can sign for its account", "keys", keys)
		return keys, nil
	case errors.Is(err, signing.ErrCannotSign):
		if was == nil || was.Error() != err.Error() {
			g.logger().Error("signing keys cannot sign for their accounts; transfers are refused SIGNING_KEYS_UNAVAILABLE until they can", "err", err)
		}
		return signing.Keys{}, err
	default:
		if was != nil {
			return signing.Keys{}, was
		}
		return keys, nil
	}
}

// Format implements fmt.Formatter: the checked source (public keys and key IDs only).
func (g *SignerCheck) Format(f fmt.State, _ rune) {
	_, _ = fmt.Fprintf(f, "wiring.SignerCheck{%v}", g.Source)
}
