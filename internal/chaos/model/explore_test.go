package model

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// The explorer: a depth-first search over the choices of a run, replaying the prefix from a fresh
// world for each branch (a goroutine cannot be copied), with a cache of the states reached.
// Runs are deterministic: the same choices give the same steps and the same answers.

// node is a state on the current path: the choices possible there and which one is being taken.
type node struct {
	key     uint64
	choices []choice
	next    int
	paths   *big.Int // complete interleavings through the children explored so far
}

// found is the first interleaving that reached a violation of one kind, and how many states
// violated it.
type found struct {
	violation
	path   []choice
	states int
}

type stats struct {
	states int      // distinct states reached
	runs   int      // runs (each a replay of a prefix and an extension)
	steps  int      // steps executed in all runs, replays included
	ends   int      // states with nothing left to do (every actor returned)
	joins  int      // times a run reached a state already explored and stopped
	paths  *big.Int // complete interleavings covered: paths from the start to an end state
	found  map[string]*found
	// answers are the answers each actor gave at the end states, so a reader can see that the
	// model reaches what it claims to (a forced discard that releases, a 200 after a take-over).
	answers map[string]map[string]bool
}

// explore visits every state reachable from the start of specs within lim. A state that violates
// an invariant is recorded and not extended.
func explore(specs []spec, lim limits) stats {
	st := stats{found: map[string]*found{}, answers: map[string]map[string]bool{}}
	done := map[uint64]*big.Int{} // paths from a finished state to an end; nil while on the path
	var path []*node
	for {
		st.runs++
		r := newRun(specs, lim, false)
		for _, n := range path {
			r.step(n.choices[n.next])
			st.steps++
		}
		var leaf *big.Int // paths through the state this run stopped at
		for {
			key := r.key()
			if p, seen := done[key]; seen {
				if p == nil {
					panic("model: a state repeats on its own path")
				}
				st.joins++
				leaf = p
				break
			}
			if vs := r.violations(); len(vs) > 0 {
				st.states++
				for _, v := range vs {
					f := st.found[v.kind]
					if f == nil {
						f = &found{violation: v, path: currentPath(path)}
						st.found[v.kind] = f
					}
					f.states++
				}
				if lim.stopAtFirst {
					r.finish()
					st.paths = new(big.Int)
					return st
				}
				done[key] = big.NewInt(1)
				leaf = big.NewInt(1)
				break
			}
			cs := r.choices()
			st.states++
			if len(cs) == 0 {
				st.ends++
				for _, a := range r.actors {
					if st.answers[a.name] == nil {
						st.answers[a.name] = map[string]bool{}
					}
					st.answers[a.name][a.res.text] = true
				}
				done[key] = big.NewInt(1)
				leaf = big.NewInt(1)
				break
			}
			done[key] = nil
			path = append(path, &node{key: key, choices: cs, paths: new(big.Int)})
			r.step(cs[0])
			st.steps++
		}
		r.finish()
		// Credit the state reached to its parent, then move to the next untried choice.
		if len(path) == 0 {
			st.paths = leaf
			return st
		}
		path[len(path)-1].paths.Add(path[len(path)-1].paths, leaf)
		for len(path) > 0 {
			top := path[len(path)-1]
			if top.next++; top.next < len(top.choices) {
				break
			}
			done[top.key] = top.paths
			path = path[:len(path)-1]
			if len(path) > 0 {
				path[len(path)-1].paths.Add(path[len(path)-1].paths, top.paths)
			} else {
				st.paths = top.paths
			}
		}
		if len(path) == 0 {
			return st
		}
	}
}

func currentPath(path []*node) []choice {
	out := make([]choice, len(path))
	for i, n := range path {
		out[i] = n.choices[n.next]
	}
	return out
}

// replay runs path again with tracing and returns its steps, readable.
func replay(specs []spec, lim limits, path []choice) []string {
	r := newRun(specs, lim, true)
	defer r.finish()
	for _, c := range path {
		r.step(c)
	}
	return r.trace
}

func (st stats) kinds() []string {
	var ks []string
	for k := range st.found {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func (st stats) String() string {
	return fmt.Sprintf("%s complete interleavings covered: %d distinct states, %d end states, %d runs (%d joined an explored state), %d steps executed",
		st.paths, st.states, st.ends, st.runs, st.joins, st.steps)
}

// answerList is each actor's distinct answers at the end states, one line per actor.
func (st stats) answerList() string {
	var lines []string
	for name, set := range st.answers {
		var as []string
		for a := range set {
			as = append(as, a)
		}
		sort.Strings(as)
		lines = append(lines, name+": "+strings.Join(as, "; "))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
