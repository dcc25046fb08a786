package devstack

import (
	"fmt"
	"strings"

	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
)

// deployVaultContract deploys the local vault contract, operated by the vault key, alongside the
// classic vault. It returns the contract's C... address and what the service's VAULT_CONTRACT
// becomes: that address when VAULT_CONTRACT=local (deposits and withdrawals then call the
// contract), "" when VAULT_CONTRACT is unset (the classic vault: withdrawals only). The local
// network knows no other contract, so any other value is refused.
func deployVaultContract(host *stellarsim.VaultHost, vault string, getenv config.Getenv) (contract, use string, err error) {
	contract, err = host.DeployVault(stellarsim.VaultSpec{Operator: vault,
		DepositFn: getenv("VAULT_CONTRACT_DEPOSIT_FN"), WithdrawFn: getenv("VAULT_CONTRACT_WITHDRAW_FN")})
	if err != nil {
		return "", "", fmt.Errorf("devstack: vault contract: %w", err)
	}
	switch v := strings.ToLower(strings.TrimSpace(getenv("VAULT_CONTRACT"))); v {
	case "":
		return contract, "", nil
	case "local":
		return contract, contract, nil
	default:
		return "", "", fmt.Errorf("devstack: VAULT_CONTRACT must be empty (classic vault) or local (the contract deployed at start), not %q", v)
	}
}
