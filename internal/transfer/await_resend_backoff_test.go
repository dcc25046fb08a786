package transfer_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A send that failed after its request may have been written waits the backoff before the same
// envelope goes out again, even when a look-up in between finds it still pending two ledgers
// after the last good send: the re-send a look-up calls for goes out at once only when no failed
// send is waiting for its backoff already. Here the first send is answered PENDING but dropped,
// and every re-send times out: no two sends may share an instant.
func TestAFailedSendWaitsItsBackoffEvenWhenALookUpCallsForAReSend(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var at []time.Time
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		mu.Lock()
		at = append(at, h.clock.Now())
		mu.Unlock()
		if n == 0 {
			return transfer.SendResult{Status: transfer.SendPending}, false, nil
		}
		return transfer.SendResult{}, false, errors.New("read tcp: i/o timeout after the request was written")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, _ = h.orch.Transfer(ctx, input("payout-backoff-1", "5"))
	mu.Lock()
	defer mu.Unlock()
	if len(at) < 3 {
		t.Fatalf("%d sends: the case does not arise, want at least 3", len(at))
	}
	for i := 2; i < len(at); i++ {
		if !at[i].After(at[i-1]) {
			t.Errorf("send %d at %v, the same instant as the failed send %d before it: no backoff", i, at[i], i-1)
		}
	}
}

// An envelope is re-sent only once it is still pending two ledgers after its last send, also
// when the send's answer names no latest ledger (Horizon's POST /transactions_async answers none,
// and the root read after it can fail): the count then starts at the first look-up after the
// send, never at ledger 0, which would re-send at every look-up. The first send is answered
// PENDING but dropped, so the envelope is looked up until it is proven dead.
func TestAReSendWaitsTwoLedgersWhenTheSendNamedNoLedger(t *testing.T) {
	h := newHarness(t)
	h.ledger.sendNoLatest = true
	var mu sync.Mutex
	var ledgers []uint32 // the latest ledger at each send
	h.ledger.script = func(n int, env transfer.Envelope) (transfer.SendResult, bool, error) {
		mu.Lock()
		ledgers = append(ledgers, h.ledger.latest) // the fake's lock is held by Send
		mu.Unlock()
		return transfer.SendResult{Status: transfer.SendPending}, false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, _ = h.orch.Transfer(ctx, input("payout-nolatest-1", "5"))
	mu.Lock()
	defer mu.Unlock()
	if len(ledgers) < 2 {
		t.Fatalf("%d sends: the case does not arise, want a re-send", len(ledgers))
	}
	for i := 1; i < len(ledgers); i++ {
		if ledgers[i] < ledgers[i-1]+2 {
			t.Errorf("send %d at ledger %d, the send before it at %d: re-sent before two ledgers passed (sends at %v)", i, ledgers[i], ledgers[i-1], ledgers)
		}
	}
}
