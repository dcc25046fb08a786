package wiring

import (
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
)

// withVaultContract returns l in the vault-contract mode when VAULT_CONTRACT is set (deposits
// and withdrawals call the Soroban vault contract), else l itself.
func withVaultContract(c config.Contract, l *stellar.RPCLedger) (StellarLedger, error) {
	if c.Contract == "" {
		return l, nil
	}
	return stellar.NewContractLedger(l, stellar.ContractConfig{
		Contract: c.Contract, DepositFn: c.DepositFn, WithdrawFn: c.WithdrawFn, Decimals: c.Decimals,
	})
}
