package config

import (
	"fmt"
	"strings"
)

// ReconcileActions is which reconcile actions a function built from functions/reconcile answers
// (RECONCILE_ACTIONS): ReconcileAll (unset or "all": ReconcileFunction, the operator role) or
// ReconcileRead ("read": InDoubtReaderFunction, list, get and report only; README.md, "Operator roles").
type ReconcileActions string

// The values of RECONCILE_ACTIONS.
const (
	ReconcileAll  ReconcileActions = "all"
	ReconcileRead ReconcileActions = "read"
)

// LoadReconcileActions reads RECONCILE_ACTIONS: "" or "all" is ReconcileAll, "read" ReconcileRead
// (case and surrounding spaces ignored); anything else is an error naming the variable, so a
// misspelt reader fails at init rather than serving every action.
func LoadReconcileActions(getenv Getenv) (ReconcileActions, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv("RECONCILE_ACTIONS"))); v {
	case "", string(ReconcileAll):
		return ReconcileAll, nil
	case string(ReconcileRead):
		return ReconcileRead, nil
	default:
		return "", fmt.Errorf("config: RECONCILE_ACTIONS must be all or read, not %q", clip(v, 32))
	}
}

func clip(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
