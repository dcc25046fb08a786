package chaos

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// What clients and operators are told: every answer is true of the key and the ledger. A claim
// that fails with nothing written answers what the key's read-back holds; two keys are two
// payments; CHANNELS_BUSY means the key is free; TRANSFER_IN_PROGRESS means another request runs;
// an operator's forced resolve of a landed hash is allowed where the history cannot be vouched
// for.

// throttledClaims is a store whose claims fail with nothing written while throttled is set, as
// DynamoDB's PutItem does when the SDK's retries give up on a throttled table.
type throttledClaims struct {
	transfer.Store
	mu        sync.Mutex
	throttled bool
}

func (s *throttledClaims) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	s.mu.Lock()
	throttled := s.throttled
	s.mu.Unlock()
	if throttled {
		return transfer.Record{}, false, errors.New("dynamodb: PutItem: ProvisionedThroughputExceededException")
	}
	return s.Store.Claim(ctx, rec, now)
}

// TestThrottledRetryOfALandedTransferIsItsReplay. Rule: a claim that fails with nothing written
// answers what the key's read-back holds. The first POST lands and its 200 is lost; the retry's
// claim is throttled: it is answered the replay it reads back, never 503 "nothing was submitted"
// (a client that trusts that and pays another way pays twice).
func TestThrottledRetryOfALandedTransferIsItsReplay(t *testing.T) {
	r := quietRig(t)
	ctx := context.Background()
	first, err := r.orch.Transfer(ctx, r.input(0))
	if err != nil {
		t.Fatal(err)
	}
	s := &throttledClaims{Store: r.store, throttled: true}
	r.orch.Store = s
	again, err := r.orch.Transfer(ctx, r.input(0))
	if err != nil || !again.Replayed || again.TransactionHash != first.TransactionHash {
		t.Fatalf("throttled retry = %+v, %v; want the replay of %s", again, err, first.TransactionHash)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}
}

// TestThrottledRetryOfAnAcceptedTransferIsAccepted. Rule: the same, async. The first
// respond-async POST is accepted (its message sent) and its 202 lost; the retry's claim is
// throttled: it is answered 202 again (the transfer runs), and the transfer runs exactly once.
func TestThrottledRetryOfAnAcceptedTransferIsAccepted(t *testing.T) {
	r, q, _ := asyncRig(t)
	ctx := context.Background()
	if res, err := r.orch.Enqueue(ctx, r.input(0)); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	s := &throttledClaims{Store: r.store, throttled: true}
	r.orch.Store = s
	res, err := r.orch.Enqueue(ctx, r.input(0))
	if err != nil || !res.Accepted {
		t.Fatalf("throttled retry = %+v, %v; want 202: the queued transfer runs", res, err)
	}
	s.mu.Lock()
	s.throttled = false
	s.mu.Unlock()
	for _, m := range q.take() {
		r.deliver(t, m)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}
}

// TestEqualRequestsUnderTwoKeysPayTwiceAsAsked: two idempotency keys are two payments, even for
// two transfers of the same amount to the same wallet started within the same second: two
// transactions applied, each client told its own hash. With the vault as the transaction source
// (no channel accounts) an envelope would hold nothing of its key but the vault's sequence
// number, the payment, maxTime (whole seconds) and the fee, and two such calls reading the vault's
// sequence number before either lands would build byte-identical envelopes (ed25519 signatures are
// deterministic): one inner hash, the second send answered DUPLICATE, one payment and two clients
// told success. Each envelope's minTime is unique to its claim, so that cannot happen.
func TestEqualRequestsUnderTwoKeysPayTwiceAsAsked(t *testing.T) {
	r := quietRig(t) // vault only, as CHANNEL_COUNT=0 deploys it
	inA := r.input(0)
	inB := inA
	inB.ClientKey = "chaos-key-twin"
	b := told{who: "B"}
	ran := false
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent && actorOf(ctx) == "A" && !ran {
			ran = true
			// B starts while A's envelope waits in the queue for the next ledger.
			b.out, b.err = r.orch.Transfer(actorCtx(r, "B"), inB)
		}
		return nil
	}
	a := told{who: "A"}
	a.out, a.err = r.orch.Transfer(actorCtx(r, "A"), inA)
	r.orch.Hooks = nil
	if !ran {
		t.Fatal("A never sent")
	}
	// This process builds on the vault for one transfer at a time: B, waiting on A, may be told
	// CHANNELS_BUSY (nothing sent, its key free). Its client retries the same key after Retry-After.
	var busy *transfer.UnavailableError
	if errors.As(b.err, &busy) && busy.Code == transfer.CodeChannelsBusy && busy.RetryAfter > 0 {
		r.clock.Advance(busy.RetryAfter)
		b.out, b.err = r.orch.Transfer(actorCtx(r, "B"), inB)
	}
	if a.err != nil || b.err != nil {
		t.Fatalf("A: %+v, %v; B: %+v, %v; want both paid", a.out, a.err, b.out, b.err)
	}
	var hashes []string
	for _, tx := range r.net.Applied()[r.setupTxs:] {
		hashes = append(hashes, tx.Hash)
	}
	if len(hashes) != 2 || a.out.TransactionHash == b.out.TransactionHash {
		t.Errorf("two keys, %d transaction(s) applied %v; A was told %s, B %s: one payment answered twice", len(hashes),
			hashes, a.out.TransactionHash, b.out.TransactionHash)
	}
}

// TestReleasedKeyIsNotReportedInProgress: a call that released its key and had no budget left to
// build again is never answered TRANSFER_IN_PROGRESS ("another request with this key is still
// running") while the key is free. A retry meets its key in_doubt, and its inline reconciliation
// proves the envelope dead and releases the key, but the lookup was slow (5 s, with the deployed
// 25 s budget): too little budget is left to build a new envelope (MinValidity + ProofWindow,
// 21 s), so the call ends.
func TestReleasedKeyIsNotReportedInProgress(t *testing.T) {
	r := quietRig(t)
	r.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = 25 * time.Second // TransferTimeoutMs's default in template.yaml
		return s
	}
	e1 := r.inDoubt(t, 0)
	r.orch.Ledger = &slowLookup{Ledger: r.orch.Ledger, actor: "retry", meanwhile: func() {
		r.clock.Advance(5 * time.Second) // the RPC answers slowly
		r.shown(t)
	}}
	retry := told{who: "retry"}
	retry.out, retry.err = r.callAs("retry", 0)
	if rec := r.item(t, 0); rec.StoreKey != "" && rec.ClaimID == e1.ClaimID {
		t.Fatalf("the retry should have released E1's incarnation: the key holds %s", describe(rec))
	}
	var p *transfer.InProgressError
	if errors.As(retry.err, &p) {
		if rec := r.item(t, 0); rec.StoreKey == "" {
			t.Errorf("retry = %v; the key is free and no request runs", retry.err)
		}
	}
}

// TestChannelsBusyFromTheVaultWaitLeavesTheKeyFree: a call answered 503 CHANNELS_BUSY ("nothing
// was sent and the key is free", retry after Retry-After) leaves its key free, even when the
// release of its claim is refused, and the client's retry is not told TRANSFER_IN_PROGRESS. With
// the vault as the only source, this process builds on it for one transfer at a time, and a call
// that waits a ledger interval for it is answered CHANNELS_BUSY. The call claimed its key before
// it waited, and releases the claim when Prepare fails; that release (all three of the SDK's
// attempts) is refused before it reaches the table. The call's own leftover claim is deleted
// before it answers, for a busy source met in Prepare (the in-process vault wait, or every channel
// leased) as for one met at the first send.
func TestChannelsBusyFromTheVaultWaitLeavesTheKeyFree(t *testing.T) {
	r := quietRig(t) // vault only, as CHANNEL_COUNT=0 deploys it
	r.orch.Settings = func() transfer.Settings {
		s := transfer.DefaultSettings()
		s.Timeout = 25 * time.Second // TransferTimeoutMs's default in template.yaml
		return s
	}
	var refuseDeletes atomic.Bool
	n := 0
	store, tr := r.storeLosing(t, func(op string, _ map[string]any) fate {
		if op != "DynamoDB_20120810.DeleteItem" || !refuseDeletes.Load() || n >= 3 {
			return pass
		}
		n++
		return refuse // B's release: all three attempts
	})
	r.orch.Store = store
	busy := told{who: "B"}
	ran := false
	var keyAfterBusy transfer.Record
	r.orch.Hooks = func(ctx context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent && actorOf(ctx) == "A" && !ran {
			ran = true
			// B calls while A holds the vault (its envelope sent, not yet settled).
			refuseDeletes.Store(true)
			busy.out, busy.err = r.callAs("B", 1)
			refuseDeletes.Store(false)
			keyAfterBusy = r.item(t, 1)
		}
		return nil
	}
	a := told{who: "A"}
	a.out, a.err = r.callAs("A", 0)
	r.orch.Hooks = nil
	var u *transfer.UnavailableError
	if !ran || !errors.As(busy.err, &u) || u.Code != transfer.CodeChannelsBusy || u.RetryAfter <= 0 {
		t.Fatalf("A = %v, B = %v; the test needs B told CHANNELS_BUSY while A holds the vault", a.err, busy.err)
	}
	if _, _, refused := tr.counts(); refused["DynamoDB_20120810.DeleteItem"] != 3 {
		t.Fatalf("refused %v; the test needs B's release refused three times", refused)
	}
	if keyAfterBusy.StoreKey != "" {
		t.Errorf("B was told CHANNELS_BUSY (the key is free), but its key holds %s", describe(keyAfterBusy))
	}
	r.clock.Advance(u.RetryAfter) // the client honours Retry-After
	start := r.clock.Now()
	retry := told{who: "B's retry"}
	retry.out, retry.err = r.callAs("B retry", 1)
	took := r.clock.Now().Sub(start)
	var p *transfer.InProgressError
	if errors.As(retry.err, &p) {
		t.Errorf("B's retry was told TRANSFER_IN_PROGRESS after %v: no other request runs, only B's own leftover claim", took)
	} else if retry.err != nil || took > 3*ledgerInterval {
		t.Errorf("B's retry = %v after %v; want its transfer within a few ledgers", retry.err, took)
	}
	if retry.err == nil {
		r.assertPaidOnce(t, 1, retry)
	}
}

// TestForcedResolveAllowedWhenLoadBalancedHistoryIsUnknown: an operator's forced resolve with a
// landed hash is allowed where the lookups cannot vouch for the history, and the key then replays
// it. E1 landed but its call ended in doubt, and the lookups' history no longer reaches E1's
// submission. With STELLAR_RPC_LOAD_BALANCED=true the lookup reports OldestLedger 0 ("cannot
// vouch for any coverage"): get shows the history not covering, maxTime passed, not proven dead,
// and the forced resolve (E1's hash, seen on an explorer) records E1 replayable. Were 0 <=
// submittedLedger read as coverage, the resolve would be refused with "the ledger's history covers
// the submission and does not show" it, which is false: the key would stay in_doubt for good, and
// the only way out offered, a forced discard, would let the next retry pay again.
func TestForcedResolveAllowedWhenLoadBalancedHistoryIsUnknown(t *testing.T) {
	r := quietRig(t)
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropResponse})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultRetention, Ledgers: 1})
	once := false
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent && !once {
			once = true
			for range 3 {
				r.net.CloseLedger() // E1 lands, then falls out of the one-ledger history
			}
		}
		return nil
	}
	var d *transfer.InDoubtError
	if _, err := r.call(0); !errors.As(err, &d) {
		t.Fatalf("err = %v, want TRANSFER_IN_DOUBT", err)
	}
	r.orch.Hooks = nil
	e1 := r.item(t, 0)
	if tx, ok := r.net.Transaction(e1.Envelope.InnerHash); !ok || tx.Status != "SUCCESS" || e1.Status != transfer.StatusInDoubt {
		t.Fatalf("want E1 landed and its item in_doubt: %v/%s, %s", ok, tx.Status, describe(e1))
	}
	op := reconcile.New(reconcile.Config{Store: r.store, Settler: r.orch, Ledger: r.lbLedger(t), Gauge: nopGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL }, Logger: slog.New(slog.DiscardHandler)})
	got, err := op.Do(context.Background(), reconcile.Request{Action: reconcile.ActionGet, StoreKey: e1.StoreKey})
	if err != nil {
		t.Fatal(err)
	}
	if c := got.(*reconcile.GetAnswer).Item.Chain; c == nil || c.HistoryCovers || c.ProvenDead || !c.MaxTimePassed {
		t.Fatalf("get shows %+v; want history not covering, max time passed, not proven dead", c)
	}
	ans, err := op.Do(context.Background(), reconcile.Request{Action: reconcile.ActionResolve, StoreKey: e1.StoreKey,
		TransactionHash: e1.Envelope.InnerHash, Force: true, Reason: "seen on an explorer", Operator: "oncall@example.com"})
	if err != nil {
		t.Fatalf("forced resolve = %v; want replayable: get said the history does not cover the submission, and E1 landed", err)
	}
	if a := ans.(*reconcile.ResolveAnswer); a.Resolution != string(transfer.StatusReplayable) || !a.Forced {
		t.Errorf("forced resolve = %+v", a)
	}
	out, err := r.call(0)
	if err != nil || !out.Replayed || out.TransactionHash != e1.Envelope.InnerHash {
		t.Errorf("retry = %+v, %v; want E1 replayed", out, err)
	}
}
