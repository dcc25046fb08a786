package config

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/stellar/go-stellar-sdk/strkey"
)

// Contract is the vault-contract mode (issue 6): when Contract is set, deposits and withdrawals
// call the Soroban vault contract's functions with (wallet: Address, amount: i128).
type Contract struct {
	// Contract is the vault contract (VAULT_CONTRACT, C...); empty means the classic vault.
	Contract string
	// DepositFn and WithdrawFn name the contract functions (VAULT_CONTRACT_DEPOSIT_FN, default
	// deposit; VAULT_CONTRACT_WITHDRAW_FN, default withdraw).
	DepositFn, WithdrawFn string
	// Decimals is the asset's decimal places as the contract counts amounts
	// (VAULT_CONTRACT_DECIMALS, 1 to 18, default 7).
	Decimals int
}

var symbolRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)

// loadContract reads the vault-contract settings into c.VaultContract. The contract mode needs
// Stellar RPC (simulateTransaction): it is refused with STELLAR_BACKEND=horizon.
func loadContract(getenv Getenv, c *Config) []error {
	var errs []error
	vc := Contract{
		Contract:   strings.ToUpper(strings.TrimSpace(getenv("VAULT_CONTRACT"))),
		DepositFn:  or(getenv("VAULT_CONTRACT_DEPOSIT_FN"), "deposit"),
		WithdrawFn: or(getenv("VAULT_CONTRACT_WITHDRAW_FN"), "withdraw"),
		Decimals:   7,
	}
	if vc.Contract == "" {
		return nil
	}
	if !strkey.IsValidContractAddress(vc.Contract) {
		errs = append(errs, errors.New("VAULT_CONTRACT must be a C... contract address"))
	}
	if c.Backend != "rpc" {
		errs = append(errs, errors.New("VAULT_CONTRACT needs STELLAR_BACKEND=rpc (simulation is an RPC method)"))
	}
	for name, fn := range map[string]string{"VAULT_CONTRACT_DEPOSIT_FN": vc.DepositFn, "VAULT_CONTRACT_WITHDRAW_FN": vc.WithdrawFn} {
		if !symbolRE.MatchString(fn) {
			errs = append(errs, fmt.Errorf("%s must be 1 to 32 of a-z A-Z 0-9 _, not %q", name, fn))
		}
	}
	if v := getenv("VAULT_CONTRACT_DECIMALS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 || n > 18 {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACT_DECIMALS must be a whole number from 1 to 18, not %q", v))
		}
		vc.Decimals = n
	}
	c.VaultContract = vc
	return errs
}
