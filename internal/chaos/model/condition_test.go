package model

import (
	"fmt"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The store's condition semantics, as internal/dynamo's condition builder implements them. Before
// issue 11: status and version, and the lease owner when the condition names one.

// conditionHolds reports whether the stored item cur satisfies cond.
func conditionHolds(cond transfer.Condition, cur transfer.Record) bool {
	return cur.Status == cond.Status && cur.Version == cond.Version &&
		(cond.LeaseOwner == "" || cur.LeaseOwner == cond.LeaseOwner)
}

// incarnation names the item's incarnation in a trace; items have none yet.
func incarnation(transfer.Record) string { return "" }

// condSummary is a condition in a trace.
func condSummary(cond transfer.Condition, _ *world) string {
	s := fmt.Sprintf("%s v%d", cond.Status, cond.Version)
	if cond.LeaseOwner != "" {
		s += " owner " + cond.LeaseOwner
	}
	return s
}

// configure sets what the orchestrator of an actor needs beyond the adapters.
func configure(*kit) {}
