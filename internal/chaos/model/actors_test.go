package model

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The actors and the adapters that make every Store, Ledger and Clock call of the real code a
// scheduling point. Each actor has its own Orchestrator and reconcile.Service, bound to adapters
// that know which actor is calling.

const (
	wallet    = "GBRPYHIL2CI3FNQ4BXLFMNDLFJUNPU2HY3ZMFSHONUCEOASW7QC7OX2H"
	clientKey = "model-key-1"
)

var input = transfer.Input{
	ClientKey: clientKey,
	Request:   transfer.Request{OperationType: transfer.Deposit, WalletAddress: wallet, Amount: "10", Asset: "USDC", Stroops: 100_000_000},
}

var storeKey = transfer.StoreKey(wallet, clientKey)

// kit is what an actor's body uses.
type kit struct {
	r    *run
	a    *actor
	orch *transfer.Orchestrator
	svc  *reconcile.Service
}

func newKit(r *run, a *actor) *kit {
	k := &kit{r: r, a: a}
	k.orch = &transfer.Orchestrator{
		Store: store{k}, Ledger: ledger{k}, Clock: clock{k},
		Logger:   slog.New(slog.DiscardHandler),
		NewOwner: func() string { return k.name("owner") },
	}
	configure(k)
	k.svc = reconcile.New(reconcile.Config{
		Store: store{k}, Settler: k.orch, Ledger: ledger{k}, Gauge: gauge{}, Clock: clock{k},
		KeyTTL: func() time.Duration { return 24 * time.Hour }, Logger: slog.New(slog.DiscardHandler),
	})
	return k
}

// name returns the actor's next name of a kind: C1, C2 for owners, envelopes and claims; so
// a name depends only on the actor's own history.
func (k *kit) name(kind string) string {
	k.a.counts[kind]++
	return fmt.Sprintf("%s%d", k.a.name, k.a.counts[kind])
}

// The actors. C, T and R make the same call (a retry is the same request under the same key);
// what they find makes one the claimant, one a take-over of an expired lease, one an inline
// reconciler of an in-doubt item.
var actors = []spec{
	retry("C", "claimant", false),
	retry("T", "take-over", true),
	retry("R", "inline reconciler", true),
	{name: "S", role: "sweep", late: true, body: sweep},
	{name: "O", role: "operator", late: true, body: operator},
	{name: "F", role: "operator forcing a discard", late: true, body: forceDiscard},
	{name: "Q", role: "submitter", body: submitter},
	{name: "X", role: "cancel", body: cancelBody},
	{name: "Y", role: "cancel, retried", body: cancelBody},
}

// queuedClaim is the claim ID of the queued item a model with limits.queued starts from: an
// async transfer of input, accepted with 202, its message not yet delivered.
const queuedClaim = "claim-E1"

// queuedItem is that item, as Enqueue writes it.
func queuedItem() transfer.Record {
	return transfer.Record{
		StoreKey: storeKey, ClaimID: queuedClaim, Status: transfer.StatusQueued, Fingerprint: input.Request.Fingerprint(),
		Request: input.Request, ClientKey: clientKey, Version: 1, CreatedAt: t0, UpdatedAt: t0, Async: true,
	}
}

// submitter is SubmitterFunction receiving the queued item's message (RunQueued): it takes the
// item (queued -> in_flight under its lease) and runs it, or finds it cancelled, settled or held
// and does nothing.
func submitter(ctx context.Context, k *kit) result {
	d, err := k.orch.RunQueued(ctx, transfer.QueueMessage{StoreKey: storeKey, ClaimID: queuedClaim})
	if err != nil {
		return result{text: "delivery " + string(d) + ": " + problem(err)}
	}
	return result{text: "delivery " + string(d)}
}

// cancelBody is a DELETE of the key (Cancel): it reads the item and, if queued, writes it
// cancelled on the condition that it is still the queued item read.
func cancelBody(ctx context.Context, k *kit) result {
	c, err := k.orch.Cancel(ctx, transfer.Wallet{Address: wallet}, clientKey, transfer.Canceller{Caller: "ops-" + k.a.name})
	if err != nil {
		var nc *transfer.NotCancellableError
		res := result{text: "cancel: " + problem(err)}
		if errors.As(err, &nc) {
			res.text += " " + nc.State
			res.notCancelled = true
		}
		return res
	}
	text := "cancel: 200 cancelled"
	if c.Replayed {
		text += " (replayed)"
	}
	return result{text: text, cancelled: true}
}

func retry(name, role string, late bool) spec {
	return spec{name: name, role: role, late: late, body: transferBody}
}

// transferBody makes the call every retry makes.
func transferBody(ctx context.Context, k *kit) result {
	out, err := k.orch.Transfer(ctx, input)
	if err != nil {
		return result{text: problem(err)}
	}
	return result{text: "200 " + k.r.w.envName(out.TransactionHash), landed: []string{out.TransactionHash}}
}

// sweep is the sweep's work on one item (reconcile's sweepOne): it reads the item again, then
// judges it with Settle. The index listing before it only picks the items, and the sweep reads each
// one again anyway, so it is left out.
func sweep(ctx context.Context, k *kit) result {
	rec, err := k.orch.Store.Get(ctx, storeKey)
	if err != nil {
		return result{text: "nothing to sweep"}
	}
	st, err := k.orch.Settle(ctx, rec)
	if err != nil {
		return result{text: "settle: " + okOr(err)}
	}
	return result{text: "settle: " + string(st.Resolution)}
}

// operator resolves the item through the reconcile function: with the inner hash of the
// claimant's first envelope (C1, as an alert would have shown it), or a discard. Either reads the
// item, looks the envelope up and writes.
func operator(ctx context.Context, k *kit) result {
	p := point{kind: "decide", desc: "decides", options: []string{"resolve C1", "discard"}}
	v := k.r.point(k.a, p)
	k.r.observe(k.a, v, "", func() string { return v })
	req := reconcile.Request{Action: reconcile.ActionResolve, StoreKey: storeKey, Operator: "op"}
	if v == "discard" {
		req.Discard = true
	} else {
		req.TransactionHash = hashOf("C1")
	}
	out, err := k.svc.Do(ctx, req)
	if err != nil {
		return result{text: "resolve: " + problem(err)}
	}
	a := out.(*reconcile.ResolveAnswer)
	res := result{text: "resolve: " + a.Resolution + " " + k.r.w.envName(a.TransactionHash)}
	if a.Resolution == string(transfer.StatusReplayable) {
		res.landed = []string{a.TransactionHash}
	}
	return res
}

// forceDiscard is an operator who checked the claimant's first envelope (C1) elsewhere and forces
// its discard: reconcile refuses unless the item still holds C1, in_doubt, and the ledger shows
// maxTime passed without being able to prove anything.
func forceDiscard(ctx context.Context, k *kit) result {
	out, err := k.svc.Do(ctx, reconcile.Request{Action: reconcile.ActionResolve, StoreKey: storeKey, Operator: "op",
		Discard: true, Force: true, Reason: "checked in full history", InnerHash: hashOf("C1")})
	if err != nil {
		return result{text: "resolve: " + problem(err)}
	}
	return result{text: "resolve: " + out.(*reconcile.ResolveAnswer).Resolution}
}

func problem(err error) string {
	var p transfer.ProblemError
	if errors.As(err, &p) {
		return fmt.Sprintf("%s %s", p.Problem().Kind, p.Problem().Code)
	}
	var re *reconcile.Error
	if errors.As(err, &re) {
		return re.Code
	}
	return err.Error()
}

// --- adapters ---

type store struct{ k *kit }

func (s store) Claim(_ context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	w := s.k.r.w
	v := s.k.r.point(s.k.a, point{kind: "Claim", desc: "Claim", applies: func() bool {
		cur, ok := w.items[rec.StoreKey]
		return !ok || cur.Expired(now)
	}})
	got, won := w.claim(rec, now)
	switch v {
	case lostAnswer:
		// The SDK's retry failed its condition against our own item and returned it.
		s.k.r.observe(s.k.a, v, "lost to own", func() string { return "lost to its own claim " + summary(got, w) })
		return got, false, nil
	case lostError:
		s.k.r.observe(s.k.a, v, "error", func() string { return "error after the write applied" })
		return transfer.Record{}, false, errors.New("model: claim: the write applied, then the call failed")
	}
	s.k.r.observe(s.k.a, "", fmt.Sprint(won, jsonOf(got)), func() string {
		if won {
			return "won: " + summary(got, s.k.r.w)
		}
		return "lost to " + summary(got, s.k.r.w)
	})
	return got, won, nil
}

func (s store) Get(_ context.Context, key string) (transfer.Record, error) {
	s.k.r.point(s.k.a, point{kind: "Get", desc: "Get"})
	got, err := s.k.r.w.get(key)
	s.k.r.observe(s.k.a, "", jsonOf(got)+errText(err), func() string {
		if err != nil {
			return "not found"
		}
		return summary(got, s.k.r.w)
	})
	return got, err
}

func (s store) Replace(_ context.Context, next transfer.Record, cond transfer.Condition) error {
	p := point{kind: "Replace"}
	if s.k.r.tracing {
		p.desc = "Replace if " + condSummary(cond, s.k.r.w) + " with " + summary(next, s.k.r.w)
	}
	w := s.k.r.w
	p.applies = func() bool { cur, ok := w.items[next.StoreKey]; return ok && w.holds(cond, cur) }
	v := s.k.r.point(s.k.a, p)
	err := w.replace(next, cond)
	if v == lostAnswer {
		err = fmt.Errorf("model: replace applied, its answer lost, the retry: %w", transfer.ErrConditionFailed)
	}
	s.k.r.observe(s.k.a, v, errText(err), func() string { return okOr(err) })
	return err
}

func (s store) Delete(_ context.Context, key string, cond transfer.Condition) error {
	p := point{kind: "Delete"}
	if s.k.r.tracing {
		p.desc = "Delete if " + condSummary(cond, s.k.r.w)
	}
	w := s.k.r.w
	p.applies = func() bool { cur, ok := w.items[key]; return ok && w.holds(cond, cur) }
	v := s.k.r.point(s.k.a, p)
	err := w.delete(key, cond)
	if v == lostAnswer {
		err = fmt.Errorf("model: delete applied, its answer lost, the retry: %w", transfer.ErrConditionFailed)
	}
	s.k.r.observe(s.k.a, v, errText(err), func() string { return okOr(err) })
	return err
}

func (s store) ListInDoubt(_ context.Context, _ int, _ string) ([]transfer.Record, string, error) {
	return s.listing("ListInDoubt", func(r transfer.Record) bool { return r.Status == transfer.StatusInDoubt }), "", nil
}

func (s store) ListExpiredClaims(_ context.Context, now time.Time, _ int, _ string) ([]transfer.Record, string, error) {
	return s.listing("ListExpiredClaims", func(r transfer.Record) bool {
		return r.Status == transfer.StatusInFlight && !r.LeaseExpiresAt.IsZero() && r.LeaseExpiresAt.Before(now)
	}), "", nil
}

func (s store) listing(what string, match func(transfer.Record) bool) []transfer.Record {
	s.k.r.point(s.k.a, point{kind: "List", desc: what})
	recs := s.k.r.w.list(match)
	s.k.r.observe(s.k.a, "", jsonOf(recs), func() string {
		if len(recs) == 1 {
			return summary(recs[0], s.k.r.w)
		}
		return fmt.Sprintf("%d items", len(recs))
	})
	return recs
}

type ledger struct{ k *kit }

// Prepare builds and signs (no scheduling point: nothing outside the actor sees it until it is
// written to the item or sent).
func (l ledger) Prepare(_ context.Context, req transfer.Request, terms transfer.Terms) (transfer.Envelope, error) {
	if l.k.r.w.batch {
		// A key of the batch models run alone: one operation, its own.
		return batchLedger(l).PrepareBatch(context.Background(), []transfer.Request{req}, terms)
	}
	return l.k.r.w.build(l.k.name("envelope"), terms.MaxTime), nil
}

func (l ledger) Send(_ context.Context, env transfer.Envelope) (transfer.SendResult, error) {
	if l.k.r.w.batch {
		return l.batchSend(env)
	}
	p := point{kind: "Send", envHash: env.InnerHash}
	if l.k.r.tracing {
		p.desc = "Send " + l.k.r.w.envName(env.InnerHash)
	}
	v := l.k.r.point(l.k.a, p)
	res := l.k.r.w.send(env, v)
	l.k.r.observe(l.k.a, v, jsonOf(res), func() string { return string(res.Status) + " " + res.Code })
	return res, nil
}

func (l ledger) Lookup(_ context.Context, env transfer.Envelope) (transfer.Lookup, error) {
	if l.k.r.w.batch {
		return l.batchLookup(env)
	}
	p := point{kind: "Lookup", envHash: env.InnerHash}
	if l.k.r.tracing {
		p.desc = "Lookup " + l.k.r.w.envName(env.InnerHash)
	}
	v := l.k.r.point(l.k.a, p)
	lk := l.k.r.w.lookup(env, v)
	l.k.r.observe(l.k.a, v, jsonOf(lk), func() string { return string(lk.Status) })
	return lk, nil
}

func (ledger) Done(context.Context, transfer.Envelope) {}

type clock struct{ k *kit }

func (c clock) Now() time.Time { return c.k.r.w.now() }

// Sleep is a point: "wake" returns with the budget left (time stands still until the tick),
// "budget over" ends the caller's budget as its deadline would.
func (c clock) Sleep(_ context.Context, d time.Duration) error {
	v := c.k.r.point(c.k.a, point{kind: "Sleep", desc: "Sleep " + d.String()})
	c.k.r.observe(c.k.a, v, "", func() string { return v })
	if v == "wake" {
		c.k.a.wakes++
		return nil
	}
	return context.DeadlineExceeded
}

type gauge struct{}

func (gauge) InDoubtGauge(context.Context, int) {}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func okOr(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, transfer.ErrConditionFailed):
		return "condition failed"
	}
	return err.Error()
}
