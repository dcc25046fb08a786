package stellar_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// domainBatches is a batchLedger as the submitter holds it (transfer.BatchLedger: one code per
// request, as internal/wiring adapts it).
type domainBatches struct{ l batchLedger }

func (d domainBatches) PrepareBatch(ctx context.Context, reqs []transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	return d.l.PrepareBatch(ctx, reqs, terms)
}

func (d domainBatches) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]string, error) {
	checks, err := d.l.CheckDestinations(ctx, reqs)
	if err != nil {
		return nil, err
	}
	codes := make([]string, len(checks))
	for i, c := range checks {
		codes[i] = c.Code
		if c.Err != nil {
			codes[i] = "invalid_request"
		}
	}
	return codes, nil
}

// PrepareBatch over a vault that cannot pay an asset's sum builds nothing and says what the vault
// can pay (transfer.BatchShortfallError: its trustline's available balance, keyed by the
// requests' asset code), with the VAULT_UNDERFUNDED refusal of the whole batch as its error.
func TestPrepareBatchSaysWhatTheVaultCanPay(t *testing.T) {
	r := newFundsRig(t, "rpc", 2, 10*unit)
	l := r.ledger.(batchLedger)
	sent := len(r.n.Envelopes())
	terms := transfer.Terms{MinTime: time.Unix(1, 0), MaxTime: r.clock.Now().Add(time.Minute)}
	_, err := l.PrepareBatch(context.Background(), []transfer.Request{withdraw(r.wallet(t), 6*unit), withdraw(r.wallet(t), 5*unit)}, terms)
	var short *transfer.BatchShortfallError
	if !errors.As(err, &short) || short.Available["USDC"] != 10*unit || len(short.Available) != 1 {
		t.Fatalf("PrepareBatch = %v (%+v), want a shortfall naming 10 USDC available", err, short)
	}
	wantCode(t, err, transfer.CodeVaultUnderfunded)
	if got := len(r.n.Envelopes()) - sent; got != 0 {
		t.Fatalf("%d envelopes reached the network", got)
	}
}

// A batch of five withdrawals, 3, 4, 5, 2 and 12 USDC in that order, from a vault holding 10: the
// vault covers the 3, the 4 and the 2 (the 5 does not fit what is left after the 3 and the 4, the
// 12 is above the whole balance), so one transaction pays exactly those three keys, each once,
// counted from the local network. The other two are queued again, never rejected, nothing sent
// for them, their messages delivered again after VAULT_UNDERFUNDED's Retry-After; once the vault
// is funded their next run pays each once, and a copy of every message delivered again after
// that pays nobody twice.
func TestBatchPaysTheKeysTheVaultCoversThenTheRestOnceFunded(t *testing.T) {
	r := newFundsRig(t, "rpc", 2, 10*unit)
	ctx := context.Background()
	q := &queueRecorder{}
	r.orch.Queue = q
	s := transfer.DefaultSettings()
	s.BatchSize = 5
	r.orch.Settings = func() transfer.Settings { return s }
	r.orch.Batches = domainBatches{r.ledger.(batchLedger)}
	r.orch.Serial = true
	amounts := []int64{3, 4, 5, 2, 12}
	wallets := make([]string, len(amounts))
	keys := make([]string, len(amounts))
	for i, units := range amounts {
		wallets[i] = r.wallet(t)
		in := payout(fmt.Sprintf("payout-short-%d", i), wallets[i], units)
		keys[i] = transfer.StoreKey(wallets[i], in.ClientKey)
		if res, err := r.orch.Enqueue(ctx, in); err != nil || !res.Accepted {
			t.Fatalf("enqueue %d: %+v %v", i, res, err)
		}
	}
	msgs := append([]transfer.QueueMessage(nil), q.sent...)
	before := len(r.n.Applied())
	// paid counts, per wallet, the USDC payments to it that landed, and the transactions that made them.
	paid := func() (map[string]int64, map[string]int, int) {
		got, times, txs := map[string]int64{}, map[string]int{}, 0
		for _, tx := range r.n.Applied()[before:] {
			if tx.Status != "SUCCESS" {
				continue
			}
			pays := false
			for _, op := range tx.Ops {
				if op.Type == "payment" && op.Source == r.vault {
					got[op.Destination] += op.Amount
					times[op.Destination]++
					pays = true
				}
			}
			if pays {
				txs++
			}
		}
		return got, times, txs
	}

	answers := r.orch.RunQueuedBatch(ctx, msgs)
	covered := map[int]int{0: 0, 1: 1, 3: 2} // key -> its operation
	got, times, txs := paid()
	if txs != 1 {
		t.Fatalf("%d transactions paid, want one batch", txs)
	}
	var hash string
	for i, w := range wallets {
		rec, err := r.store.Get(ctx, keys[i])
		if err != nil {
			t.Fatal(err)
		}
		if op, ok := covered[i]; ok {
			if answers[i].Delivery != transfer.DeliveryDone || answers[i].Err != nil || rec.Status != transfer.StatusReplayable ||
				rec.Batch == nil || rec.Batch.Index != op || rec.Batch.Size != 3 || got[w] != amounts[i]*unit || times[w] != 1 {
				t.Fatalf("covered key %d: %+v; item %+v; wallet paid %d in %d payments, want %d once", i, answers[i], rec, got[w], times[w], amounts[i]*unit)
			}
			if hash == "" {
				hash = rec.Result.TransactionHash
			}
			if rec.Result.TransactionHash != hash {
				t.Fatalf("covered key %d paid by %s, the others by %s", i, rec.Result.TransactionHash, hash)
			}
			continue
		}
		if answers[i].Delivery != transfer.DeliveryRetry || rec.Status != transfer.StatusQueued || rec.Envelope != nil || got[w] != 0 {
			t.Fatalf("uncovered key %d: %+v; item %+v; wallet paid %d: want it queued again, unpaid", i, answers[i], rec, got[w])
		}
		wantCode(t, answers[i].Err, transfer.CodeVaultUnderfunded)
	}
	if v, _ := r.n.Balance(r.vault, r.usdc); v != 1*unit {
		t.Fatalf("the vault holds %d, want 1 USDC left", v)
	}

	// The messages of the two left come back after the Retry-After, and the vault was funded.
	if err := r.n.Mint(r.vault, r.usdc, 20*unit); err != nil {
		t.Fatal(err)
	}
	r.clock.Advance(time.Minute)
	again := r.orch.RunQueuedBatch(ctx, []transfer.QueueMessage{msgs[2], msgs[4]})
	for j, i := range []int{2, 4} {
		if again[j].Delivery != transfer.DeliveryDone || again[j].Err != nil {
			t.Fatalf("key %d once funded: %+v", i, again[j])
		}
	}
	// Every message delivered again (a copy): nothing is paid twice, nothing is asked again.
	for _, a := range r.orch.RunQueuedBatch(ctx, msgs) {
		if a.Delivery == transfer.DeliveryRetry {
			t.Fatalf("a copy of a settled key's message: %+v", a)
		}
	}
	got, times, _ = paid()
	for i, w := range wallets {
		rec, _ := r.store.Get(ctx, keys[i])
		if got[w] != amounts[i]*unit || times[w] != 1 || rec.Status != transfer.StatusReplayable {
			t.Fatalf("wallet %d paid %d in %d payments (item %s), want %d once", i, got[w], times[w], rec.Status, amounts[i]*unit)
		}
	}
	if v, _ := r.n.Balance(r.vault, r.usdc); v != 4*unit {
		t.Fatalf("the vault holds %d, want 4 USDC left (30 - 26)", v)
	}
}
