package chaos_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/chaos"
)

// TestCampaign runs the fault campaign: 2,000 calls by default (make test); `make chaos` sets
// CHAOS_KEYS for 10,000+. CHAOS_SEED reruns a given seed.
func TestCampaign(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("CHAOS_SEED: %v", err)
		}
		seed = s
	}
	cfg := chaos.DefaultConfig(seed)
	if v := os.Getenv("CHAOS_KEYS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("CHAOS_KEYS: %q", v)
		}
		cfg.Keys = n
	}
	if testing.Verbose() {
		cfg.Log = os.Stdout
	}
	rep, err := chaos.Run(cfg)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	t.Log("\n" + rep.String())
	if rep.Failed() {
		t.Fatalf("seed %d broke the invariants (rerun: CHAOS_SEED=%d)", seed, seed)
	}
	if cfg.Keys < 250 {
		return
	}
	for _, kind := range []string{"refuse", "drop_response", "delay", "answer_TRY_AGAIN_LATER", "answer_txBAD_SEQ",
		"answer_txINSUFFICIENT_FEE", "answer_http_504", "answer_http_500", "drop_envelope", "delay_inclusion",
		"stall", "retention", "connection_refused", "lookup_lost", "dynamo_outage",
		"dynamo_put_error", "dynamo_put_throttled", "dynamo_put_answer_lost", "dynamo_delete_error",
		"dynamo_delete_answer_lost", "dynamo_get_error"} {
		if rep.Faults[kind] == 0 {
			t.Errorf("fault %s never happened", kind)
		}
	}
	for _, step := range []string{"claimed", "prepared", "attached", "sent", "settling"} {
		if rep.Crashes[step] == 0 {
			t.Errorf("no call crashed at %s", step)
		}
	}
}
