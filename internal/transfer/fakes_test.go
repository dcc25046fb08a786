package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// fakeLedger is a tiny network: envelopes sent are queued and land at the next close if their
// maxTime allows; behaviour per send can be scripted.
type fakeLedger struct {
	mu        sync.Mutex
	clock     *vclock.Clock
	prepares  int
	sends     []string // inner hash of every send
	queued    map[string]transfer.Envelope
	landed    map[string]landing
	latest    uint32
	closeTime time.Time
	oldest    uint32

	// script, when set, decides a send's answer; accept says whether the envelope is queued.
	script     func(n int, env transfer.Envelope) (res transfer.SendResult, accept bool, err error)
	failResult func(env transfer.Envelope) bool // land as FAILED
	// failCodes are a FAILED transaction's result codes; nil: a destination-side failure
	// (tx_failed, op_no_trust), stored as a rejection.
	failCodes  []string
	prepareErr error
	feeBump    bool // Prepare wraps its envelopes in a fee bump (an outer hash)
	lookupErr  error
	hang       bool // sends hang until their context ends
	noClose    bool // ledgers stall
	// sendNoLatest: a send's answer names no latest ledger (Horizon's root unread after the send).
	sendNoLatest bool
}

type landing struct {
	ledger uint32
	failed bool
}

func newFakeLedger(c *vclock.Clock) *fakeLedger {
	l := &fakeLedger{clock: c, queued: map[string]transfer.Envelope{}, landed: map[string]landing{}, latest: 100, oldest: 1, closeTime: c.Now()}
	c.OnAdvance(l.closeUntil)
	return l
}

func (l *fakeLedger) closeIfDue() { l.closeUntil(l.clock.Now()) }

// closeUntil closes a ledger for every 5 s the clock has moved past the last close.
func (l *fakeLedger) closeUntil(now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for !l.noClose && now.Sub(l.closeTime) >= 5*time.Second {
		l.closeLocked(l.closeTime.Add(5 * time.Second))
	}
}

func (l *fakeLedger) closeLocked(at time.Time) {
	l.latest++
	l.closeTime = at
	for h, env := range l.queued {
		delete(l.queued, h)
		if at.Unix() > env.MaxTime {
			continue // too late: dropped, never applied
		}
		failed := l.failResult != nil && l.failResult(env)
		l.landed[h] = landing{ledger: l.latest, failed: failed}
	}
}

func (l *fakeLedger) Prepare(_ context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	maxTime := terms.MaxTime
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prepareErr != nil {
		return transfer.Envelope{}, l.prepareErr
	}
	l.prepares++
	h := fmt.Sprintf("%064x", l.prepares)
	env := transfer.Envelope{XDR: "xdr-" + h, InnerHash: h, MaxTime: maxTime.Unix(), SubmittedLedger: l.latest, Channel: "GVAULT", FeeStroops: 100}
	if l.feeBump {
		env.OuterHash = fmt.Sprintf("%064x", 1<<40+l.prepares)
	}
	return env, nil
}

func (l *fakeLedger) Send(ctx context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	l.mu.Lock()
	if l.hang {
		l.sends = append(l.sends, env.InnerHash)
		l.mu.Unlock()
		<-ctx.Done()
		return transfer.SendResult{}, ctx.Err()
	}
	defer l.mu.Unlock()
	n := len(l.sends)
	l.sends = append(l.sends, env.InnerHash)
	res, accept, err := transfer.SendResult{Status: transfer.SendPending}, true, error(nil)
	if l.script != nil {
		res, accept, err = l.script(n, env)
	}
	if _, done := l.landed[env.InnerHash]; done && accept {
		// An included envelope is never applied twice; the network says try again later.
		return transfer.SendResult{Status: transfer.SendTryAgainLater, LatestLedger: l.latest}, err
	}
	if accept {
		l.queued[env.InnerHash] = env
	}
	res.LatestLedger, res.LatestLedgerCloseTime = l.latest, l.closeTime
	if l.sendNoLatest {
		res.LatestLedger, res.LatestLedgerCloseTime = 0, time.Time{}
	}
	return res, err
}

func (l *fakeLedger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lookupErr != nil {
		return transfer.Lookup{}, l.lookupErr
	}
	lk := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: l.latest, LatestLedgerCloseTime: l.closeTime, OldestLedger: l.oldest}
	if got, ok := l.landed[env.InnerHash]; ok {
		lk.Hash, lk.Ledger, lk.FeeChargedStroops = env.InnerHash, got.ledger, 100
		lk.Status = transfer.LookupSuccess
		if got.failed {
			lk.Status = transfer.LookupFailed
			lk.ResultCodes = []string{"tx_failed", "op_no_trust"}
			if l.failCodes != nil {
				lk.ResultCodes = l.failCodes
			}
		}
	}
	return lk, nil
}

func (l *fakeLedger) Done(context.Context, transfer.Envelope) {}

func (l *fakeLedger) landedCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.landed)
}

func (l *fakeLedger) counts() (prepares, sends int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.prepares, len(l.sends)
}

var errCrash = errors.New("crash")

// addresses accepts any G.../C.../M... string of 56 characters, for tests that need no strkey.
type addresses struct{}

func (addresses) ParseAddress(s string) (transfer.AddressKind, error) {
	if len(s) != 56 {
		return 0, errors.New("bad length")
	}
	switch s[0] {
	case 'G':
		return transfer.AccountAddress, nil
	case 'C':
		return transfer.ContractAddress, nil
	case 'M':
		return transfer.MuxedAddress, nil
	}
	return 0, errors.New("bad version")
}
