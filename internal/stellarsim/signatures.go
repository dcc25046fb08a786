package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// Thresholds indexes, as in core's AccountEntry.thresholds (xdr ThresholdIndexes).
const (
	thMaster = 0
	thLow    = 1
	thMed    = 2
	thHigh   = 3
)

// maxSigners is how many signers an account may have (core MAX_SIGNERS; SetOptionsOpFrame::doApply
// answers SET_OPTIONS_TOO_MANY_SIGNERS past it).
const maxSigners = 20

// accountSigner is one ed25519 signer added to an account by SetOptions.
type accountSigner struct {
	key    string // G... public key
	weight uint32 // 1..255
}

// accountAuth is an account's thresholds and added signers. It is never changed in place
// (SetOptions builds a new one), so a view's shallow copy of an account shares it safely.
type accountAuth struct {
	thresholds [4]uint8 // master weight, low, medium, high
	signers    []accountSigner
}

// defaultAuth is a new account's: the master key alone at weight 1, all thresholds 0 (core's
// CreateAccountOpFrame: thresholds {1, 0, 0, 0}, no signers).
var defaultAuth = &accountAuth{thresholds: [4]uint8{1, 0, 0, 0}}

// authOf is a's thresholds and signers; defaultAuth when SetOptions never changed them.
func authOf(a *account) *accountAuth {
	if a == nil || a.auth == nil {
		return defaultAuth
	}
	return a.auth
}

// thresholdLevel is the threshold an operation needs of its source account's signatures
// (stellar-core src/transactions/OperationFrame.cpp OperationFrame::getThresholdLevel: MEDIUM by
// default; SetOptionsOpFrame::getThresholdLevel: HIGH when it sets the master weight, a
// threshold or a signer, MEDIUM otherwise; ExtendFootprintTTLOpFrame and RestoreFootprintOpFrame::
// getThresholdLevel: LOW). The other operations modelled here are MEDIUM.
func thresholdLevel(op xdr.Operation) int {
	switch op.Body.Type {
	case xdr.OperationTypeExtendFootprintTtl, xdr.OperationTypeRestoreFootprint:
		return thLow
	}
	if op.Body.Type == xdr.OperationTypeSetOptions {
		so := op.Body.SetOptionsOp
		if so.MasterWeight != nil || so.LowThreshold != nil || so.MedThreshold != nil || so.HighThreshold != nil || so.Signer != nil {
			return thHigh
		}
	}
	return thMed
}

// sigSet tracks which signatures of a list were used, to spot extras.
type sigSet struct {
	hash [32]byte
	sigs []xdr.DecoratedSignature
	used []bool
}

func newSigSet(hash [32]byte, sigs []xdr.DecoratedSignature) *sigSet {
	return &sigSet{hash: hash, sigs: sigs, used: make([]bool, len(sigs))}
}

// authorizes reports whether the signatures carry level's weight of acct's signers, as
// stellar-core does (src/transactions/TransactionFrame.cpp TransactionFrame::checkSignature: the
// account's signers plus its master key at the master weight when that is not 0;
// src/transactions/SignatureChecker.cpp SignatureChecker::checkSignature): each signature that
// verifies against a signer not yet counted adds that signer's weight and is marked used, until
// the total reaches the needed weight (the threshold at level). A needed weight of 0 still takes
// one valid signature of a signer with weight. Signatures already used by an earlier check count
// again (a key may authorize the transaction source and an operation source). acct nil is an
// account that does not exist: its master key alone, weight 1, threshold 0 (an operation whose
// source is created earlier in the transaction).
func (s *sigSet) authorizes(id string, acct *account, level int) bool {
	auth := authOf(acct)
	needed := int(auth.thresholds[level])
	type cand struct {
		kp     keypair.KP
		hint   xdr.SignatureHint
		weight int
	}
	var cands []cand
	add := func(address string, weight int) {
		kp, err := keypair.ParseAddress(address)
		if err != nil || weight == 0 {
			return
		}
		cands = append(cands, cand{kp: kp, hint: xdr.SignatureHint(kp.Hint()), weight: weight})
	}
	for _, sg := range auth.signers {
		add(sg.key, int(min(sg.weight, 255)))
	}
	add(id, int(auth.thresholds[thMaster]))
	total := 0
	for i, sig := range s.sigs {
		for j, c := range cands {
			if sig.Hint != c.hint || !verifySig(c.kp, s.hash[:], sig.Signature) {
				continue
			}
			s.used[i] = true
			total += c.weight
			if total >= needed {
				return true
			}
			cands = append(cands[:j:j], cands[j+1:]...)
			break
		}
	}
	return false
}

func (s *sigSet) allUsed() bool {
	for _, u := range s.used {
		if !u {
			return false
		}
	}
	return true
}
