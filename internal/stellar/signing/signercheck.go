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
)

// ThresholdLevel is one of an account's three thresholds (stellar-core ThresholdLevel; the
// indexes of AccountEntry.thresholds, xdr ThresholdIndexes: 0 is the master key's weight).
type ThresholdLevel int

// The threshold levels.
const (
	ThresholdLow    ThresholdLevel = 1
	ThresholdMedium ThresholdLevel = 2
	ThresholdHigh   ThresholdLevel = 3
)

func (l ThresholdLevel) String() string {
	switch l {
	case ThresholdLow:
		return "low"
	case ThresholdMedium:
		return "medium"
	case ThresholdHigh:
		return "high"
	}
	return fmt.Sprintf("ThresholdLevel(%d)", int(l))
}

// AccountAuth is who may sign for an account and how much it takes, as the ledger holds it: the
// account entry's thresholds and signers (stellar-core AccountEntry; Stellar RPC getLedgerEntries
// of its LedgerKey ACCOUNT, or Horizon GET /accounts/{id}, "thresholds" and "signers").
type AccountAuth struct {
	// Account is the G... account.
	Account string
	// MasterWeight is the weight of the account's own key (thresholds[0]); 0 disables it.
	MasterWeight uint8
	// Low, Medium and High are the account's thresholds.
	Low, Medium, High uint8
	// Signers are the added ed25519 signers (G...) and their weights, as stored (1 to 255 since
	// protocol 10). Other signer types (pre-authorized transactions, hash(x), signed payloads)
	// are left out: a signing key's signature never matches them.
	Signers map[string]uint32
}

// Weight is the weight a signature of key (G...) carries for the account, as stellar-core counts
// it (src/transactions/TransactionFrame.cpp TransactionFrame::checkSignature: the master key at
// the master weight when that is not 0, then the account's signers; src/transactions/
// SignatureChecker.cpp SignatureChecker::checkSignature: a signer's weight capped at 255 from
// protocol 10). 0 means the key cannot sign for the account.
func (a AccountAuth) Weight(key string) int {
	if key == a.Account {
		return int(a.MasterWeight)
	}
	return int(min(a.Signers[key], 255))
}

// Threshold is the account's threshold at level.
func (a AccountAuth) Threshold(level ThresholdLevel) int {
	switch level {
	case ThresholdLow:
		return int(a.Low)
	case ThresholdMedium:
		return int(a.Medium)
	case ThresholdHigh:
		return int(a.High)
	}
	return 0
}

// neededWeight is the weight one signature must carry to meet threshold: the threshold itself,
// and at least 1 (SignatureChecker::checkSignature counts only signatures that verify against a
// listed signer, and a signer of weight 0 is not listed: the master key at weight 0 is left out,
// and SetOptions with weight 0 removes a signer; so a threshold of 0 still takes one signer's
// signature).
func neededWeight(threshold int) int { return max(threshold, 1) }

// SigningDuty is what one signing key must be able to sign for: the account, and each threshold
// its signature alone has to reach, with the operations that need it.
type SigningDuty struct {
	// Role names the account in the service's terms: "vault" or "fee".
	Role string
	// Account is the G... account the key signs for.
	Account string
	// Key is the signing key.
	Key Signer
	// Needs are the thresholds the key's weight must reach.
	Needs []SigningNeed
}

// SigningNeed is one threshold a duty must reach and what needs it.
type SigningNeed struct {
	Level ThresholdLevel
	// For says which signatures need it, e.g. "the vault's payments".
	For string
}

// ErrCannotSign is wrapped by every *SignerError: a signing key that the network would refuse
// (txBAD_AUTH, opBAD_AUTH) for the account it signs for.
var ErrCannotSign = errors.New("stellar: a signing key cannot sign for its account")

// SignerError says why a signing key cannot sign for its account: the account does not exist, or
// the key's weight there is below a threshold it must reach. Its message names the account, the
// key's public key (G...) and, for a KMS key, the key as configured (an ARN, key ID or alias:
// identifiers, not secrets), and the weights found and needed. It unwraps to ErrCannotSign.
type SignerError struct {
	Role    string
	Account string
	// Key is the signing key's public key (G...); KeyID the KMS key as configured ("" for a seed).
	Key, KeyID string
	// Missing is true when the account does not exist on the network.
	Missing bool
	// Weight is the key's weight for the account (0: not a signer, or a disabled master key).
	Weight int
	// Level and For are the first threshold the weight does not reach; Needed the weight it takes.
	Level  ThresholdLevel
	For    string
	Needed int
	// Auth is the account's signing configuration as read.
	Auth AccountAuth
}

func (e *SignerError) Error() string {
	key := e.Key
	if e.KeyID != "" {
		key = fmt.Sprintf("%s (KMS key %s)", e.Key, e.KeyID)
	}
	if e.Missing {
		return fmt.Sprintf("stellar: the %s account %s does not exist on the network, so its signing key %s cannot sign for it",
			e.Role, e.Account, key)
	}
	var what string
	switch {
	case e.Key == e.Account && e.Weight == 0:
		what = " (the account's own key, disabled: master weight 0)"
	case e.Key == e.Account:
		what = " (the account's own key)"
	case e.Weight == 0:
		what = " (not a signer of the account)"
	}
	a := e.Auth
	return fmt.Sprintf("stellar: signing key %s cannot sign for the %s account %s: its weight there is %d%s, and %s need weight %d "+
		"(the %s threshold is %d; the account has master weight %d, thresholds low %d, medium %d, high %d, and %d other signer(s))",
		key, e.Role, e.Account, e.Weight, what, e.For, e.Needed, e.Level, a.Threshold(e.Level),
		a.MasterWeight, a.Low, a.Medium, a.High, len(a.Signers))
}

func (e *SignerError) Unwrap() error { return ErrCannotSign }

// checkDuties reads each duty's account with read and checks the key's weight against every
// threshold it needs. It returns nil, the refusals joined (each a *SignerError; errors.Is
// ErrCannotSign), or the first read error (the network could not be read: nothing is known).
func checkDuties(ctx context.Context, read func(context.Context, string) (AccountAuth, error), duties []SigningDuty) error {
	var refusals []error
	read1 := map[string]AccountAuth{}
	for _, d := range duties {
		keyID := ""
		if k, ok := d.Key.(*KMSSigner); ok {
			keyID = k.KeyID()
		}
		se := &SignerError{Role: d.Role, Account: d.Account, Key: d.Key.Address(), KeyID: keyID}
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
			if need := neededWeight(auth.Threshold(n.Level)); se.Weight < need {
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
func (c *common) signingDuties(keys Keys, restores bool) []SigningDuty {
	var out []SigningDuty
	if v := keys.VaultKey(); v != nil {
		d := SigningDuty{Role: "vault", Account: c.vaultAccount, Key: v,
			Needs: []SigningNeed{{Level: ThresholdMedium, For: "the vault's payments and contract calls"}}}
		switch {
		case c.pool == nil:
			d.Needs = append(d.Needs, SigningNeed{Level: ThresholdLow, For: "transactions from the vault (it is their source without channels)"})
		case restores:
			d.Needs = append(d.Needs, SigningNeed{Level: ThresholdLow, For: "the vault's RestoreFootprint operations"})
		}
		out = append(out, d)
	}
	if f := keys.FeeKey(); f != nil && c.pool != nil {
		out = append(out, SigningDuty{Role: "fee", Account: f.Address(), Key: f,
			Needs: []SigningNeed{{Level: ThresholdLow, For: "the channels' fee bumps"}}})
	}
	return out
}

// CheckSigners reads the vault's account and, with channels, the fee account (getLedgerEntries)
// and checks that keys can sign what this ledger has them sign (signingDuties): keys.VaultKey's
// weight for VAULT_ACCOUNT reaches its medium threshold (and, as the transaction source, its low
// one), keys.FeeKey's weight for its own account the low threshold. Errors: the refusals joined,
// each a *SignerError (errors.Is ErrCannotSign: the network would refuse the signatures, a
// configuration error); anything else is a failure to read the network.
func (l *RPCLedger) CheckSigners(ctx context.Context, keys Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, false))
}

// CheckSigners is RPCLedger.CheckSigners with the vault's low threshold too when the ledger may
// restore archived entries (a RestoreFootprint from the vault, RestoreAttempts >= 0).
func (l *ContractLedger) CheckSigners(ctx context.Context, keys Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, l.restores > 0))
}

// CheckSigners is RPCLedger.CheckSigners reading the accounts from Horizon (GET /accounts/{id}).
func (l *HorizonLedger) CheckSigners(ctx context.Context, keys Keys) error {
	return checkDuties(ctx, l.accountAuth, l.signingDuties(keys, false))
}

// accountAuth reads account's entry with getLedgerEntries (its LedgerKey ACCOUNT). A missing
// account wraps ErrAccountMissing.
func (l *RPCLedger) accountAuth(ctx context.Context, account string) (AccountAuth, error) {
	id, err := xdr.AddressToAccountId(account)
	if err != nil {
		return AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	key, err := id.LedgerKey()
	if err != nil {
		return AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	keyB64, err := xdr.MarshalBase64(key)
	if err != nil {
		return AccountAuth{}, fmt.Errorf("stellar: account %s: %w", account, err)
	}
	resp, err := call(ctx, l, func(ctx context.Context, c *rpcclient.Client) (protocol.GetLedgerEntriesResponse, error) {
		return c.GetLedgerEntries(ctx, protocol.GetLedgerEntriesRequest{Keys: []string{keyB64}})
	})
	if err != nil {
		return AccountAuth{}, fmt.Errorf("stellar: getLedgerEntries for %s: %w", account, err)
	}
	if len(resp.Entries) == 0 {
		return AccountAuth{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
	}
	var entry xdr.LedgerEntryData
	if err := xdr.SafeUnmarshalBase64(resp.Entries[0].DataXDR, &entry); err != nil {
		return AccountAuth{}, fmt.Errorf("stellar: decoding account %s: %w", account, err)
	}
	if entry.Account == nil {
		return AccountAuth{}, fmt.Errorf("stellar: getLedgerEntries for %s returned a %s entry", account, entry.Type)
	}
	a := entry.Account
	out := AccountAuth{Account: account, MasterWeight: a.Thresholds[0], Low: a.Thresholds[1], Medium: a.Thresholds[2],
		High: a.Thresholds[3], Signers: map[string]uint32{}}
	for _, s := range a.Signers {
		if s.Key.Type != xdr.SignerKeyTypeSignerKeyTypeEd25519 || s.Key.Ed25519 == nil {
			continue
		}
		g, err := strkey.Encode(strkey.VersionByteAccountID, s.Key.Ed25519[:])
		if err != nil {
			return AccountAuth{}, fmt.Errorf("stellar: decoding a signer of %s: %w", account, err)
		}
		out.Signers[g] = uint32(s.Weight)
	}
	return out, nil
}

// accountAuth reads account from Horizon (GET /accounts/{id}). Horizon lists the master key among
// "signers" with the master weight, 0 when disabled (services/horizon/internal/resourceadapter/
// account_entry.go PopulateAccountEntry). A 404 wraps ErrAccountMissing.
func (l *HorizonLedger) accountAuth(ctx context.Context, account string) (AccountAuth, error) {
	a, err := hcall(ctx, l, func(c *horizonclient.Client) (hProtocol.Account, error) {
		return c.AccountDetail(horizonclient.AccountRequest{AccountID: account})
	})
	if err != nil {
		if horizonclient.IsNotFoundError(err) {
			return AccountAuth{}, fmt.Errorf("%w: %s", ErrAccountMissing, account)
		}
		return AccountAuth{}, fmt.Errorf("stellar: GET /accounts/%s: %w", account, err)
	}
	out := AccountAuth{Account: account, Low: a.Thresholds.LowThreshold, Medium: a.Thresholds.MedThreshold,
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
