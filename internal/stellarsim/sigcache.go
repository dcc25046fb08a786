package stellarsim

import (
	"crypto/sha256"
	"sync"

	"github.com/stellar/go-stellar-sdk/keypair"
)

// verifySigCacheSize is VERIFY_SIG_CACHE_SIZE (src/crypto/SecretKey.cpp).
const verifySigCacheSize = 250_000

// sigCache is core's signature-verification cache (src/crypto/SecretKey.cpp,
// PubKeyUtils::verifySig with gVerifySigCache): a queued transaction's signatures are checked
// at submission, when the set is built, at apply and after every close, and a full queue keeps
// transactions for several closes, so each (key, signature, message) is verified once. Core
// evicts at random when full; this cache starts over, which only costs verifications.
var sigCache = struct {
	sync.Mutex
	m map[[32]byte]bool
}{m: map[[32]byte]bool{}}

// verifySig is kp.Verify(msg, sig) == nil, remembered.
func verifySig(kp keypair.KP, msg, sig []byte) bool {
	h := sha256.New()
	h.Write([]byte(kp.Address()))
	h.Write([]byte{0})
	h.Write(sig)
	h.Write([]byte{0})
	h.Write(msg)
	var key [32]byte
	h.Sum(key[:0])
	sigCache.Lock()
	ok, hit := sigCache.m[key]
	sigCache.Unlock()
	if hit {
		return ok
	}
	ok = kp.Verify(msg, sig) == nil
	sigCache.Lock()
	if len(sigCache.m) >= verifySigCacheSize {
		clear(sigCache.m)
	}
	sigCache.m[key] = ok
	sigCache.Unlock()
	return ok
}
