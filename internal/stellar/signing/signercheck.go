package signing

import (
	"errors"
	"fmt"
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

// NeededWeight is the weight one signature must carry to meet threshold: the threshold itself,
// and at least 1 (SignatureChecker::checkSignature counts only signatures that verify against a
// listed signer, and a signer of weight 0 is not listed: the master key at weight 0 is left out,
// and SetOptions with weight 0 removes a signer; so a threshold of 0 still takes one signer's
// signature).
func NeededWeight(threshold int) int { return max(threshold, 1) }

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
