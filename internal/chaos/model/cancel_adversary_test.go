package model

import (
	"strings"
	"testing"
)

// TestCancelledTransferNeverLandsBesideTheSweepAndRetries explores the cancel beside the writers
// the shipped cancel models leave out: the sweep (Settle of the item it finds: a taken item
// whose submitter died is requeued, or settled from the ledger), an operator's resolve, and a
// synchronous retry of the same request that takes an expired lease over (and requeues, when
// nothing could land). Each must leave a cancelled item with nothing that can land, and every
// cancel's answer true when it returns.
func TestCancelledTransferNeverLandsBesideTheSweepAndRetries(t *testing.T) {
	for _, m := range []model{
		{"cancel beside the sweep", "QXS", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true}},
		{"cancel beside the sweep, lost answer", "QXS", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true, lost: 1}},
		{"cancel beside an operator", "QXO", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true}},
		{"cancel beside a late take-over", "QXT", limits{ticks: 1, wakes: 0, preemptions: 1, maxSteps: 100, queued: true}},
	} {
		t.Run(m.name, func(t *testing.T) {
			if testing.Short() {
				m.lim.preemptions = 0
			}
			specs := m.specs()
			st := explore(specs, m.lim)
			t.Logf("%s: %s; answers given:\n%s", m.actors, st, st.answerList())
			for _, kind := range st.kinds() {
				f := st.found[kind]
				t.Errorf("%s (%d states): %s; the first interleaving:\n%s", kind, f.states, f.detail,
					strings.Join(replay(specs, m.lim, f.path), "\n"))
			}
		})
	}
}
