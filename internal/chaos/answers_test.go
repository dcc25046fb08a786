package chaos

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// throttledClaims is a store whose claims fail with nothing written while throttled is set, as
// DynamoDB's PutItem does when the SDK's retries give up on a throttled table.
type throttledClaims struct {
	transfer.Store
	mu        sync.Mutex
	throttled bool
}

func (s *throttledClaims) Claim(ctx context.Context, rec transfer.Record, now time.Time) (transfer.Record, bool, error) {
	s.mu.Lock()
	throttled := s.throttled
	s.mu.Unlock()
	if throttled {
		return transfer.Record{}, false, errors.New("dynamodb: PutItem: ProvisionedThroughputExceededException")
	}
	return s.Store.Claim(ctx, rec, now)
}

// TestThrottledRetryOfALandedTransferIsItsReplay. Rule: a claim that fails with nothing written
// answers what the key's read-back holds. The first POST lands and its 200 is lost; the retry's
// claim is throttled: it is answered the replay it reads back, never 503 "nothing was submitted"
// (a client that trusts that and pays another way pays twice).
func TestThrottledRetryOfALandedTransferIsItsReplay(t *testing.T) {
	r := quietRig(t)
	ctx := context.Background()
	first, err := r.orch.Transfer(ctx, r.input(0))
	if err != nil {
		t.Fatal(err)
	}
	s := &throttledClaims{Store: r.store, throttled: true}
	r.orch.Store = s
	again, err := r.orch.Transfer(ctx, r.input(0))
	if err != nil || !again.Replayed || again.TransactionHash != first.TransactionHash {
		t.Fatalf("throttled retry = %+v, %v; want the replay of %s", again, err, first.TransactionHash)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}
}

// TestThrottledRetryOfAnAcceptedTransferIsAccepted. Rule: the same, async. The first
// respond-async POST is accepted (its message sent) and its 202 lost; the retry's claim is
// throttled: it is answered 202 again (the transfer runs), and the transfer runs exactly once.
func TestThrottledRetryOfAnAcceptedTransferIsAccepted(t *testing.T) {
	r, q, _ := asyncRig(t)
	ctx := context.Background()
	if res, err := r.orch.Enqueue(ctx, r.input(0)); err != nil || !res.Accepted {
		t.Fatalf("enqueue = %+v, %v", res, err)
	}
	s := &throttledClaims{Store: r.store, throttled: true}
	r.orch.Store = s
	res, err := r.orch.Enqueue(ctx, r.input(0))
	if err != nil || !res.Accepted {
		t.Fatalf("throttled retry = %+v, %v; want 202: the queued transfer runs", res, err)
	}
	s.mu.Lock()
	s.throttled = false
	s.mu.Unlock()
	for _, m := range q.take() {
		r.deliver(t, m)
	}
	if n := len(r.net.Applied()) - r.setupTxs; n != 1 {
		t.Fatalf("%d transactions applied, want 1", n)
	}
}
