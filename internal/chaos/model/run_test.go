package model

import (
	"context"
	"fmt"
	"hash/fnv"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// One run of the model: the actors' goroutines, their scheduling points, and the steps the
// explorer chooses. Exactly one goroutine runs at a time: an actor runs from the moment it is
// granted a point until it stops at its next point (or returns), and the explorer waits for that.

// point is where an actor stops until the explorer picks it: a Store call, a Ledger send or
// look-up, a Clock sleep, its start, or a decision of its own.
type point struct {
	kind    string // Claim, Get, Replace, Delete, List, Send, Lookup, Sleep, start, decide
	desc    string // what it asks, for the trace (set only when tracing, where it costs)
	envHash string // Send and Lookup: the envelope's inner hash
	options []string
	// applies, for a conditional write, reports whether it would apply now: only then can its
	// answer be lost (limits.lost).
	applies func() bool
	// opts, when set, lists the point's variants in the world as it is when the explorer chooses
	// (the batch models' points: batch_test.go).
	opts func() []string
}

// choice is one step: an actor granted its point with one of the point's variants (how the
// ledger answers, whether a sleep ends the budget), or the clock's tick (actor -1).
type choice struct {
	actor   int
	variant string
}

// result is what an actor answered, and the hashes it claims landed (a 200, a resolution).
type result struct {
	text   string
	landed []string
	// cancelled: the actor answered that the transfer is cancelled; notCancelled: that it is past
	// queued (TRANSFER_NOT_CANCELLABLE). Either is checked against the item when it returns.
	cancelled, notCancelled bool
	// ops are the answers that name one operation of a landed or failed transaction (the batch
	// models), each checked when the actor returns.
	ops []opAnswer
}

// spec is an actor: a name (one letter) and what it does, given the adapters bound to it.
type spec struct {
	name string
	role string
	// late actors start only after the clock's tick: they arrive once the claimant's lease has
	// expired (the claimant may still be running, its writes delayed).
	late bool
	// mortal actors' processes may die at any of their points (limits.deaths).
	mortal bool
	body   func(ctx context.Context, k *kit) result
}

// actor is a spec's state in one run.
type actor struct {
	spec
	idx     int
	grant   chan string
	pending *point
	done    bool
	res     result
	hist    uint64 // fnv-1a of every answer it received, with the clock at each
	wakes   int    // sleeps that returned with budget left
	steps   int
	counts  map[string]int // for deterministic names: owners, claims, envelopes
	last    string         // the last point and its answer, for the trace
}

// limits bound the model.
type limits struct {
	ticks int // clock ticks in a run
	// preemptions: how many times a run may switch away from an actor that could go on (not
	// returned, not asleep); switching from one that returned or sleeps is free (CHESS's
	// preemption bound). Negative: no bound.
	preemptions int
	wakes       int // sleeps per actor that return with budget left; the next one ends the budget
	maxSteps    int // points per actor; more is a bug in the model
	// pruned: a look-up may also find a ledger past maxTime whose history does not reach the
	// submission (what a forced discard needs).
	pruned bool
	// lost: how many conditional writes in a run may apply and lose their answer: the SDK's
	// retry then fails its condition against the item the write made (a claim comes back lost to
	// its own item), or the call fails after the write applied.
	lost int
	// stopAtFirst ends the exploration at the first violation.
	stopAtFirst bool
	// holds is the store's condition semantics; nil means conditionHolds (transfer.Condition.Matches).
	holds func(transfer.Condition, transfer.Record) bool
	// queued: the run starts from the key's queued item (queuedItem), an async transfer accepted
	// and not yet taken.
	queued bool
	// batch: the run starts from two queued items, batchKeys (batch_test.go), and the invariants
	// are checked per key and per operation (batchCheck).
	batch bool
	// deaths: how many times in a run a mortal actor's process may die at one of its points (it
	// stops there, its lease left to expire).
	deaths int
	// mutation names a rule of the batch protocol the batch actors break (batch_test.go), to show
	// that the check finds what breaking it does; "" keeps the protocol.
	mutation string
}

const abort = "\x00abort"

// dies is the variant of a mortal actor's point at which its process dies (limits.deaths).
const dies = "process dies"

// The variants of a conditional write whose answer was lost (limits.lost).
const (
	lostAnswer = "applied, answer lost"
	lostError  = "applied, then failed"
)

type run struct {
	w       *world
	lim     limits
	actors  []*actor
	parked  chan int
	wg      sync.WaitGroup
	tracing bool
	trace   []string
	answers []violation // false answers found when actors returned
	current int         // the actor that took the last step, -1 before the first
	preempt int         // preemptions taken
	lost    int         // answers lost
	deaths  int         // processes died
}

func newRun(specs []spec, lim limits, tracing bool) *run {
	w := newWorld()
	if lim.holds != nil {
		w.holds = lim.holds
	}
	if lim.queued {
		w.items[storeKey] = queuedItem()
	}
	if lim.batch {
		w.batch = true
		for _, b := range batchKeys {
			w.items[b.key] = batchItem(b)
		}
	}
	r := &run{w: w, lim: lim, parked: make(chan int), tracing: tracing, current: -1}
	for i, s := range specs {
		a := &actor{spec: s, idx: i, grant: make(chan string), counts: map[string]int{}, hist: fnv1a(0, s.name)}
		r.actors = append(r.actors, a)
		k := newKit(r, a)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.point(a, point{kind: "start", desc: "starts (" + a.role + ")"})
			a.res = a.body(context.Background(), k)
			a.done, a.pending = true, nil
			r.parked <- a.idx
		}()
		if got := <-r.parked; got != i {
			panic("model: actor parked out of turn")
		}
	}
	return r
}

// point is called on the actor's goroutine: it parks the actor and returns the variant it is
// granted. On abort the goroutine exits (deferred calls run; no answer is recorded).
func (r *run) point(a *actor, p point) string {
	a.pending = &p
	r.parked <- a.idx
	v := <-a.grant
	if v == abort {
		runtime.Goexit()
	}
	if v == dies {
		// The process dies here: nothing after this point runs, and what it wrote stays.
		a.hist = fnv1a(a.hist, "dies|"+p.kind)
		a.res = result{text: "dies before " + p.kind}
		if r.tracing {
			a.last = p.desc + " [" + dies + "]"
		}
		a.done, a.pending = true, nil
		r.parked <- a.idx
		runtime.Goexit()
	}
	a.pending = nil
	a.hist = fnv1a(a.hist, p.kind+"|"+p.envHash+"|"+v+"|"+strconv.Itoa(r.w.ticks))
	if r.tracing {
		a.last = p.desc // observe adds the answer
	}
	if a.steps++; a.steps > r.lim.maxSteps {
		panic(fmt.Sprintf("model: actor %s passed %d points", a.name, r.lim.maxSteps))
	}
	return v
}

// observe records what the actor received at a point (point itself recorded the grant): its
// future depends only on these. readable is called only when tracing.
func (r *run) observe(a *actor, variant, answer string, readable func() string) {
	a.hist = fnv1a(a.hist, answer)
	if r.tracing {
		v := ""
		if variant != "" {
			v = " [" + variant + "]"
		}
		a.last += v + " -> " + readable()
	}
}

// variants are the ways a's pending point can be granted, in the world as it is now.
func (r *run) variants(a *actor) []string {
	vs := r.pointVariants(a)
	if a.mortal && r.deaths < r.lim.deaths && a.pending.kind != "start" {
		vs = append(vs[:len(vs):len(vs)], dies)
	}
	return vs
}

// pointVariants are the ways a's pending point can be granted, its process's death aside.
func (r *run) pointVariants(a *actor) []string {
	p := a.pending
	if p.opts != nil {
		return p.opts()
	}
	switch p.kind {
	case "Send":
		if r.w.batch {
			return batchSendVariants[r.w.envs[p.envHash].fate]
		}
		return sendVariants[r.w.envs[p.envHash].fate]
	case "Lookup":
		f := r.w.envs[p.envHash].fate
		if r.lim.pruned && (f == built || f == queued) {
			return pruned(lookupVariants[f])
		}
		return lookupVariants[f]
	case "Sleep":
		if a.wakes < r.lim.wakes {
			return []string{"wake", "budget over"}
		}
		return []string{"budget over"}
	case "decide":
		return p.options
	case "Claim":
		if r.lost < r.lim.lost && p.applies() {
			return []string{"", lostAnswer, lostError}
		}
	case "Replace", "Delete":
		if r.lost < r.lim.lost && p.applies() {
			return []string{"", lostAnswer}
		}
	}
	return []string{""}
}

// choices lists every step possible now: each waiting actor with each variant of its point (a
// late actor only once the clock has ticked), then the tick. None when every actor has returned.
func (r *run) choices() []choice {
	var cs []choice
	waiting := false
	for _, a := range r.actors {
		waiting = waiting || !a.done
		if a.done || r.preempts(a.idx) && r.lim.preemptions >= 0 && r.preempt >= r.lim.preemptions {
			continue
		}
		if a.late && a.pending.kind == "start" && r.w.ticks == 0 {
			continue
		}
		for _, v := range r.variants(a) {
			cs = append(cs, choice{a.idx, v})
		}
	}
	if waiting && r.w.ticks < r.lim.ticks {
		cs = append(cs, choice{-1, "tick"})
	}
	return cs
}

// preempts reports whether a step of actor i would preempt the current actor: switch away from
// one that could go on.
func (r *run) preempts(i int) bool {
	if r.current < 0 || r.current == i {
		return false
	}
	cur := r.actors[r.current]
	return !cur.done && cur.pending.kind != "Sleep"
}

// step takes one choice and runs the chosen actor to its next point.
func (r *run) step(c choice) {
	if c.actor < 0 {
		r.w.ticks++
		if r.tracing {
			r.trace = append(r.trace, fmt.Sprintf("%3d  clock  ticks %s: every lease and budget begun before now has ended | item: %s",
				len(r.trace)+1, tickStep, r.w.itemSummary()))
		}
		return
	}
	a := r.actors[c.actor]
	if r.preempts(a.idx) {
		r.preempt++
	}
	r.current = a.idx
	if c.variant == lostAnswer || c.variant == lostError {
		r.lost++
	}
	if c.variant == dies {
		r.deaths++
	}
	a.grant <- c.variant
	if got := <-r.parked; got != a.idx {
		panic("model: another actor ran")
	}
	if a.done {
		for _, h := range a.res.landed {
			if v := r.w.answerTrue(a.name, h); v != nil {
				r.answers = append(r.answers, *v)
			}
		}
		if v := r.w.cancelTrue(a.name, a.res); v != nil {
			r.answers = append(r.answers, *v)
		}
		for _, ans := range a.res.ops {
			if v := r.w.opAnswerTrue(a.name, ans); v != nil {
				r.answers = append(r.answers, *v)
			}
		}
	}
	if r.tracing {
		line := fmt.Sprintf("%3d  %s  %s", len(r.trace)+1, a.name, a.last)
		if a.done {
			line += "; returns " + a.res.text
		}
		r.trace = append(r.trace, line+" | item: "+r.w.itemSummary()+" | ledger: "+r.w.ledgerSummary())
	}
}

func (r *run) violations() []violation {
	return append(r.w.check(), r.answers...)
}

// key is the run's state: the world and every actor's history (which decides all it will do).
func (r *run) key() uint64 {
	h := fnv1a(0, fmt.Sprintf("%s|%d|%d", r.w.stateKey(), r.current, r.preempt))
	for _, a := range r.actors {
		h = fnv1a(h, fmt.Sprintf("%t:%x", a.done, a.hist))
	}
	return h
}

// finish ends the actors still waiting and waits for every goroutine to exit.
func (r *run) finish() {
	for _, a := range r.actors {
		if !a.done {
			a.grant <- abort
		}
	}
	r.wg.Wait()
}

func fnv1a(seed uint64, s string) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(seed >> (8 * i))
	}
	h.Write(b[:])
	h.Write([]byte(s))
	return h.Sum64()
}

func (c choice) String() string {
	if c.actor < 0 {
		return "tick"
	}
	return fmt.Sprintf("%d/%s", c.actor, strings.TrimSpace(c.variant))
}
