package model

import (
	"fmt"
	"math/big"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A model is a set of actors (actors_test.go) and the bounds it is explored within.
type model struct {
	name   string
	actors string // actor names, from actors
	lim    limits
}

// The five actors together reach more than a million states, too many for make test; each stale
// writer is explored with the claimant and a take-over, which between them make every release and
// reclaim (the take-over is also the inline reconciler whenever it finds the item in_doubt). Each
// model is explored completely within its bounds: one clock tick, at most one preemption (a switch
// away from an actor that could go on; switching at a sleep or a return is free, as in CHESS), no
// sleep that returns with budget left (every sleep may end its caller's budget, which is when a
// retry parks its envelope in_doubt), and, in "lost answer", one conditional write that applies
// and loses its answer (transfer.ReplaceItem and DeleteItem must recognise it).
var models = []model{
	{"sweep", "CTS", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"operator", "CTO", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"lost answer", "CT", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, lost: 1}},
	{"cancel", "QX", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true}},
	{"cancel, lost answer", "QX", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true, lost: 1}},
}

// fullModels are explored as well when MODEL_FULL is set (half a minute without -race, several
// with it): an operator forcing a discard (look-ups may find the history pruned), a lost answer
// beside the sweep, a second retry beside the take-over (a stale inline reconciler, a delayed
// take-over), the take-over that reclaims in the same call after its backoff, and the sweep and
// the operator with two preemptions.
var fullModels = []model{
	{"forced discard", "CTF", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, pruned: true}},
	{"lost answer beside the sweep", "CTS", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, lost: 1}},
	{"inline reconciler", "CTR", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"take-over and reclaim", "CT", limits{ticks: 1, wakes: 1, preemptions: 1, maxSteps: 100}},
	{"sweep, two preemptions", "CTS", limits{ticks: 1, wakes: 0, preemptions: 2, maxSteps: 100}},
	{"operator, two preemptions", "CTO", limits{ticks: 1, wakes: 0, preemptions: 2, maxSteps: 100}},
	{"cancel beside a synchronous retry", "QXC", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true}},
	{"two cancels, lost answer", "QXY", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true, lost: 1}},
	{"cancel, requeue and reclaim", "QX", limits{ticks: 1, wakes: 1, preemptions: 2, maxSteps: 100, queued: true, lost: 1}},
}

// shortModels is what `go test -short` explores (make test-short): the same models without
// preemptions, so actors switch only where one sleeps or returns. It keeps the quick loop quick
// (a few seconds with -race) and checks every invariant on those interleavings; make test
// explores the full models.
func shortModels(run []model) []model {
	out := make([]model, len(run))
	for i, m := range run {
		m.lim.preemptions = 0
		out[i] = m
	}
	return out
}

func (m model) specs() []spec {
	var out []spec
	for _, a := range actors {
		if strings.Contains(m.actors, a.name) {
			out = append(out, a)
		}
	}
	return out
}

// TestInterleavings explores every interleaving of each model and fails with the first
// interleaving that breaks each invariant (doc.go). It prints how many it explored.
func TestInterleavings(t *testing.T) {
	var mu sync.Mutex
	total := new(big.Int)
	states := 0
	// The models run in parallel; the total is logged once they all have.
	run := models
	if os.Getenv("MODEL_FULL") != "" {
		run = append(run, fullModels...)
	}
	if testing.Short() {
		run = shortModels(run)
	}
	t.Run("models", func(t *testing.T) {
		for _, m := range run {
			t.Run(m.name, func(t *testing.T) {
				t.Parallel()
				specs := m.specs()
				st := explore(specs, m.lim)
				mu.Lock()
				total.Add(total, st.paths)
				states += st.states
				mu.Unlock()
				t.Logf("%s: %s; answers given:\n%s", m.actors, st, st.answerList())
				for _, kind := range st.kinds() {
					f := st.found[kind]
					t.Errorf("%s (%d states): %s; the first interleaving:\n%s", kind, f.states, f.detail,
						strings.Join(replay(specs, m.lim, f.path), "\n"))
				}
			})
		}
	})
	msg := fmt.Sprintf("explored %s complete interleavings (%d distinct states) in %d models", total, states, len(run))
	t.Log(msg)
	fmt.Println("model:", msg)
}

// TestInterleavingsFindStaleWriters shows the check can fail: with the store's conditions
// lacking the incarnation (status and version, and the lease owner when named: no incarnation, no
// envelope), the sweep model finds a stale Settle deleting a later claim's item whose envelope can
// still land.
func TestInterleavingsFindStaleWriters(t *testing.T) {
	lim := limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, holds: statusAndVersion, stopAtFirst: true}
	st := explore(model{actors: "CTS"}.specs(), lim)
	t.Logf("with status and version only: %s", st)
	f := st.found["delete-live"]
	if f == nil {
		t.Fatalf("no stale delete found; found %v", st.kinds())
	}
	t.Logf("%s:\n%s", f.detail, strings.Join(replay(model{actors: "CTS"}.specs(), lim, f.path), "\n"))
}

// statusAndVersion is a condition without the incarnation: status, version and lease owner.
func statusAndVersion(cond transfer.Condition, cur transfer.Record) bool {
	return cur.Status == cond.Status && cur.Version == cond.Version &&
		(cond.LeaseOwner == "" || cur.LeaseOwner == cond.LeaseOwner)
}

// TestInterleavingsFindCancelRaces shows the cancel models can fail: with conditions that name
// only the incarnation (no status, version, lease owner or envelope), a cancel and the
// submitter's take of the same queued item both apply, and the model finds a cancelled item
// whose envelope can land, or a cancel answered against what the item became.
func TestInterleavingsFindCancelRaces(t *testing.T) {
	lim := limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true, stopAtFirst: true,
		holds: func(cond transfer.Condition, cur transfer.Record) bool { return cur.ClaimID == cond.ClaimID }}
	specs := model{actors: "QX"}.specs()
	st := explore(specs, lim)
	var f *found
	for _, kind := range []string{"cancelled-live", "false-cancel"} {
		if f == nil {
			f = st.found[kind]
		}
	}
	if f == nil {
		t.Fatalf("no cancel race found; found %v", st.kinds())
	}
	t.Logf("%s:\n%s", f.detail, strings.Join(replay(specs, lim, f.path), "\n"))
}
