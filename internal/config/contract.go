package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/stellar/go-stellar-sdk/strkey"
)

// Contract is the vault-contract mode: deposits and withdrawals call the Soroban vault
// contract of the request's asset with (wallet: Address, amount: i128). A vault contract holds one
// asset, so every configured asset names its own contract.
type Contract struct {
	// Contracts pairs every asset of ASSETS with its vault contract, in ASSETS order:
	// VAULT_CONTRACTS=CODE:C...,CODE:C... (codes matched ignoring case, kept as ASSETS spells
	// them), or VAULT_CONTRACT=C... when ASSETS names one asset. Empty means the classic vault.
	Contracts []AssetContract
	// DepositFn and WithdrawFn name the contract functions (VAULT_CONTRACT_DEPOSIT_FN, default
	// deposit; VAULT_CONTRACT_WITHDRAW_FN, default withdraw).
	DepositFn, WithdrawFn string
	// Decimals is the assets' decimal places as the contracts count amounts
	// (VAULT_CONTRACT_DECIMALS, 1 to 18, default 7).
	Decimals int
}

// AssetContract is one asset's vault contract.
type AssetContract struct {
	// Code is the asset code as ASSETS spells it.
	Code string `json:"code"`
	// Contract is the vault contract's C... address, upper case.
	Contract string `json:"contract"`
}

// Enabled reports whether the vault-contract mode is on.
func (c Contract) Enabled() bool { return len(c.Contracts) > 0 }

var symbolRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,32}$`)

// contractShape is a C... contract strkey's text (SEP-23), checked before strkey decodes it
// (strkey's base32 skips line breaks).
var contractShape = regexp.MustCompile(`^C[A-Z2-7]{55}$`)

func validContract(s string) bool {
	return contractShape.MatchString(s) && strkey.IsValidContractAddress(s)
}

// loadContract reads the vault-contract settings into c.VaultContract; c.Assets is already read.
// The contract mode needs Stellar RPC (simulateTransaction): it is refused with
// STELLAR_BACKEND=horizon. One VAULT_CONTRACT for several assets is refused (it would pay every
// asset from one contract), as are an asset without a contract, a contract for an asset not in
// ASSETS, and two assets naming one contract. Errors name entries by position, never echo them.
func loadContract(getenv Getenv, c *Config) []error {
	var errs []error
	single := strings.ToUpper(strings.TrimSpace(getenv("VAULT_CONTRACT")))
	multi := strings.TrimSpace(getenv("VAULT_CONTRACTS"))
	if single == "" && multi == "" {
		return nil
	}
	vc := Contract{
		DepositFn:  or(getenv("VAULT_CONTRACT_DEPOSIT_FN"), "deposit"),
		WithdrawFn: or(getenv("VAULT_CONTRACT_WITHDRAW_FN"), "withdraw"),
		Decimals:   7,
	}
	switch {
	case single != "" && multi != "":
		errs = append(errs, errors.New("set VAULT_CONTRACTS (one contract per asset) or VAULT_CONTRACT (one asset), not both"))
	case single != "":
		if !validContract(single) {
			errs = append(errs, errors.New("VAULT_CONTRACT must be a C... contract address"))
		}
		switch len(c.Assets) {
		case 0: // ASSETS is missing or invalid: reported already
		case 1:
			vc.Contracts = []AssetContract{{Code: c.Assets[0].Code, Contract: single}}
		default:
			errs = append(errs, fmt.Errorf("VAULT_CONTRACT names one contract for %d assets; a vault contract holds one asset: "+
				"name each asset's contract with VAULT_CONTRACTS (CODE:C...,CODE:C...)", len(c.Assets)))
		}
	default:
		pairs, perrs := parseContracts(multi, c.Assets)
		errs = append(errs, perrs...)
		vc.Contracts = pairs
	}
	if c.Backend != "rpc" {
		errs = append(errs, errors.New("VAULT_CONTRACT and VAULT_CONTRACTS need STELLAR_BACKEND=rpc (simulation is an RPC method)"))
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

// parseContracts reads VAULT_CONTRACTS ("CODE:C...,CODE:C...") against assets and returns the
// pairs in ASSETS order.
func parseContracts(v string, assets []Asset) ([]AssetContract, []error) {
	var errs []error
	byCode := map[string]string{} // upper(code) -> contract
	byContract := map[string]string{}
	var named []string // codes as VAULT_CONTRACTS spells them, in order
	for i, part := range strings.Split(v, ",") {
		code, contract, ok := strings.Cut(strings.TrimSpace(part), ":")
		code, contract = strings.TrimSpace(code), strings.ToUpper(strings.TrimSpace(contract))
		if !ok || !assetCodeRE.MatchString(code) || !validContract(contract) {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACTS: entry %d is not CODE:C... (an asset code and a contract address)", i+1))
			continue
		}
		key := strings.ToUpper(code)
		if _, dup := byCode[key]; dup {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACTS: asset %s is named twice", code))
			continue
		}
		if other, dup := byContract[contract]; dup {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACTS: assets %s and %s name the same contract; a vault contract holds one asset", other, code))
			continue
		}
		byCode[key], byContract[contract] = contract, code
		named = append(named, code)
	}
	if len(errs) > 0 || len(assets) == 0 {
		return nil, errs
	}
	var out []AssetContract
	for _, a := range assets {
		contract, ok := byCode[strings.ToUpper(a.Code)]
		if !ok {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACTS: asset %s has no contract", a.Code))
			continue
		}
		out = append(out, AssetContract{Code: a.Code, Contract: contract})
	}
	for _, code := range named {
		if !slices.ContainsFunc(assets, func(a Asset) bool { return strings.EqualFold(a.Code, code) }) {
			errs = append(errs, fmt.Errorf("VAULT_CONTRACTS: asset %s is not in ASSETS", code))
		}
	}
	return out, errs
}
