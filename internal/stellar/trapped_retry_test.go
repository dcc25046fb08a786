package stellar_test

import (
	"context"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellar"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// op_trapped names no side (transfer.SourceShortfall: SERVICE_SIDE_FAILURE, key released), and
// the retry simulates the call again before sending: a trap that lasts is refused there as a
// retryable 503 (SIMULATION_ERROR, or VAULT_UNDERFUNDED for the vault contract's error #1 on a
// withdrawal), with nothing sent and no fee, never a destination's rejection (README.md, "When
// the ledger answers FAILED"). Here a withdrawal simulated against a balance that another
// withdrawal spends before it applies traps at apply; its retry meets the empty balance in the
// simulation.
func TestRetryAfterTrappedIsRefusedBySimulationNotRejected(t *testing.T) {
	r := newContractRigWith(t, stellar.ContractConfig{}, contractRigOpts{channels: 2})
	r.mustTransfer("deposit-trap-1", transfer.Deposit, r.wallet, 3)
	spent := false
	r.orch.Hooks = func(_ context.Context, s transfer.Step, rec transfer.Record) error {
		if s == transfer.StepAttached && rec.ClientKey == "withdraw-trap-1" && !spent {
			spent = true // the balance is spent between this envelope's simulation and its apply
			r.mustTransfer("withdraw-trap-2", transfer.Withdraw, r.wallet, 3)
		}
		return nil
	}
	_, err := r.transfer("withdraw-trap-1", transfer.Withdraw, r.wallet, 3)
	if p := problemOf(t, err); !spent || p.Code != transfer.CodeServiceSideFailure || p.Classification != transfer.Retryable {
		t.Fatalf("the trapped withdrawal: %+v (spent %v), want 503 SERVICE_SIDE_FAILURE", p, spent)
	}
	r.orch.Hooks = nil
	sent := len(r.net.Envelopes())
	_, err = r.transfer("withdraw-trap-1", transfer.Withdraw, r.wallet, 3)
	p := problemOf(t, err)
	if p.Kind != transfer.KindUnavailable || p.Classification != transfer.Retryable ||
		(p.Code != transfer.CodeSimulationError && p.Code != transfer.CodeVaultUnderfunded) {
		t.Fatalf("the retry: %+v, want a retryable 503 from the simulation, never a rejection", p)
	}
	if n := len(r.net.Envelopes()); n != sent {
		t.Fatalf("the retry sent %d envelopes, want none: the simulation refuses first", n-sent)
	}
}
