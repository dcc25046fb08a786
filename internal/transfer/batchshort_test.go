package transfer_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// shortVault is fakeBatches over a vault holding vault stroops of USDC: a batch whose sum is
// above it is refused as internal/stellar refuses it (*transfer.BatchShortfallError, with the
// balance), and nothing is built.
type shortVault struct {
	*fakeBatches
	vault   int64
	refused int
}

func (s *shortVault) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	var sum int64
	for _, r := range reqs {
		sum += r.Stroops
	}
	if sum > s.vault {
		s.refused++
		return transfer.Envelope{}, &transfer.BatchShortfallError{Available: map[string]int64{"USDC": s.vault},
			Err: &transfer.UnavailableError{Code: transfer.CodeVaultUnderfunded, RetryAfter: time.Minute, Detail: "the vault holds too little"}}
	}
	return s.fakeBatches.PrepareBatch(ctx, reqs, terms)
}

// The keys a short vault covers, in the batch's order, each that still fits what is left: with 10
// USDC, 3, 4 and 2 of 3, 4, 5, 2, 12. A key that fits alone but not what is left (the 5) is
// queued again as the whole batch's keys are (VAULT_UNDERFUNDED, its Retry-After), with one page
// for it; the key above the whole balance (the 12) as one transfer refused by the vault (its own
// VAULT_UNDERFUNDED naming its amount, its own page). Every key's run is counted with its code.
func TestRunQueuedBatchPaysTheKeysTheVaultCovers(t *testing.T) {
	h := newHarness(t)
	h.orch.Queue = &recordingQueue{}
	s := transfer.DefaultSettings()
	s.BatchSize = 10
	h.orch.Settings = func() transfer.Settings { return s }
	sv := &shortVault{fakeBatches: &fakeBatches{l: h.ledger, refuse: map[string]string{}}, vault: 10 * transfer.StroopsPerUnit}
	h.orch.Batches = sv
	logs := &logLines{}
	h.orch.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	rep := &reports{}
	h.orch.Observer = rep
	amounts := []string{"3", "4", "5", "2", "12"}
	var msgs []transfer.QueueMessage
	for i, a := range amounts {
		if res, err := h.orch.Enqueue(context.Background(), inputTo(fmt.Sprintf("pay-%04d", i), walletN(i), a)); err != nil || !res.Accepted {
			t.Fatalf("enqueue %d: %+v, %v", i, res, err)
		}
		rec := h.batchItem(t, i)
		msgs = append(msgs, transfer.QueueMessage{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
	}
	answers := h.orch.RunQueuedBatch(context.Background(), msgs)
	if sv.refused != 1 || len(sv.built) != 1 || len(sv.built[0]) != 3 {
		t.Fatalf("refused %d, built %v: want one refusal, then one batch of 3", sv.refused, sv.built)
	}
	for i, want := range []string{"3", "4", "2"} {
		if got := sv.built[0][i].Amount; got != want {
			t.Fatalf("operation %d pays %s, want %s", i, got, want)
		}
	}
	paid := map[int]int{0: 0, 1: 1, 3: 2} // key -> its operation
	for i, ans := range answers {
		rec := h.batchItem(t, i)
		if op, ok := paid[i]; ok {
			if ans.Delivery != transfer.DeliveryDone || ans.Err != nil || rec.Status != transfer.StatusReplayable || rec.Batch == nil || rec.Batch.Index != op || rec.Batch.Size != 3 {
				t.Fatalf("covered key %d: %+v; %+v (batch %+v)", i, ans, rec, rec.Batch)
			}
			continue
		}
		var u *transfer.UnavailableError
		if ans.Delivery != transfer.DeliveryRetry || problemCode(ans.Err) != transfer.CodeVaultUnderfunded || rec.Status != transfer.StatusQueued ||
			rec.Envelope != nil || rec.Batch != nil {
			t.Fatalf("uncovered key %d: %+v; %+v, want it queued again with VAULT_UNDERFUNDED", i, ans, rec)
		}
		if !errors.As(ans.Err, &u) || u.RetryAfter != time.Minute {
			t.Fatalf("uncovered key %d: %v, want the shortfall's Retry-After", i, ans.Err)
		}
	}
	if d := answers[4].Err.Error(); !strings.Contains(d, "10.0000000 USDC available, below the 12.0000000") {
		t.Fatalf("the key above the balance: %q, want its own amount named against the balance", d)
	}
	if got := logs.alerts(t); len(got) != 2 || got[0]["alert"] != transfer.AlertVaultUnderfunded || got[1]["alert"] != transfer.AlertVaultUnderfunded {
		t.Fatalf("pages: %v, want one for the batch's requeued key and one for the key above the balance", got)
	}
	counted := 0
	rep.mu.Lock()
	for _, r := range rep.all {
		if r.Code == transfer.CodeVaultUnderfunded {
			counted++
		}
	}
	rep.mu.Unlock()
	if counted != 2 {
		t.Fatalf("%d runs counted VAULT_UNDERFUNDED, want 2 (each uncovered key's)", counted)
	}
	if n := h.ledger.landedCount(); n != 1 {
		t.Fatalf("%d transactions landed, want 1", n)
	}
}
