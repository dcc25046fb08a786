package stellarsim

import (
	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"
)

// sigSet tracks which signatures of a list were used, to spot extras.
type sigSet struct {
	hash [32]byte
	sigs []xdr.DecoratedSignature
	used []bool
}

func newSigSet(hash [32]byte, sigs []xdr.DecoratedSignature) *sigSet {
	return &sigSet{hash: hash, sigs: sigs, used: make([]bool, len(sigs))}
}

// signedBy reports whether address's master key signed the hash. Accounts
// here have only the master key, weight 1, thresholds 0: one signature is enough.
func (s *sigSet) signedBy(address string) bool {
	kp, err := keypair.ParseAddress(address)
	if err != nil {
		return false
	}
	hint := kp.Hint()
	for i, sig := range s.sigs {
		if s.used[i] || sig.Hint != xdr.SignatureHint(hint) {
			continue
		}
		if kp.Verify(s.hash[:], sig.Signature) == nil {
			s.used[i] = true
			return true
		}
	}
	// A key may sign once and be required several times (tx and op source).
	for i, sig := range s.sigs {
		if s.used[i] && sig.Hint == xdr.SignatureHint(hint) && kp.Verify(s.hash[:], sig.Signature) == nil {
			return true
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
