package transfer_test

import (
	"slices"
	"testing"
	"time"
)

// A re-send goes out with the look-up that called for it (the envelope not found two ledgers
// after the send), not after the sleep to the next ledger's expected visibility: sent then, it
// would hold up the read of the ledger that may hold the envelope by a round trip. At 1 s ledgers
// (+-20%) shown 1 to 3 s after they close, most transfers re-send; every re-send is at the
// instant of a look-up of its envelope that found nothing (the doubles answer in no time).
func TestAReSendGoesOutWithTheLookUpThatCalledForIt(t *testing.T) {
	h := newHarness(t)
	l := newIrregularLedger(h.clock, 7, uniformGaps(time.Second, 0.2), time.Second, 3*time.Second)
	runIrregular(t, h, l, time.Second, 100, 0, 7)
	l.mu.Lock()
	defer l.mu.Unlock()
	resends := 0
	for hash, sends := range l.sentAt {
		for _, at := range sends[1:] {
			resends++
			if !slices.ContainsFunc(l.notFoundAt[hash], at.Equal) {
				t.Errorf("envelope %s…: re-sent at %v, at no look-up that found nothing (look-ups at %v)", hash[56:], at, l.notFoundAt[hash])
			}
		}
	}
	if resends < 20 {
		t.Fatalf("%d re-sends in 100 transfers: the case does not arise, want at least 20", resends)
	}
}
