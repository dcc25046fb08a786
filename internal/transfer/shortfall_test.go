package transfer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A FAILED inclusion is judged by its result codes: the destination's (and the request's) failures
// are stored rejections with the ledger's codes; the paying side's (the vault, the fee account) and
// the service's own are retryable, the key released and a page raised (README.md, "When the ledger
// answers FAILED").
func TestSourceShortfall(t *testing.T) {
	plain := transfer.Envelope{InnerHash: "aa"}
	bumped := transfer.Envelope{InnerHash: "aa", OuterHash: "bb"}
	failed := func(codes ...string) transfer.Lookup {
		return transfer.Lookup{Status: transfer.LookupFailed, ResultCodes: codes}
	}
	for _, c := range []struct {
		env  transfer.Envelope
		lk   transfer.Lookup
		want string
	}{
		{plain, failed("tx_failed", "op_underfunded"), transfer.CodeVaultUnderfunded},
		{bumped, failed("tx_failed", "op_underfunded"), transfer.CodeVaultUnderfunded},
		{plain, failed("tx_insufficient_balance"), transfer.CodeVaultUnderfunded},
		{bumped, failed("tx_insufficient_balance"), transfer.CodeFeeAccountUnderfunded},
		{plain, failed("tx_failed", "op_no_trust"), ""},
		{plain, failed("tx_failed", "op_not_authorized"), ""},
		{plain, failed("tx_failed", "op_line_full"), ""},
		{plain, failed("tx_failed", "op_no_destination"), ""},
		{plain, failed("tx_failed", "op_no_issuer"), ""},
		{bumped, failed("tx_failed", "op_bad_auth"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_no_source_account"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_trapped"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_resource_limit_exceeded"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_insufficient_refundable_fee"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_entry_archived"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_malformed"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_unknown"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed", "op_something_new"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_failed"), transfer.CodeServiceSideFailure},
		{bumped, failed("tx_bad_auth"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_bad_auth_extra"), transfer.CodeServiceSideFailure},
		{plain, failed("tx_bad_sponsorship"), transfer.CodeServiceSideFailure},
		// A batch: one destination's fault beside operations that applied is that key's rejection
		// alone; the vault's shortfall anywhere outranks it.
		{plain, failed("tx_failed", "op_success", "op_no_trust"), ""},
		{plain, failed("tx_failed", "op_no_trust", "op_underfunded"), transfer.CodeVaultUnderfunded},
		// Set before the sequence check at apply: the sequence number is not consumed, so nothing
		// proves the envelope dead and the key is not released.
		{plain, failed("tx_bad_seq"), ""},
		{plain, failed("tx_no_account"), ""},
		{plain, failed("tx_too_late"), ""},
		{plain, failed(), ""},
		{plain, transfer.Lookup{Status: transfer.LookupSuccess, ResultCodes: []string{"tx_failed", "op_underfunded"}}, ""},
	} {
		if got := transfer.SourceShortfall(c.env, c.lk); got != c.want {
			t.Errorf("%v (fee bump %v): %q, want %q", c.lk.ResultCodes, c.env.OuterHash != "", got, c.want)
		}
	}
}

// logLines is a concurrency-safe log sink that decodes slog's JSON lines.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// alerts returns the lines carrying an "alert" field.
func (l *logLines) alerts(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		var m map[string]any
		if line == "" || json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if _, ok := m["alert"]; ok {
			out = append(out, m)
		}
	}
	return out
}

func pagingHarness(t *testing.T) (*harness, *logLines) {
	t.Helper()
	h := newHarness(t)
	logs := &logLines{}
	h.orch.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	return h, logs
}

func unavailable(t *testing.T, err error, code string) *transfer.UnavailableError {
	t.Helper()
	var u *transfer.UnavailableError
	if !errors.As(err, &u) || u.Code != code {
		t.Fatalf("err = %v, want 503 %s", err, code)
	}
	if p := u.Problem(); p.Kind != transfer.KindUnavailable || p.Classification != transfer.Retryable || p.RetryAfter <= 0 {
		t.Fatalf("problem = %+v, want a retryable 503 with Retry-After", p)
	}
	return u
}

// The vault lacks the asset: its payment is included FAILED op_underfunded (fee charged, sequence
// number consumed, nothing moved). The call answers 503 VAULT_UNDERFUNDED at once, with the key
// released (no item), builds no second envelope, and pages once. After the vault is funded, a
// retry with the same key pays exactly once, and the next retry replays it.
func TestVaultUnderfundedFailedReleasesKeyAndRetryPaysOnce(t *testing.T) {
	h, logs := pagingHarness(t)
	var mu sync.Mutex
	empty := true
	h.ledger.failResult = func(transfer.Envelope) bool { mu.Lock(); defer mu.Unlock(); return empty }
	h.ledger.failCodes = []string{"tx_failed", "op_underfunded"}
	ctx := context.Background()

	_, err := h.orch.Transfer(ctx, input("payout-0001", "5"))
	unavailable(t, err, transfer.CodeVaultUnderfunded)
	if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-0001")); ok {
		t.Fatal("the key should be released: nothing moved and the envelope can never land")
	}
	if p, _ := h.ledger.counts(); p != 1 {
		t.Fatalf("prepares = %d, want 1: no second envelope while the vault is empty", p)
	}
	pages := logs.alerts(t)
	if len(pages) != 1 || pages[0]["alert"] != transfer.AlertVaultUnderfunded || pages[0]["level"] != "ERROR" ||
		pages[0]["code"] != transfer.CodeVaultUnderfunded || pages[0]["idempotencyKey"] != "payout-0001" {
		t.Fatalf("pages = %v, want one ERROR %q", pages, transfer.AlertVaultUnderfunded)
	}

	mu.Lock()
	empty = false // an operator funds the vault
	mu.Unlock()
	out, err := h.orch.Transfer(ctx, input("payout-0001", "5"))
	if err != nil || out.Replayed || out.TransactionHash == "" {
		t.Fatalf("retry after funding: %+v %v, want a fresh payment", out, err)
	}
	again, err := h.orch.Transfer(ctx, input("payout-0001", "5"))
	if err != nil || !again.Replayed || again.TransactionHash != out.TransactionHash {
		t.Fatalf("second retry: %+v %v, want the payment replayed", again, err)
	}
	succeeded := 0
	h.ledger.mu.Lock()
	for _, l := range h.ledger.landed {
		if !l.failed {
			succeeded++
		}
	}
	h.ledger.mu.Unlock()
	if p, _ := h.ledger.counts(); succeeded != 1 || p != 2 {
		t.Fatalf("%d payments landed from %d envelopes, want exactly 1 from 2", succeeded, p)
	}
}

// A destination-side failure is still a stored rejection with the ledger's codes, and pages
// nothing: the vault is fine.
func TestDestinationFailureStoredWithoutPage(t *testing.T) {
	h, logs := pagingHarness(t)
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_line_full"}
	_, err := h.orch.Transfer(context.Background(), input("payout-0002", "5"))
	var r *transfer.RejectedError
	if !errors.As(err, &r) || r.Code != transfer.CodeTransactionFailed || strings.Join(r.ResultCodes, ",") != "tx_failed,op_line_full" {
		t.Fatalf("err = %v, want a stored TRANSACTION_FAILED with op_line_full", err)
	}
	if got := h.item(t, "payout-0002"); got.Status != transfer.StatusRejected {
		t.Fatalf("item %+v, want rejected", got)
	}
	if pages := logs.alerts(t); len(pages) != 0 {
		t.Fatalf("pages = %v, want none", pages)
	}
}

// The first send of a fee bump refused ERROR txINSUFFICIENT_BALANCE (stellar-core's
// TransactionQueue::canAdd: the fee account cannot pay this fee on top of those it has queued):
// nothing was queued, so the key is free; the answer is 503 FEE_ACCOUNT_UNDERFUNDED, at once, and
// it pages. Without a fee bump the vault pays its own fee: VAULT_UNDERFUNDED.
func TestFirstSendRefusedForFeesIsUnderfunded(t *testing.T) {
	for _, bumped := range []bool{true, false} {
		h, logs := pagingHarness(t)
		h.ledger.feeBump = bumped
		h.ledger.script = func(int, transfer.Envelope) (transfer.SendResult, bool, error) {
			return transfer.SendResult{Status: transfer.SendError, Code: "txINSUFFICIENT_BALANCE"}, false, nil
		}
		want, alert := transfer.CodeFeeAccountUnderfunded, transfer.AlertFeeAccountUnderfunded
		if !bumped {
			want, alert = transfer.CodeVaultUnderfunded, transfer.AlertVaultUnderfunded
		}
		_, err := h.orch.Transfer(context.Background(), input("payout-0003", "5"))
		unavailable(t, err, want)
		if _, ok := h.store.Item(transfer.StoreKey(wallet, "payout-0003")); ok {
			t.Fatal("the key should be free")
		}
		if _, sends := h.ledger.counts(); sends != 1 {
			t.Fatalf("sends = %d, want 1", sends)
		}
		if pages := logs.alerts(t); len(pages) != 1 || pages[0]["alert"] != alert {
			t.Fatalf("pages = %v, want one %q", pages, alert)
		}
	}
}

// The sweep's (and an inline retry's) Settle judges an in-doubt envelope included FAILED
// op_underfunded the same way: released, conditional on the item exactly as read, so a later
// incarnation of the key is never touched.
func TestSettleReleasesUnderfundedFailure(t *testing.T) {
	ctx := context.Background()
	h, logs := pagingHarness(t)
	h.ledger.failResult = func(transfer.Envelope) bool { return true }
	h.ledger.failCodes = []string{"tx_failed", "op_underfunded"}
	rec := crashAt(t, h, "payout-0004", transfer.StepSent)
	h.clock.Advance(time.Minute)
	h.ledger.closeIfDue()

	// A stale reader: the item changed since it was read (another caller took it over).
	stale := rec
	stale.Version--
	if _, err := h.orch.Settle(ctx, stale); !errors.Is(err, transfer.ErrConditionFailed) {
		t.Fatalf("stale settle: %v, want ErrConditionFailed", err)
	}
	if _, ok := h.store.Item(rec.StoreKey); !ok {
		t.Fatal("a stale reader deleted the item")
	}

	s, err := h.orch.Settle(ctx, rec)
	if err != nil || s.Resolution != transfer.ResolvedReleased || s.Lookup == nil || s.Lookup.Status != transfer.LookupFailed {
		t.Fatalf("settle = %+v, %v; want released", s, err)
	}
	if _, ok := h.store.Item(rec.StoreKey); ok {
		t.Fatal("the item should be deleted")
	}
	if pages := logs.alerts(t); len(pages) != 1 || pages[0]["alert"] != transfer.AlertVaultUnderfunded {
		t.Fatalf("pages = %v", pages)
	}
}
