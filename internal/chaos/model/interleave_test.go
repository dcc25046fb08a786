package model

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// A model is a set of actors (actors_test.go) and the bounds it is explored within.
type model struct {
	name   string
	actors string // actor names, from actors
	lim    limits
}

// The five actors together reach more than a million states; each stale writer is explored with
// the claimant and a take-over, which between them make every release and reclaim, and the take-over's
// own reclaim (a sleep that returns with budget left) gets a model of its own. Each model is
// explored completely within its bounds: one clock tick, at most one preemption (a switch away
// from an actor that could go on; switching at a sleep or a return is free, as in CHESS), and
// the sleeps that return with budget left.
var models = []model{
	{"sweep", "CTS", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"operator", "CTO", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"inline reconciler", "CTR", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100}},
	{"take-over and reclaim", "CT", limits{ticks: 1, wakes: 1, preemptions: 1, maxSteps: 100}},
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
// interleaving that breaks each invariant (doc.go).
func TestInterleavings(t *testing.T) {
	total := new(big.Int)
	states := 0
	for _, m := range models {
		t.Run(m.name, func(t *testing.T) {
			specs := m.specs()
			st := explore(specs, m.lim)
			total.Add(total, st.paths)
			states += st.states
			t.Logf("%s: %s", m.actors, st)
			for _, kind := range st.kinds() {
				f := st.found[kind]
				t.Errorf("%s (%d states): %s; the first interleaving:\n%s", kind, f.states, f.detail,
					strings.Join(replay(specs, m.lim, f.path), "\n"))
			}
		})
	}
	msg := fmt.Sprintf("explored %s complete interleavings (%d distinct states) in %d models", total, states, len(models))
	t.Log(msg)
	fmt.Println("model:", msg)
}
