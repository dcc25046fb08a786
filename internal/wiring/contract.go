package wiring

import (
	"github.com/stellar-transfer/orchestrator/internal/config"
	"github.com/stellar-transfer/orchestrator/internal/stellar"
)

// withVaultContract returns l in the vault-contract mode when VAULT_CONTRACTS or VAULT_CONTRACT
// is set (deposits and withdrawals call the asset's Soroban vault contract), else l itself.
func withVaultContract(c config.Contract, l *stellar.RPCLedger) (StellarLedger, error) {
	if !c.Enabled() {
		return l, nil
	}
	contracts := make(map[string]string, len(c.Contracts))
	for _, ac := range c.Contracts {
		contracts[ac.Code] = ac.Contract
	}
	return stellar.NewContractLedger(l, stellar.ContractConfig{
		Contracts: contracts, DepositFn: c.DepositFn, WithdrawFn: c.WithdrawFn, Decimals: c.Decimals,
	})
}
