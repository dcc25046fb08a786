package transfer_test

import (
	"context"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// tightLines is a destination check whose lines have room for a number of payments: within one
// call, the payments to a wallet past its room are op_line_full, as internal/stellar's check
// counts a line's earlier payments in the call before judging the next (judgeDestination).
type tightLines struct {
	*fakeBatches
	room map[string]int // wallet -> payments its line takes
}

func (c *tightLines) CheckDestinations(ctx context.Context, reqs []transfer.Request) ([]string, error) {
	codes, err := c.fakeBatches.CheckDestinations(ctx, reqs)
	if err != nil {
		return nil, err
	}
	seen := map[string]int{}
	for i, r := range reqs {
		room, tight := c.room[r.WalletAddress]
		if seen[r.WalletAddress]++; tight && seen[r.WalletAddress] > room {
			codes[i] = "op_line_full"
		}
	}
	return codes, nil
}

// Every payment of an event to one line is judged in the same check, whatever the event's size:
// the batches of one event land in the same ledger or two, so a line with room for one payment
// fills with the first and refuses the others, and a payment the check did not count against the
// first (checked in another chunk) would fail its whole batch (a transaction's one failed
// operation fails them all). 101 keys to 26 wallets (walletN repeats every 26), the line of
// walletN(22) with room for one: its keys 22, 48, 74 and 100 are checked together, and the last
// three run alone; none is batched.
func TestAnEventsPaymentsToOneLineAreCheckedTogether(t *testing.T) {
	h, fb, msgs := batchHarness(t, 100, 101)
	h.orch.Batches = &tightLines{fakeBatches: fb, room: map[string]int{walletN(22): 1}}
	h.orch.RunQueuedBatch(context.Background(), msgs)
	batched := 0
	for _, b := range fb.built {
		for _, req := range b {
			if req.WalletAddress == walletN(22) {
				batched++
			}
		}
	}
	if batched != 1 {
		t.Errorf("%d payments to the line with room for one were batched, want 1 (the others run alone)", batched)
	}
}
