package chaos_test

import (
	"fmt"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/chaos"
)

// TestCampaignLimits runs the campaign with daily limits (chaos.Config.Limits): every claim is a
// transaction of the claim and its two counters, through the same faults as every other write
// (refused, throttled, applied with its answer lost, or answered by the SDK's retry); the
// campaign's invariants must hold as without limits, and every counter must hold exactly what
// the claims that applied charged it: a lost answer, a retry or a take-over never charges twice.
// 60 keys by default (CHAOS_KEYS, CHAOS_SEED as TestCampaign).
func TestCampaignLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("the fault campaign with limits: make test runs it")
	}
	t.Parallel()
	seed := campaignSeed(t)
	cfg := chaos.DefaultConfig(seed)
	cfg.Channels, cfg.Keys, cfg.LoadBalanced, cfg.Limits = 8, campaignKeys(t, 60), true, true
	rep := runCampaign(t, cfg, fmt.Sprintf("CHAOS_SEED=%d go test -run TestCampaignLimits ./internal/chaos", seed))
	if n := rep.Faults["dynamo_claim_transact_answer_lost"] + rep.Faults["dynamo_claim_transact_answer_lost_retried"]; n == 0 {
		t.Errorf("no charged claim lost its answer: the faults %v never met the limits' transaction", rep.Faults)
	}
}
