package stellarsim

import (
	"crypto/sha256"
	"fmt"
)

// backgroundVault is the vault the congestion profile's Soroban traffic from operator calls
// (congestion_soroban.go): one vault per background account, operated by it, deployed like
// DeployVault on first use as of ledger latest. Its salt is derived from the operator, so the
// same profile gives the same contract IDs, and so the same transaction hashes and fee-rate tie
// breaks, on every run. It answers the vault's C... address.
//
// Lock order: the caller holds the network's lock; this takes the host's.
func (h *VaultHost) backgroundVault(passphrase, operator string, latest uint32) (string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if v := h.background[operator]; v != nil {
		return v.strkey, nil
	}
	spec := VaultSpec{Operator: operator, DepositFn: fnDeposit, WithdrawFn: fnWithdraw,
		Salt: sha256.Sum256([]byte("stellarsim background vault " + operator))}
	v, err := h.deployLocked(passphrase, spec, latest)
	if err != nil {
		return "", fmt.Errorf("stellarsim: background vault of %s: %w", operator, err)
	}
	if h.background == nil {
		h.background = map[string]*vault{}
	}
	h.background[operator] = v
	return v.strkey, nil
}
