package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

const wallet = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"

type harness struct {
	clock  *vclock.Clock
	store  *transfertest.Store
	ledger *fakeLedger
	orch   *transfer.Orchestrator
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	c := vclock.New(time.Unix(1_800_000_000, 0))
	h := &harness{clock: c, store: transfertest.NewStore(), ledger: newFakeLedger(c)}
	h.orch = &transfer.Orchestrator{
		Store: h.store, Ledger: h.ledger, Clock: c,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	return h
}

func input(key, amount string) transfer.Input {
	req, _, err := func() (transfer.Request, int, error) {
		r, err := transfer.Rules{Assets: []string{"USDC"}, Addresses: addresses{}}.Canonicalize(
			transfer.RawRequest{OperationType: "withdraw", WalletAddress: wallet, Amount: amount, Asset: "usdc"})
		return r, 0, err
	}()
	if err != nil {
		panic(err)
	}
	return transfer.Input{ClientKey: key, Request: req, TraceID: "trace-1"}
}

func (h *harness) item(t *testing.T, key string) transfer.Record {
	t.Helper()
	rec, ok := h.store.Item(transfer.StoreKey(wallet, key))
	if !ok {
		t.Fatalf("no item for %s", key)
	}
	return rec
}

func problemCode(err error) string {
	var p transfer.ProblemError
	if errors.As(err, &p) {
		return p.Problem().Code
	}
	return fmt.Sprintf("untyped(%v)", err)
}

func TestFreshTransferLandsOnceAndReplays(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	out, err := h.orch.Transfer(ctx, input("order-0001", "10"))
	if err != nil {
		t.Fatalf("transfer: %v", err)
	}
	if out.Replayed || out.TransactionHash == "" || out.Ledger != 101 {
		t.Fatalf("outcome = %+v, want a fresh hash in ledger 101", out)
	}
	rec := h.item(t, "order-0001")
	if rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != out.TransactionHash {
		t.Fatalf("item = %+v", rec)
	}
	if rec.ExpiresAt != h.clock.Now().Add(24*time.Hour).Unix() {
		t.Fatalf("expiresAt = %d, want now+24h", rec.ExpiresAt)
	}
	if rec.Envelope == nil || rec.Envelope.XDR != "" || rec.LeaseOwner != "" {
		t.Fatalf("settled item keeps the hashes but not the signed XDR or the lease: %+v", rec.Envelope)
	}
	writes := h.store.Writes()
	again, err := h.orch.Transfer(ctx, input("order-0001", "10.000"))
	if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash || again.Ledger != out.Ledger {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if got := h.store.Writes() - writes; got != 1 {
		t.Fatalf("a replay cost %d store writes, want 1 (the failed claim)", got)
	}
	if p, s := h.ledger.counts(); p != 1 || s != 1 || h.ledger.landedCount() != 1 {
		t.Fatalf("prepares=%d sends=%d landed=%d, want 1/1/1", p, s, h.ledger.landedCount())
	}
}

func TestSameKeyOtherRequestConflicts(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.orch.Transfer(ctx, input("order-0002", "10")); err != nil {
		t.Fatal(err)
	}
	_, err := h.orch.Transfer(ctx, input("order-0002", "11"))
	var c *transfer.ConflictError
	if !errors.As(err, &c) {
		t.Fatalf("err = %v, want ConflictError", err)
	}
	if p := c.Problem(); p.Kind != transfer.KindConflict || p.Code != "IDEMPOTENCY_KEY_CONFLICT" || p.Classification != transfer.Terminal {
		t.Fatalf("problem = %+v", p)
	}
}

func TestFirstSendRefusalRebuildsOnce(t *testing.T) {
	for _, res := range []transfer.SendResult{
		{Status: transfer.SendTryAgainLater},
		{Status: transfer.SendError, Code: "txBAD_SEQ"},
		{Status: transfer.SendError, Code: "txINSUFFICIENT_FEE"},
	} {
		t.Run(string(res.Status)+res.Code, func(t *testing.T) {
			h := newHarness(t)
			h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
				if n == 0 {
					return res, false, nil
				}
				return transfer.SendResult{Status: transfer.SendPending}, true, nil
			}
			out, err := h.orch.Transfer(context.Background(), input("order-0003", "5"))
			if err != nil {
				t.Fatalf("transfer: %v", err)
			}
			if p, s := h.ledger.counts(); p != 2 || s != 2 {
				t.Fatalf("prepares=%d sends=%d, want a rebuild after the proven refusal", p, s)
			}
			if h.ledger.landedCount() != 1 || out.TransactionHash != fmt.Sprintf("%064x", 2) {
				t.Fatalf("landed=%d hash=%s", h.ledger.landedCount(), out.TransactionHash)
			}
		})
	}
}

func TestLostResponseResendsSameEnvelopeNeverRebuilds(t *testing.T) {
	h := newHarness(t)
	// The first send reaches the network but its answer is lost (a 504 or an EOF); the re-send
	// is refused the way the network refuses an already-queued or included envelope.
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if n == 0 {
			return transfer.SendResult{}, true, errors.New("EOF after write")
		}
		return transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ"}, false, nil
	}
	h.ledger.noClose = true
	done := make(chan struct{})
	var out transfer.Outcome
	var err error
	go func() {
		defer close(done)
		out, err = h.orch.Transfer(context.Background(), input("order-0004", "5"))
	}()
	<-done
	// With ledgers stalled nothing can be proven: the transfer is in doubt, not rebuilt.
	if problemCode(err) != transfer.CodeInDoubt {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT", err)
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("prepares = %d, want 1: a refusal of a re-send proves nothing", p)
	}
	rec := h.item(t, "order-0004")
	if rec.Status != transfer.StatusInDoubt || rec.ExpiresAt != 0 || rec.Envelope == nil || rec.Envelope.XDR == "" {
		t.Fatalf("in-doubt item = %+v", rec)
	}
	_ = out
	// The network heals; the queued envelope lands; the retry settles inline and replays it.
	h.ledger.noClose = false
	h.clock.Advance(5 * time.Second)
	h.ledger.closeIfDue()
	again, err := h.orch.Transfer(context.Background(), input("order-0004", "5"))
	if err != nil || !again.Replayed || again.TransactionHash != rec.Envelope.InnerHash {
		t.Fatalf("retry = %+v, %v; want the in-doubt envelope replayed", again, err)
	}
	if h.item(t, "order-0004").Status != transfer.StatusReplayable || h.ledger.landedCount() != 1 {
		t.Fatal("the in-doubt item was not settled from the ledger")
	}
}

func TestPendingEnvelopeProvenDeadByLedgerCloseTime(t *testing.T) {
	h := newHarness(t)
	// The first envelope is answered PENDING but dropped by the network: it never lands.
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendPending}, env.InnerHash != fmt.Sprintf("%064x", 1), nil
	}
	_, err := h.orch.Transfer(context.Background(), input("order-0005", "5"))
	if problemCode(err) != transfer.CodeTransactionExpired {
		t.Fatalf("err = %v, want TRANSACTION_EXPIRED once a ledger closed after maxTime", err)
	}
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Problem().Classification != transfer.Retryable {
		t.Fatalf("err = %#v, want retryable", err)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-0005")); ok {
		t.Fatal("a proven-dead envelope releases the key")
	}
	out, err := h.orch.Transfer(context.Background(), input("order-0005", "5"))
	if err != nil || out.TransactionHash != fmt.Sprintf("%064x", 2) || h.ledger.landedCount() != 1 {
		t.Fatalf("retry = %+v, %v", out, err)
	}
}

func TestLocalClockNeverProvesDeath(t *testing.T) {
	h := newHarness(t)
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendPending}, false, nil
	}
	h.ledger.noClose = true // the local clock runs past maxTime, no ledger closes
	_, err := h.orch.Transfer(context.Background(), input("order-0006", "5"))
	if problemCode(err) != transfer.CodeInDoubt {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT", err)
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("prepares = %d, want 1", p)
	}
}

func TestShortHistoryNeverProvesDeath(t *testing.T) {
	h := newHarness(t)
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendPending}, false, nil
	}
	h.ledger.oldest = 10_000 // history starts after the submission
	_, err := h.orch.Transfer(context.Background(), input("order-0007", "5"))
	if problemCode(err) != transfer.CodeInDoubt {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT", err)
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("prepares = %d, want 1", p)
	}
}

func TestFailedTransactionIsStoredAndReplayed(t *testing.T) {
	h := newHarness(t)
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	_, err := h.orch.Transfer(context.Background(), input("order-0008", "5"))
	var r *transfer.RejectedError
	if !errors.As(err, &r) || r.Problem().Kind != transfer.KindRejected || strings.Join(r.ResultCodes, ",") != "tx_failed,op_no_trust" {
		t.Fatalf("err = %#v", err)
	}
	_, err2 := h.orch.Transfer(context.Background(), input("order-0008", "5"))
	var r2 *transfer.RejectedError
	if !errors.As(err2, &r2) || r2.TransactionHash != r.TransactionHash {
		t.Fatalf("replayed rejection = %v", err2)
	}
	if r.Problem().Replayed || !r2.Problem().Replayed {
		t.Fatalf("replayed: first %v, second %v; want false then true", r.Problem().Replayed, r2.Problem().Replayed)
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("prepares = %d, want 1: a stored rejection does not re-run", p)
	}
}

func TestConcurrentCallersCoalesce(t *testing.T) {
	for _, budget := range []time.Duration{transfer.DefaultSettings().Timeout, 15 * time.Second} {
		t.Run(budget.String(), func(t *testing.T) { testCoalesce(t, budget) })
	}
}

// testCoalesce: 8 callers of one key get one transaction. With a budget too short to build a second
// envelope (15 s < MinValidity + ProofWindow), the callers that waited still get the replay, not
// TRANSFER_IN_PROGRESS.
func testCoalesce(t *testing.T, budget time.Duration) {
	h := newHarness(t)
	h.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = budget
		return s
	}
	var wg sync.WaitGroup
	outs := make([]transfer.Outcome, 8)
	errs := make([]error, 8)
	release := h.clock.Hold() // the 8 callers arrive at the same instant
	for i := range 8 {
		h.clock.Go(&wg, func() {
			outs[i], errs[i] = h.orch.Transfer(context.Background(), input("order-0009", "7"))
		})
	}
	release()
	wg.Wait()
	fresh := 0
	for i := range 8 {
		if errs[i] != nil {
			t.Fatalf("caller %d: %v", i, errs[i])
		}
		if outs[i].TransactionHash != outs[0].TransactionHash {
			t.Fatalf("caller %d got %s, caller 0 %s", i, outs[i].TransactionHash, outs[0].TransactionHash)
		}
		if !outs[i].Replayed {
			fresh++
		}
	}
	if fresh != 1 || h.ledger.landedCount() != 1 {
		t.Fatalf("fresh=%d landed=%d, want 1/1", fresh, h.ledger.landedCount())
	}
}

func TestCrashAtEveryStepLandsAtMostOnce(t *testing.T) {
	for _, step := range []transfer.Step{transfer.StepClaimed, transfer.StepPrepared, transfer.StepAttached, transfer.StepSent, transfer.StepSettling} {
		t.Run(string(step), func(t *testing.T) {
			h := newHarness(t)
			h.orch.Hooks = func(_ context.Context, s transfer.Step, _ transfer.Record) error {
				if s == step {
					return errCrash
				}
				return nil
			}
			if _, err := h.orch.Transfer(context.Background(), input("order-0010", "3")); !errors.Is(err, errCrash) {
				t.Fatalf("err = %v, want the crash", err)
			}
			h.orch.Hooks = nil
			// Before the lease expires, a retry waits and then reports the transfer in progress.
			// (A crash at settling comes after a ledger close, so the dead lease runs out within
			// this retry's budget and the retry takes it over itself.)
			_, err := h.orch.Transfer(context.Background(), input("order-0010", "3"))
			if step != transfer.StepSettling && problemCode(err) != transfer.CodeInProgress {
				t.Fatalf("retry under a live lease: %v, want TRANSFER_IN_PROGRESS", err)
			}
			h.clock.Advance(time.Minute) // the dead invocation's lease expires
			h.ledger.closeIfDue()
			out, err := h.orch.Transfer(context.Background(), input("order-0010", "3"))
			if err != nil {
				t.Fatalf("after take-over: %v", err)
			}
			if h.ledger.landedCount() != 1 {
				t.Fatalf("landed %d transactions, want 1", h.ledger.landedCount())
			}
			prepares, _ := h.ledger.counts()
			wantPrepares := 1
			switch step {
			case transfer.StepPrepared:
				wantPrepares = 2 // nothing was attached: the take-over builds anew
			case transfer.StepAttached:
				// Attached but never sent: re-sent after its maxTime, refused as too late, proven
				// dead by the ledger, then built anew.
				wantPrepares = 2
			}
			if prepares != wantPrepares {
				t.Fatalf("prepares = %d, want %d", prepares, wantPrepares)
			}
			if rec := h.item(t, "order-0010"); rec.Status != transfer.StatusReplayable || rec.Result.TransactionHash != out.TransactionHash {
				t.Fatalf("item = %+v", rec)
			}
		})
	}
}

func TestCircuitOpenRefusesBeforeClaiming(t *testing.T) {
	h := newHarness(t)
	h.orch.Breaker = transfer.NewBreaker(transfer.BreakerSettings{FailureThreshold: 2, ResetTimeout: time.Minute})
	h.ledger.prepareErr = errors.New("connection refused")
	for i := range 2 {
		_, err := h.orch.Transfer(context.Background(), input(fmt.Sprintf("order-01%02d", i), "1"))
		if problemCode(err) != transfer.CodeRPCError {
			t.Fatalf("call %d: %v, want RPC_ERROR", i, err)
		}
	}
	writes := h.store.Writes()
	_, err := h.orch.Transfer(context.Background(), input("order-0199", "1"))
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeCircuitOpen || u.Problem().RetryAfter <= 0 || u.Problem().Kind != transfer.KindUnavailable {
		t.Fatalf("err = %v, want SOROBAN_CIRCUIT_OPEN with retryAfter", err)
	}
	if h.store.Writes() != writes {
		t.Fatal("an open circuit must not claim the key")
	}
	if h.store.Len() != 0 {
		t.Fatalf("failed prepares left items behind: %d", h.store.Len())
	}
}

func TestPrepareValidationErrorReleasesKey(t *testing.T) {
	h := newHarness(t)
	h.ledger.prepareErr = &transfer.ValidationError{Code: transfer.CodeOperationNotSupp, Kind: transfer.KindUnacceptable, Detail: "no"}
	_, err := h.orch.Transfer(context.Background(), input("order-0011", "1"))
	if problemCode(err) != transfer.CodeOperationNotSupp {
		t.Fatalf("err = %v", err)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-0011")); ok {
		t.Fatal("the key should be released when nothing was sent")
	}
}

// TestFeeAboveCapAnswersAtOnce: a Ledger that finds the network's fee above the cap answers
// FEE_ABOVE_CAP from Prepare; the call answers it at once, retryable with its Retry-After, with
// nothing sent, the key free, and the code in the call's Report (the metric and its alarm).
func TestFeeAboveCapAnswersAtOnce(t *testing.T) {
	h := newHarness(t)
	rep := &reports{}
	h.orch.Observer = rep
	h.ledger.prepareErr = &transfer.UnavailableError{Code: transfer.CodeFeeAboveCap, RetryAfter: 5 * time.Second,
		Detail: "the classic lane needs 2001 stroops per operation; above MAX_FEE_STROOPS 1000; nothing was submitted"}
	start := h.clock.Now()
	_, err := h.orch.Transfer(context.Background(), input("order-0013", "1"))
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeFeeAboveCap || u.Problem().Kind != transfer.KindUnavailable ||
		u.Problem().Classification != transfer.Retryable || u.Problem().RetryAfter != 5*time.Second {
		t.Fatalf("err = %v, want 503 FEE_ABOVE_CAP, retryable, Retry-After 5s", err)
	}
	if len(h.ledger.sends) != 0 || !h.clock.Now().Equal(start) {
		t.Fatalf("%d sends, %v waited; want nothing sent and no wait", len(h.ledger.sends), h.clock.Now().Sub(start))
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-0013")); ok {
		t.Fatal("the key should be released when nothing was sent")
	}
	if len(rep.all) != 1 || rep.all[0].Code != transfer.CodeFeeAboveCap || rep.all[0].Outcome != transfer.OutcomeFailed {
		t.Fatalf("reports %+v, want one failed FEE_ABOVE_CAP", rep.all)
	}
}

func TestStoreFailureOnClaimIsRetryable(t *testing.T) {
	h := newHarness(t)
	h.store.Fail(func(op string) error {
		if op == "claim" {
			return errors.New("throttled")
		}
		return nil
	})
	_, err := h.orch.Transfer(context.Background(), input("order-0012", "1"))
	if problemCode(err) != transfer.CodeStoreUnavailable {
		t.Fatalf("err = %v", err)
	}
	if p, _ := h.ledger.counts(); p != 0 {
		t.Fatal("nothing may be built without a claim")
	}
}

func TestInDoubtProvenDeadRunsFreshAttempt(t *testing.T) {
	h := newHarness(t)
	h.ledger.noClose = true
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		if env.InnerHash == fmt.Sprintf("%064x", 1) {
			return transfer.SendResult{}, false, errors.New("timeout after write") // never accepted
		}
		return transfer.SendResult{Status: transfer.SendPending}, true, nil
	}
	if _, err := h.orch.Transfer(context.Background(), input("order-0013", "2")); problemCode(err) != transfer.CodeInDoubt {
		t.Fatalf("err = %v, want in doubt", err)
	}
	// While the envelope could still land, a retry stays 409 with a Retry-After.
	_, err := h.orch.Transfer(context.Background(), input("order-0013", "2"))
	var d *transfer.InDoubtError
	if !errors.As(err, &d) || d.RetryAfter <= 0 {
		t.Fatalf("err = %v, want InDoubtError with RetryAfter", err)
	}
	// Ledgers close again, past maxTime: the envelope is proven dead and the retry runs fresh.
	h.ledger.noClose = false
	h.clock.Advance(time.Minute)
	h.ledger.closeIfDue()
	out, err := h.orch.Transfer(context.Background(), input("order-0013", "2"))
	if err != nil || out.Replayed || out.TransactionHash != fmt.Sprintf("%064x", 2) {
		t.Fatalf("retry = %+v, %v; want a fresh transfer", out, err)
	}
}

func TestViewShowsThreeStatuses(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if _, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-0014"); problemCode(err) != transfer.CodeNotFound {
		t.Fatalf("err = %v", err)
	}
	out, _ := h.orch.Transfer(ctx, input("order-0014", "1"))
	v, err := h.orch.View(ctx, transfer.Wallet{Address: strings.ToLower(wallet)}, "order-0014")
	if err != nil || v.Status != "success" || v.TransactionHash != out.TransactionHash {
		t.Fatalf("view = %+v, %v", v, err)
	}
	if v.OutsideReplayWindow {
		t.Fatalf("a fresh item reads as outside its replay window: %+v", v)
	}
	// Expired but not yet deleted: the item still answers (it is the key's newest incarnation),
	// marked outside its replay window.
	h.clock.Advance(25 * time.Hour)
	v, err = h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-0014")
	if err != nil || v.Status != "success" || v.TransactionHash != out.TransactionHash || !v.OutsideReplayWindow {
		t.Fatalf("an expired item: view = %+v, %v", v, err)
	}
}

func TestSettingsAreReadPerCall(t *testing.T) {
	h := newHarness(t)
	calls := 0
	h.orch.Settings = func() transfer.Settings {
		calls++
		s := transfer.DefaultSettings()
		s.Timeout = 30 * time.Second
		return s
	}
	h.ledger.noClose = true
	start := h.clock.Now()
	_, err := h.orch.Transfer(context.Background(), input("order-0015", "1"))
	if problemCode(err) != transfer.CodeInDoubt || calls != 1 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}
	if spent := h.clock.Now().Sub(start); spent > 30*time.Second {
		t.Fatalf("spent %v of a 30 s budget", spent)
	}
	if rec := h.item(t, "order-0015"); rec.Envelope.MaxTime != start.Add(21*time.Second).Unix() {
		t.Fatalf("maxTime = %d, want start+30s-9s (the proof window)", rec.Envelope.MaxTime)
	}
}

// TestMaxTimeNeverInsideTheTooLateOffset: stellar-core refuses an envelope whose maxTime is closer
// than its upper-bound close-time offset (about two ledger intervals), so maxTime is never less than
// MinValidity away, even when the budget is shorter than MinValidity plus the proof window.
func TestMaxTimeNeverInsideTheTooLateOffset(t *testing.T) {
	h := newHarness(t)
	h.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = 15 * time.Second // deadline - proof window = now + 6 s: too close
		return s
	}
	h.ledger.noClose = true
	start := h.clock.Now()
	_, _ = h.orch.Transfer(context.Background(), input("order-0016", "1"))
	if rec := h.item(t, "order-0016"); rec.Envelope.MaxTime != start.Add(12*time.Second).Unix() {
		t.Fatalf("maxTime = start+%ds, want start+12s (MinValidity)", rec.Envelope.MaxTime-start.Unix())
	}
}

func TestRefusedConnectionsAreRetryableAndReleaseTheKey(t *testing.T) {
	h := newHarness(t)
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{}, false, fmt.Errorf("dial tcp 127.0.0.1:1: connect: connection refused: %w", transfer.ErrNotSent)
	}
	_, err := h.orch.Transfer(context.Background(), input("order-0016", "1"))
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeNetworkUnavailable || u.Problem().Classification != transfer.Retryable {
		t.Fatalf("err = %v, want NETWORK_UNAVAILABLE (retryable)", err)
	}
	if _, sends := h.ledger.counts(); sends < 2 {
		t.Fatalf("sends = %d: the same envelope should be retried while nothing reached the network", sends)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-0016")); ok {
		t.Fatal("nothing reached the network: the key must be released")
	}
}

func TestSendFailuresAfterTheWriteAreIndeterminate(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code string
	}{
		{fmt.Errorf("HTTP 500: %w", transfer.ErrUnexpectedAnswer), transfer.CodeSubmissionFailed},
		{errors.New("read tcp: connection reset by peer"), transfer.CodeInternalError},
		{fmt.Errorf("rpc: %w", context.DeadlineExceeded), transfer.CodeTimeout},
	} {
		t.Run(tc.code, func(t *testing.T) {
			h := newHarness(t)
			h.ledger.noClose = true
			h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
				return transfer.SendResult{}, false, tc.err
			}
			_, err := h.orch.Transfer(context.Background(), input("order-0017", "1"))
			var d *transfer.InDoubtError
			if !errors.As(err, &d) || d.FailingCode != tc.code {
				t.Fatalf("err = %v, want TRANSFER_IN_DOUBT (%s)", err, tc.code)
			}
			if p, _ := h.ledger.counts(); p != 1 {
				t.Fatalf("prepares = %d, want 1", p)
			}
		})
	}
}

func TestRepeatedFirstSendRefusalsEndAsTheRefusal(t *testing.T) {
	h := newHarness(t)
	h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
		return transfer.SendResult{Status: transfer.SendTryAgainLater}, false, nil
	}
	_, err := h.orch.Transfer(context.Background(), input("order-0018", "1"))
	if problemCode(err) != transfer.CodeRPCError {
		t.Fatalf("err = %v, want the last refusal (RPC_ERROR), not TRANSFER_IN_PROGRESS", err)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-0018")); ok {
		t.Fatal("every envelope was refused: the key must be free")
	}
}

func TestHungSendLeavesTheMarginForTheInDoubtWrite(t *testing.T) {
	h := newHarness(t)
	h.ledger.hang = true
	h.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.DeadlineMargin = 150 * time.Millisecond
		return s
	}
	// The invocation's deadline is real time: the hung send must give up DeadlineMargin before it.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	_, err := h.orch.Transfer(ctx, input("order-0019", "1"))
	var d *transfer.InDoubtError
	if !errors.As(err, &d) || d.FailingCode != transfer.CodeTimeout {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT (TRANSFER_TIMEOUT)", err)
	}
	if rec := h.item(t, "order-0019"); rec.Status != transfer.StatusInDoubt {
		t.Fatalf("item is %s: the in-doubt write needs the margin the hung send must leave", rec.Status)
	}
}

func TestReplayWindowBelowAnHourIsRefusedPerCall(t *testing.T) {
	h := newHarness(t)
	ttl := 59 * time.Minute
	h.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.KeyTTL = ttl
		return s
	}
	_, err := h.orch.Transfer(context.Background(), input("order-ttl-1", "1"))
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != transfer.CodeConfigurationInvalid || u.Problem().Kind != transfer.KindUnavailable {
		t.Fatalf("err = %v, want 503 %s", err, transfer.CodeConfigurationInvalid)
	}
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "order-ttl-1")); ok || func() bool { p, s := h.ledger.counts(); return p+s != 0 }() {
		t.Fatal("a refused call claimed the key or sent an envelope")
	}
	if _, err := h.orch.Settle(context.Background(), transfer.Record{Status: transfer.StatusInDoubt}); err == nil {
		t.Fatal("Settle ran with a replay window under an hour")
	}
	ttl = time.Hour // the next call reads the fixed value
	if _, err := h.orch.Transfer(context.Background(), input("order-ttl-1", "1")); err != nil {
		t.Fatalf("with a one-hour window: %v", err)
	}
	if rec := h.item(t, "order-ttl-1"); rec.ExpiresAt != h.clock.Now().Add(time.Hour).Unix() {
		t.Fatalf("expiresAt = %d, want now + 1 h", rec.ExpiresAt)
	}
}
