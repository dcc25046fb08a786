package config_test

import (
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/config"
)

func TestLoadReconcileActions(t *testing.T) {
	for v, want := range map[string]config.ReconcileActions{"": config.ReconcileAll, "all": config.ReconcileAll, " Read ": config.ReconcileRead, "read": config.ReconcileRead} {
		got, err := config.LoadReconcileActions(env(map[string]string{"RECONCILE_ACTIONS": v}))
		if err != nil || got != want {
			t.Errorf("RECONCILE_ACTIONS=%q: %q, %v; want %q", v, got, err, want)
		}
	}
	for _, v := range []string{"readonly", "list,get", "write"} {
		got, err := config.LoadReconcileActions(env(map[string]string{"RECONCILE_ACTIONS": v}))
		if err == nil || got != "" || !strings.Contains(err.Error(), "RECONCILE_ACTIONS must be all or read") {
			t.Errorf("RECONCILE_ACTIONS=%q: %q, %v; want an error naming the variable", v, got, err)
		}
	}
}
