package model

import (
	"fmt"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The store's condition semantics: transfer.Condition.Matches, the reference every Store
// implements (internal/dynamo's contract suite checks that its condition expression agrees).

// conditionHolds reports whether the stored item cur satisfies cond.
func conditionHolds(cond transfer.Condition, cur transfer.Record) bool {
	return cond.Matches(cur)
}

// incarnation names the item's incarnation in a trace: its ClaimID.
func incarnation(r transfer.Record) string { return r.ClaimID }

// condSummary is a condition in a trace.
func condSummary(cond transfer.Condition, w *world) string {
	s := fmt.Sprintf("claim %q %s v%d", cond.ClaimID, cond.Status, cond.Version)
	if cond.LeaseOwner != "" {
		s += " owner " + cond.LeaseOwner
	}
	if cond.InnerHash != "" {
		s += " envelope " + w.envName(cond.InnerHash)
	}
	return s
}

// configure makes the actor's claim IDs deterministic (so a run is a function of its choices) and
// unique across actors, as the random ones are: "claim-C1", "claim-C2", "claim-T1".
func configure(k *kit) {
	k.orch.NewClaimID = func() string { return "claim-" + k.name("claim") }
}
