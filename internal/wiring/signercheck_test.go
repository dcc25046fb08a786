package wiring

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// stepClock is a clock that only moves when Sleep or advance moves it; it records the sleeps.
type stepClock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// scriptedChecker answers CheckSigners with the next of its answers (the last one repeats) and
// counts the calls.
type scriptedChecker struct {
	mu      sync.Mutex
	answers []error
	calls   int
}

func (s *scriptedChecker) CheckSigners(context.Context, signing.Keys) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	err := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	return err
}

func (s *scriptedChecker) script(answers ...error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.answers = answers
}

func (s *scriptedChecker) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func newSignerCheck(t *testing.T, answers ...error) (*SignerCheck, *scriptedChecker, *stepClock) {
	t.Helper()
	vault := keypair.MustRandom()
	checker := &scriptedChecker{answers: answers}
	clock := &stepClock{now: time.Unix(1_750_000_000, 0)}
	g := &SignerCheck{Source: signing.StaticKeys{K: signing.Keys{Vault: vault}}, Ledger: checker, Clock: clock}
	return g, checker, clock
}

func refusal() error {
	return &signing.SignerError{Role: "vault", Account: "GVAULT", Key: "GKEY", Weight: 1, Needed: 2, Level: signing.ThresholdMedium}
}

var errUnreadable = errors.New("getLedgerEntries: connection refused")

// A check that passes at start is not asked again: the keys are handed out as they are.
func TestSignerCheckPassesAtStart(t *testing.T) {
	g, checker, _ := newSignerCheck(t, nil)
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start = %v, want nil", err)
	}
	for range 3 {
		if k, err := g.Keys(context.Background()); err != nil || k.VaultKey() == nil {
			t.Fatalf("Keys = %v, %v", k, err)
		}
	}
	if n := checker.count(); n != 1 {
		t.Fatalf("%d checks, want 1", n)
	}
}

// A refusal at start is returned at once, unretried, as the SignerError it is.
func TestSignerCheckRefusesAtStart(t *testing.T) {
	g, checker, clock := newSignerCheck(t, refusal())
	err := g.Start(context.Background())
	var se *signing.SignerError
	if !errors.Is(err, signing.ErrCannotSign) || !errors.As(err, &se) || se.Needed != 2 || errors.Is(err, ErrSignerCheckPending) {
		t.Fatalf("Start = %v, want the refusal", err)
	}
	if checker.count() != 1 || len(clock.sleeps) != 0 {
		t.Fatalf("%d checks, sleeps %v; want one check, no retry", checker.count(), clock.sleeps)
	}
	if _, err := g.Keys(context.Background()); !errors.Is(err, signing.ErrCannotSign) {
		t.Fatalf("Keys after a refusal = %v, want the refusal", err)
	}
}

// A network that cannot be read at start: three tries 200 ms and 400 ms apart, then Start says the
// check is pending (the function starts). Keys hands out the keys unchecked until the next try
// is due, then checks; a refusal then refuses the keys until a later check passes, after which
// the keys are handed out without further checks.
func TestSignerCheckPendingWhenTheNetworkCannotBeRead(t *testing.T) {
	g, checker, clock := newSignerCheck(t, errUnreadable)
	ctx := context.Background()
	err := g.Start(ctx)
	if !errors.Is(err, ErrSignerCheckPending) || !errors.Is(err, errUnreadable) || errors.Is(err, signing.ErrCannotSign) {
		t.Fatalf("Start = %v, want pending with the read error", err)
	}
	if checker.count() != signerCheckAttempts || len(clock.sleeps) != 2 || clock.sleeps[0] != 200*time.Millisecond || clock.sleeps[1] != 400*time.Millisecond {
		t.Fatalf("%d checks, sleeps %v; want %d checks 200ms, 400ms apart", checker.count(), clock.sleeps, signerCheckAttempts)
	}

	// Before the next try is due: the keys, unchecked.
	if k, err := g.Keys(ctx); err != nil || k.VaultKey() == nil || checker.count() != 3 {
		t.Fatalf("Keys = %v, %v after %d checks; want the keys and no check", k, err, checker.count())
	}
	// Due: the check runs, and now refuses.
	checker.script(refusal())
	clock.advance(signerRecheckRead)
	if _, err := g.Keys(ctx); !errors.Is(err, signing.ErrCannotSign) || checker.count() != 4 {
		t.Fatalf("Keys = %v after %d checks; want the refusal from a 4th check", err, checker.count())
	}
	// Refused until the recheck is due, without asking the network.
	clock.advance(signerRecheckRefused - time.Second)
	if _, err := g.Keys(ctx); !errors.Is(err, signing.ErrCannotSign) || checker.count() != 4 {
		t.Fatalf("Keys = %v after %d checks; want the refusal, no new check", err, checker.count())
	}
	// A recheck that cannot read the network keeps the refusal.
	checker.script(errUnreadable)
	clock.advance(time.Second)
	if _, err := g.Keys(ctx); !errors.Is(err, signing.ErrCannotSign) || checker.count() != 5 {
		t.Fatalf("Keys = %v after %d checks; want the refusal kept", err, checker.count())
	}
	// The signers fixed on the network: the next recheck passes, and that is the last check.
	checker.script(nil)
	clock.advance(signerRecheckRead)
	for range 3 {
		if k, err := g.Keys(ctx); err != nil || k.VaultKey() == nil {
			t.Fatalf("Keys = %v, %v after the fix", k, err)
		}
	}
	if n := checker.count(); n != 6 {
		t.Fatalf("%d checks, want 6", n)
	}
}

// Start's retries end with its budget: a context already done stops after one try.
func TestSignerCheckStartStopsWithItsContext(t *testing.T) {
	g, checker, _ := newSignerCheck(t, errUnreadable)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Start(ctx); !errors.Is(err, ErrSignerCheckPending) || checker.count() != 1 {
		t.Fatalf("Start = %v after %d checks; want pending after one", err, checker.count())
	}
}
