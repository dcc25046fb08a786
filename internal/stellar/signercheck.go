package stellar

import (
	"context"
	"errors"
	"fmt"

	"github.com/stellar/go-stellar-sdk/clients/horizonclient"
	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	hProtocol "github.com/stellar/go-stellar-sdk/protocols/horizon"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"
	"github.com/stellar/go-stellar-sdk/strkey"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/stellar/signing"
)

// checkDuties reads each duty's account with read and checks the key's weight against every
// threshold it needs. It returns nil, the refusals joined (each a *SignerError; errors.Is
// ErrCannotSign), or the first read error (the network could not be read: nothing is known).
func checkDuties(ctx context.Context, read func(context.Context, string) (signing.AccountAuth, error), duties []signing.SigningDuty) error {
	var refusals []error
	read1 := map[string]signing.AccountAuth{}
	for _, d := range duties {
		keyID := ""
		if k, ok := d.Key.(*signing.KMSSigner); ok {
			keyID = k.KeyID()
		}
		se := &signing.SignerError{Role: d.Role, Account: d.Account, Key: d.Key.Address(), KeyID: keyID}
		auth, ok := read1[d.Account]
		if !ok {
			var err error
			auth, err = read(ctx, d.Account)
			switch {
			case errors.Is(err, ErrAccountMissing):
				se.Missing = true
				refusals = append(refusals, se)
				continue
			case err != nil:
				return fmt.Errorf("stellar: reading the %s account %s: %w", d.Role, d.Account, err)
			}
			read1[d.Account] = auth
		}
		se.Auth, se.Weight = auth, auth.Weight(se.Key)
		for _, n := range d.Needs {
			if need := signing.NeededWeight(auth.Threshold(n.Level)); se.Weight < need {
				se.Level, se.For, se.Needed = n.Level, n.For, need
				refusals = append(refusals, se)
				break
			}
		}
	}
	return errors.Join(refusals...)
}

// signingDuties are the signatures keys make for this ledger, with the thresholds stellar-core
// checks them against:
//
//   - the vault key signs the vault's payments and contract calls, operations whose source is the
//     vault: the vault's medium threshold (src/transactions/OperationFrame.cpp
//     OperationFrame::checkSignature at OperationFrame::getThresholdLevel, MEDIUM for Payment and
//     InvokeHostFunction, which do not override it);
//   - without channels the vault is also the transaction source: its low threshold
//     (src/transactions/TransactionFrame.cpp TransactionFrame::checkAllTransactionSignatures);
//     so is a RestoreFootprint the vault is the source of (restores: RestoreFootprintOpFrame::
//     getThresholdLevel, LOW);
//   - with channels the fee key signs each fee bump's outer envelope for the fee account, its own
//     address: the fee account's low threshold (src/transactions/FeeBumpTransactionFrame.cpp
//     FeeBumpTransactionFrame::checkAllTransactionSignatures).
//
// A channel account's key is its master key at the default weights, and signs nothing else; it
// is not checked. The fee key's creation of channels (CreateAccount and sponsorship, medium) is
// the reconcile action's, not a transfer's.
func (c *common) signingDuties(keys signing.Keys, restores bool) []signing.SigningDuty {
	var out []signing.SigningDuty
	if v := keys.VaultKey(); v != nil {
		d := signing.SigningDuty{Role: "vault", Account: c.vaultAccount, Key: v,
			Needs: []signing.SigningNeed{{Level: signing.ThresholdMedium, For: "the vault's payments and contract calls"}}}
		switch {
		case c.pool == nil:
			d.Needs = append(d.Needs, signing.SigningNeed{Level: signing.ThresholdLow, For: "transactions from the vault (it is their source without channels)"})
		case restores:
			d.Needs = append(d.Needs, signing.SigningNeed{Level: signing.ThresholdLow, For: "the vault's RestoreFootprint operations"})
		}
		out = append(out, d)
	}
	if f := keys.FeeKey(); f != nil && c.pool != nil {
		out = append(out, signing.SigningDuty{Role: "fee", Account: f.Address(), Key: f,
			Needs: []signing.SigningNeed{{Level: signing.ThresholdLow, For: "the channels' fee bumps"}}})
	}
	return out
}

// CheckSigners reads the vault's account and, with channels, the fee account (getLedgerEntries)
// and checks that keys can sign what this ledger has them sign (signingDuties): keys.VaultKey's
// weight for VAULT_ACCOUNT reaches its medium threshold (and, as the transaction source, its low
// one), keys.FeeKey's weight for its own account the low threshold. Errors: the refusals joined,
// each a *SignerError (errors.Is ErrCannotSign: the network would refuse the signatures, a
// configuration error); anything else is a failure to read the network.
func (l *RPCLedger) CheckSigners(ctx context.Context, keys signing.Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, false))
}

// CheckSigners is RPCLedger.CheckSigners with the vault's low threshold too when the ledger may
// restore archived entries (a RestoreFootprint from the vault, RestoreAttempts >= 0).
func (l *ContractLedger) CheckSigners(ctx context.Context, keys signing.Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, l.restores > 0))
}

// CheckSigners is RPCLedger.CheckSigners reading the accounts from Horizon (GET /accounts/{id}).
func (l *HorizonLedger) CheckSigners(ctx context.Context, keys signing.Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, false))
}

// accountAuth reads account's entry with getLedgerEntries (its LedgerKey ACCOUNT). A missing
// account wraps ErrAccountMissing.
func (l *RPCLedger) accountAuth(ctx context.Context, account string) (signing.AccountAuth, error) {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	key, err := id.LedgerKey()
	if err != nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	keyB64, err := xdr.MarshalBase64(key)
	if err != nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: []string{keyB64}})
	})
	if err != nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: getLedgerEntries for %s: %w", account, err)
	}
	if len(resp.Entries) == 0 {
		return signing.AccountAuth{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
	}
	var entry xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &entry); err != nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: decoding account %s: %w", account, err)
	}
	if entry.Account == nil {
		return signing.AccountAuth{}, fmt.Errorf("stellar: getLedgerEntries for %s returned a %s entry", account, entry.Type)
	}
	a := entry.Account
	out := signing.AccountAuth{Account: account, MasterWeight: a.Thresholds[0], Low: a.Thresholds[1], Medium: a.Thresholds[2],
		High: a.Thresholds[3], Signers: map[string]uint32{}}
	for _, s := range a.Signers {
		if s.Key.Type != xdr.SignerKeyTypeSignerKeyTypeEd25519 || s.Key.Ed25519 == nil {
			continue
		}
		g, err := strkey.Encode(strkey.VersionByteAccountID, s.Key.Ed25519[:])
		if err != nil {
			return signing.AccountAuth{}, fmt.Errorf("stellar: decoding a signer of %s: %w", account, err)
		}
		out.Signers[g] = uint32(s.Weight)
	}
	return out, nil
}

// accountAuth reads account from Horizon (GET /accounts/{id}). Horizon lists the master key among
// "signers" with the master weight, 0 when disabled (services/horizon/internal/resourceadapter/
// account_entry.go PopulateAccountEntry). A 404 wraps ErrAccountMissing.
func (l *HorizonLedger) accountAuth(ctx context.Context, account string) (signing.AccountAuth, error) {
	a, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Account, error) {
		return c.AccountDetail(horizonclient.AccountRequest{AccountID: account})
	})
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return signing.AccountAuth{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
		}
		return signing.AccountAuth{}, fmt.Errorf("stellar: GET /accounts/%s: %w", account, err)
	}
	out := signing.AccountAuth{Account: account, Low: a.Thresholds.LowThreshold, Medium: a.Thresholds.MedThreshold,
		High: a.Thresholds.HighThreshold, Signers: map[string]uint32{}}
	for _, s := range a.Signers {
		if s.Type != "ed25519_public_key" || s.Weight < 0 {
			continue
		}
		if s.Key == account {
			out.MasterWeight = uint8(min(s.Weight, 255))
			continue
		}
		out.Signers[s.Key] = uint32(s.Weight)
	}
	return out, nil
}
