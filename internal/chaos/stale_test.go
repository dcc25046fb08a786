package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// Stale actors for the pay-twice tests of stale writers: callers, sweeps and operators that act on an
// item they read before another caller released the key and claimed it again. Each test plays
// one interleaving on one goroutine where it can (a stale actor's slow step runs the other
// actors inside it), so the interleaving is exact and the run deterministic.

// actorKey names the actor (a caller, the sweep, an operator) a context belongs to, so that hooks
// and wrappers act on one actor's steps only.
type actorKey struct{}

func actorCtx(r *rig, name string) context.Context {
	return withCaller(context.WithValue(context.Background(), actorKey{}, name), r.newCaller(0, 0, false))
}

func actorOf(ctx context.Context) string {
	s, _ := ctx.Value(actorKey{}).(string)
	return s
}

// callAs is one client call of key k by the named actor.
func (r *rig) callAs(name string, k int) (transfer.Outcome, error) {
	return r.orch.Transfer(actorCtx(r, name), r.input(k))
}

// deadClaim leaves key k as an invocation that died right after sending its envelope E1 leaves
// it: in_flight at version 2 with E1, the lease expired. E1 was answered PENDING and evicted, so
// it never lands, and a ledger has closed after its maxTime: the ledger proves it dead.
func (r *rig) deadClaim(t *testing.T, k int) transfer.Record {
	t.Helper()
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash
		}
		return nil
	}
	if _, err := r.callAs("dead", k); !errors.Is(err, errCrash) {
		t.Fatalf("setting up a dead claim: %v", err)
	}
	r.orch.Hooks = nil
	r.clock.Advance(2 * time.Minute) // the lease expires; a ledger closes after E1's maxTime
	r.shown(t)                       // and RPC shows it
	rec, err := r.store.Get(context.Background(), r.storeKey(k))
	if err != nil || rec.Status != transfer.StatusInFlight || rec.Version != 2 || rec.Envelope == nil || !rec.LeaseExpired(r.clock.Now()) {
		t.Fatalf("dead claim = %+v, %v", rec, err)
	}
	return rec
}

// inDoubt leaves key k in_doubt at version 3 with an envelope E1 that never lands (answered
// PENDING and evicted while no ledger closed), then lets a ledger close after E1's maxTime, so
// that the ledger proves E1 dead.
func (r *rig) inDoubt(t *testing.T, k int) transfer.Record {
	t.Helper()
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultDropEnvelope})
	r.arm(t, stellarsim.Fault{Kind: stellarsim.FaultStall})
	var d *transfer.InDoubtError
	if _, err := r.callAs("first", k); !errors.As(err, &d) {
		t.Fatalf("setting up an in-doubt item: %v, want TRANSFER_IN_DOUBT", err)
	}
	r.net.ClearFaults()
	r.clock.Advance(ledgerInterval)
	r.shown(t)
	rec, err := r.store.Get(context.Background(), r.storeKey(k))
	if err != nil || rec.Status != transfer.StatusInDoubt || rec.Version != 3 || rec.Envelope == nil {
		t.Fatalf("in-doubt item = %+v, %v", rec, err)
	}
	return rec
}

// shown moves the virtual clock on until RPC and Horizon show the last closed ledger: on the
// realistic network they take it in 1-3 s after it closes (stellarsim's visibility lag), and a
// lookup before then cannot see a ledger that proves anything. The steps are short, so no further
// ledger closes meanwhile (the rig closes one every ledgerInterval of virtual time).
func (r *rig) shown(t *testing.T) {
	t.Helper()
	latest := r.net.LatestLedger().Sequence
	for waited := time.Duration(0); r.net.VisibleLedger().Sequence < latest; waited += 100 * time.Millisecond {
		if waited >= ledgerInterval {
			t.Fatalf("ledger %d still not shown %v after it closed", latest, waited)
		}
		r.clock.Advance(100 * time.Millisecond)
	}
}

// item reads key k's item (the zero Record when there is none).
func (r *rig) item(t *testing.T, k int) transfer.Record {
	t.Helper()
	rec, err := r.store.Get(context.Background(), r.storeKey(k))
	if err != nil && !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("reading key %d: %v", k, err)
	}
	return rec
}

// assertUntouched checks that key k still holds want exactly as it was read (every field): a
// stale writer, whatever it was answered, changed nothing of a later incarnation's item.
func (r *rig) assertUntouched(t *testing.T, k int, want transfer.Record, after string) {
	t.Helper()
	if got := r.item(t, k); !reflect.DeepEqual(got, want) {
		t.Errorf("after %s the key holds %s; want E2's item untouched: %s", after, describe(got), describe(want))
	}
}

// describe names an item by the fields its writers' conditions compare.
func describe(rec transfer.Record) string {
	if rec.StoreKey == "" {
		return "no item"
	}
	inner := "none"
	if rec.Envelope != nil {
		inner = rec.Envelope.InnerHash
	}
	return fmt.Sprintf("{claim %s, %s v%d, owner %q, envelope %s, updated %s}", rec.ClaimID, rec.Status, rec.Version,
		rec.LeaseOwner, inner, rec.UpdatedAt.Format(time.RFC3339Nano))
}

// told is what one actor was answered.
type told struct {
	who string
	out transfer.Outcome
	err error
}

// assertPaidOnce checks the ledger and the item of key k after a scenario: exactly one
// transaction applied for the key, no third envelope built, the item replayable with that transaction, and every caller
// answered 200 told that transaction's hash (anything else it was told is checked by the test).
func (r *rig) assertPaidOnce(t *testing.T, k int, answers ...told) {
	t.Helper()
	in := r.input(k)
	var applied []stellarsim.AppliedTx
	var hashes []string
	for _, tx := range r.net.Applied()[r.setupTxs:] {
		if id, ok := r.ledger.ownerOf(tx.Hash); ok && id == in.Request.WalletAddress+"/"+in.Request.Amount {
			applied = append(applied, tx)
			hashes = append(hashes, tx.Hash)
		}
	}
	if len(applied) != 1 {
		t.Errorf("%d transactions applied for one key, want exactly 1: %v", len(applied), hashes)
	}
	if n := r.events.snapshot()["rebuilds"]; n > 1 {
		t.Errorf("%d rebuilds, want at most 1 (E2, once E1 was proven dead): a third envelope was built while E2 could land", n)
	}
	for _, a := range answers {
		if a.err != nil {
			continue
		}
		if len(applied) == 0 || a.out.TransactionHash != applied[0].Hash {
			t.Errorf("%s was told %s, the ledger applied %v", a.who, a.out.TransactionHash, hashes)
		}
		if tx, ok := r.net.Transaction(a.out.TransactionHash); !ok || tx.Status != "SUCCESS" {
			t.Errorf("%s was told success %s, the ledger has %v/%s", a.who, a.out.TransactionHash, ok, tx.Status)
		}
	}
	rec, err := r.store.Get(context.Background(), r.storeKey(k))
	switch {
	case err != nil:
		t.Errorf("no item for the key: %v", err)
	case rec.Status != transfer.StatusReplayable || rec.Result == nil || len(applied) == 0 || rec.Result.TransactionHash != applied[0].Hash:
		t.Errorf("item is %s %+v, want replayable with the one applied transaction %v", rec.Status, rec.Result, hashes)
	}
}

// settlerFunc is a reconcile.Settler.
type settlerFunc func(ctx context.Context, rec transfer.Record) (transfer.Settlement, error)

func (f settlerFunc) Settle(ctx context.Context, rec transfer.Record) (transfer.Settlement, error) {
	return f(ctx, rec)
}

type nopGauge struct{}

func (nopGauge) InDoubtGauge(context.Context, int) {}

// reconciler is the reconcile function's service (sweep, operator actions) on the rig's store and
// ledger, judging through settler.
func (r *rig) reconciler(settler reconcile.Settler) *reconcile.Service {
	return reconcile.New(reconcile.Config{
		Store: r.store, Settler: settler, Ledger: r.ledger, Gauge: nopGauge{}, Clock: r.clock,
		KeyTTL: func() time.Duration { return transfer.DefaultSettings().KeyTTL },
		Logger: slog.New(slog.DiscardHandler),
	})
}

// slowSettler is the orchestrator's Settle whose ledger lookup is slow: the first time it is
// called, meanwhile runs (the rest of the world moves on) before the item it was given, read
// before, is judged and written.
func (r *rig) slowSettler(meanwhile func()) reconcile.Settler {
	var once sync.Once
	return settlerFunc(func(ctx context.Context, rec transfer.Record) (transfer.Settlement, error) {
		once.Do(meanwhile)
		return r.orch.Settle(ctx, rec)
	})
}

// holdStore delays one actor's first Replace (a write stuck in the network): hold is called with
// the write, and decides when it reaches the table.
type holdStore struct {
	transfer.Store
	actor string
	once  sync.Once
	hold  func(write func() error) error
}

func (s *holdStore) Replace(ctx context.Context, next transfer.Record, cond transfer.Condition) error {
	if actorOf(ctx) != s.actor {
		return s.Store.Replace(ctx, next, cond)
	}
	held := false
	var err error
	s.once.Do(func() {
		held = true
		err = s.hold(func() error { return s.Store.Replace(ctx, next, cond) })
	})
	if !held {
		err = s.Store.Replace(ctx, next, cond)
	}
	return err
}

// settleThenWait is the orchestrator's Settle, after which the actor is slow to act on its
// answer: meanwhile runs (once) before it returns.
func (r *rig) settleThenWait(meanwhile func()) reconcile.Settler {
	var once sync.Once
	return settlerFunc(func(ctx context.Context, rec transfer.Record) (transfer.Settlement, error) {
		s, err := r.orch.Settle(ctx, rec)
		once.Do(meanwhile)
		return s, err
	})
}

// slowLookup makes one actor's first ledger lookup slow: meanwhile runs before it is asked, or,
// with late, after it answered and before its answer reaches the actor.
type slowLookup struct {
	transfer.Ledger
	actor     string
	late      bool
	once      sync.Once
	meanwhile func()
}

func (l *slowLookup) Lookup(ctx context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if actorOf(ctx) != l.actor {
		return l.Ledger.Lookup(ctx, env)
	}
	if !l.late {
		l.once.Do(l.meanwhile)
		return l.Ledger.Lookup(ctx, env)
	}
	lk, err := l.Ledger.Lookup(ctx, env)
	l.once.Do(l.meanwhile)
	return lk, err
}

// lostAnswers is an HTTP transport to DynamoDB that fails chosen requests: it loses the answer of
// a request after it was applied (the request reaches the table, then the connection is reset
// before the answer is read), or refuses one before it reaches the table. The SDK classes both as
// retryable (aws/retry RetryableConnectionError), so its standard retryer sends the same request
// again, as it does in production.
type lostAnswers struct {
	base http.RoundTripper
	// rule decides from the operation (X-Amz-Target, e.g. "DynamoDB_20120810.PutItem") and the
	// request's JSON what happens to this attempt.
	rule func(op string, req map[string]any) fate
	// onLost, when set, runs after an answer is lost and before the SDK's retry (the world moves
	// on while the writer waits to retry).
	onLost func()

	mu      sync.Mutex
	sent    map[string]int // attempts that reached the table, by operation
	lost    map[string]int // answers lost, by operation
	refused map[string]int // attempts refused before the table, by operation
}

// fate is what lostAnswers does with one attempt.
type fate int

const (
	pass   fate = iota
	lose        // applied, then the connection is reset before the answer
	refuse      // the connection is refused: nothing reaches the table
)

func (l *lostAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		_ = req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	l.mu.Lock()
	f := l.rule(op, in)
	if f == refuse {
		l.refused[op]++
		l.mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	}
	l.sent[op]++
	l.mu.Unlock()
	resp, err := l.base.RoundTrip(req)
	if err != nil || f != lose {
		return resp, err
	}
	l.mu.Lock()
	l.lost[op]++
	onLost := l.onLost
	l.mu.Unlock()
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if onLost != nil {
		onLost()
	}
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
}

func (l *lostAnswers) counts() (sent, lost, refused map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cp := func(m map[string]int) map[string]int {
		out := make(map[string]int, len(m))
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	return cp(l.sent), cp(l.lost), cp(l.refused)
}

// storeLosing returns a Store on the rig's table through a second endpoint of its DynamoDB whose
// transport fails the attempts rule picks, with the SDK's standard retryer (3 attempts, as in
// production, without the backoff's real-time sleep). rule runs under a lock.
func (r *rig) storeLosing(t *testing.T, rule func(op string, req map[string]any) fate) (*dynamo.Store, *lostAnswers) {
	t.Helper()
	hs := httptest.NewServer(r.minidyn)
	t.Cleanup(hs.Close)
	tr := &lostAnswers{base: hs.Client().Transport, rule: rule, sent: map[string]int{}, lost: map[string]int{}, refused: map[string]int{}}
	client := dynamotest.NewClient(hs.URL, func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: tr}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	return dynamo.New(client, r.table), tr
}

// loseFirst is a rule that loses the answer of the first request match picks, once.
func loseFirst(match func(op string, req map[string]any) bool) func(op string, req map[string]any) fate {
	done := false
	return func(op string, req map[string]any) fate {
		if done || !match(op, req) {
			return pass
		}
		done = true
		return lose
	}
}

// itemAttr reads a string or number attribute of a request's Item ({"S": ...} or {"N": ...}).
func itemAttr(req map[string]any, name string) string {
	item, _ := req["Item"].(map[string]any)
	av, _ := item[name].(map[string]any)
	for _, typ := range []string{"S", "N"} {
		if v, ok := av[typ].(string); ok {
			return v
		}
	}
	return ""
}

// isClaim picks a claim: the PutItem of an in_flight item at version 1.
func isClaim(op string, req map[string]any) bool {
	return op == "DynamoDB_20120810.PutItem" && itemAttr(req, "status") == string(transfer.StatusInFlight) && itemAttr(req, "version") == "1"
}
