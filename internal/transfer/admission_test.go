package transfer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// admission is a transfer.Admission that answers err (nil: a source is free in time) and records
// the maxTime of each call.
type admission struct {
	mu       sync.Mutex
	err      error
	maxTimes []time.Time
	released int
}

func (a *admission) Release(context.Context) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.released++
}

func (a *admission) Admit(ctx context.Context, _ transfer.Request, maxTime time.Time) (context.Context, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.maxTimes = append(a.maxTimes, maxTime)
	return ctx, a.err
}

func (a *admission) set(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

func (a *admission) calls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.maxTimes)
}

func channelsBusy(retryAfter time.Duration) error {
	return &transfer.UnavailableError{Code: transfer.CodeChannelsBusy, RetryAfter: retryAfter,
		Detail: "every channel account is busy; nothing was submitted"}
}

func admitted(h *harness) *admission {
	a := &admission{}
	h.orch.Admission = a
	return a
}

// No source within the wait, told before the claim: the call reads the key (free), answers
// CHANNELS_BUSY with the admission's Retry-After at once, and writes nothing: no claim, so no
// release either, and nothing is prepared. The retry, with a source free, lands once.
func TestABusyAnswerLeavesNoClaim(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	adm.set(channelsBusy(7 * time.Second))
	ctx := context.Background()
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input("order-admit-1", "3"))
	h.busyAnswer(t, err, "order-admit-1", 7*time.Second, start)
	if w := h.store.Writes(); w != 0 {
		t.Fatalf("%d store writes for a busy answer, want 0 (no claim, no release)", w)
	}
	if p, s := h.ledger.counts(); p != 0 || s != 0 {
		t.Fatalf("prepares=%d sends=%d for a busy answer", p, s)
	}
	adm.set(nil)
	_ = h.clock.Sleep(ctx, 7*time.Second)
	out, err := h.orch.Transfer(ctx, input("order-admit-1", "3"))
	if err != nil || out.Replayed || out.TransactionHash == "" {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	if p, s := h.ledger.counts(); p != 1 || s != 1 || h.ledger.landedCount() != 1 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want 1/1/1", p, s, h.ledger.landedCount())
	}
	if n := adm.calls(); n != 2 || adm.released != 2 {
		t.Fatalf("%d admissions and %d releases for two calls, want 2 of each", n, adm.released)
	}
}

// The admission is asked with the envelope's maxTime (Settings.ProofWindow before the end of
// the call's budget), the bound of the wait for a source.
func TestTheAdmissionIsAskedWithTheEnvelopesMaxTime(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	if _, err := h.orch.Transfer(ctx, input("order-admit-2", "3")); err != nil {
		t.Fatal(err)
	}
	s := transfer.DefaultSettings()
	want := h.item(t, "order-admit-2").CreatedAt.Add(s.Timeout - s.ProofWindow)
	if len(adm.maxTimes) != 1 || !adm.maxTimes[0].Equal(want) {
		t.Fatalf("admitted with maxTimes %v, want [%v]", adm.maxTimes, want)
	}
}

// A settled key is replayed from its item while no source is free: the admission's busy answer
// is not the client's, since a replay needs no source. Nothing is written or prepared.
func TestAReplayIsAnsweredWhileChannelsAreBusy(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	ctx := context.Background()
	first, err := h.orch.Transfer(ctx, input("order-admit-3", "3"))
	if err != nil {
		t.Fatal(err)
	}
	writes := h.store.Writes()
	adm.set(channelsBusy(5 * time.Second))
	out, err := h.orch.Transfer(ctx, input("order-admit-3", "3"))
	if err != nil || !out.Replayed || out.TransactionHash != first.TransactionHash || out.Ledger != first.Ledger {
		t.Fatalf("replay = %+v, %v; want the first outcome %+v replayed", out, err, first)
	}
	if w := h.store.Writes(); w != writes {
		t.Fatalf("the replay wrote %d times", w-writes)
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("%d prepares, want 1", p)
	}
	if adm.calls() != 2 || adm.released != 2 {
		t.Fatalf("%d admissions and %d releases, want every admission given back when its call ends", adm.calls(), adm.released)
	}
	// Another request under the same key is still a conflict, busy or not.
	_, err = h.orch.Transfer(ctx, input("order-admit-3", "4"))
	var c *transfer.ConflictError
	if !errors.As(err, &c) {
		t.Fatalf("another request under the key: %v, want ConflictError", err)
	}
}

// The key cannot be read after a busy admission (the store fails the GetItem): the call claims
// as it would without the admission, so a settled key is still replayed from its item (the
// claim that loses to it returns it), never answered CHANNELS_BUSY.
func TestAReplayIsAnsweredWhenTheBusyCheckCannotReadTheKey(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	ctx := context.Background()
	first, err := h.orch.Transfer(ctx, input("order-admit-4", "3"))
	if err != nil {
		t.Fatal(err)
	}
	adm.set(channelsBusy(5 * time.Second))
	gets := 0
	h.store.Fail(func(op string) error {
		if op == "get" {
			gets++
			return errors.New("dynamodb: throttled")
		}
		return nil
	})
	out, err := h.orch.Transfer(ctx, input("order-admit-4", "3"))
	if err != nil || !out.Replayed || out.TransactionHash != first.TransactionHash {
		t.Fatalf("replay = %+v, %v; want the first outcome %+v replayed", out, err, first)
	}
	if gets != 1 {
		t.Fatalf("%d failed reads, the test needs the busy check's read to fail", gets)
	}
}

// The read fails on a free key: the claim is written and Prepare decides (here: busy too); the
// claim is released before the answer, so the key never stays held by a call that sent nothing.
func TestAKeyTheBusyCheckCannotReadIsClaimedAndFreed(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	adm.set(channelsBusy(5 * time.Second))
	h.ledger.prepareErr = channelsBusy(5 * time.Second)
	h.store.Fail(func(op string) error {
		if op == "get" {
			return errors.New("dynamodb: throttled")
		}
		return nil
	})
	start := h.clock.Now()
	_, err := h.orch.Transfer(context.Background(), input("order-admit-5", "3"))
	h.busyAnswer(t, err, "order-admit-5", 5*time.Second, start)
	if w := h.store.Writes(); w != 2 {
		t.Fatalf("%d writes, want 2: the claim and its release", w)
	}
}

// A key whose settled item has expired (its replay window is over) is free: a busy admission is
// answered CHANNELS_BUSY with nothing written, as a claim replacing it would have been.
func TestAnExpiredKeyIsAnsweredBusyWithoutAClaim(t *testing.T) {
	h := newHarness(t)
	adm := admitted(h)
	ctx := context.Background()
	if _, err := h.orch.Transfer(ctx, input("order-admit-6", "3")); err != nil {
		t.Fatal(err)
	}
	_ = h.clock.Sleep(ctx, transfer.DefaultSettings().KeyTTL+time.Hour)
	writes := h.store.Writes()
	adm.set(channelsBusy(5 * time.Second))
	start := h.clock.Now()
	_, err := h.orch.Transfer(ctx, input("order-admit-6", "4"))
	var ue *transfer.UnavailableError
	if !errors.As(err, &ue) || ue.Code != transfer.CodeChannelsBusy || ue.RetryAfter != 5*time.Second {
		t.Fatalf("err = %v, want CHANNELS_BUSY with Retry-After 5s", err)
	}
	if w := h.store.Writes(); w != writes || h.clock.Now() != start {
		t.Fatalf("%d writes and %v waited for a busy answer on an expired key", w-writes, h.clock.Now().Sub(start))
	}
}
