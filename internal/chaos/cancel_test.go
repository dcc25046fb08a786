package chaos

import (
	"errors"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// judgeCancelled finds each way a cancelled key could have moved money or been answered falsely,
// and passes a key that ended cancelled with nothing applied.
func TestJudgeCancelledFindsWhatMoved(t *testing.T) {
	cancelled := transfer.Record{Status: transfer.StatusCancelled, Async: true, Audit: &transfer.Audit{Action: transfer.AuditCancel}}
	leased := cancelled
	leased.LeaseOwner = "submitter-1"
	taken := cancelled
	taken.Status = transfer.StatusInFlight
	applied := []stellarsim.AppliedTx{{Hash: strings.Repeat("ab", 32), Status: "SUCCESS"}}
	for _, c := range []struct {
		name string
		rec  transfer.Record
		err  error
		txs  []stellarsim.AppliedTx
		seen []string
		want string
	}{
		{name: "nothing moved", rec: cancelled},
		{name: "a transaction applied", rec: cancelled, txs: applied, want: "transactions applied"},
		{name: "a client saw success", rec: cancelled, seen: []string{applied[0].Hash}, want: "saw success"},
		{name: "a lease on it", rec: leased, want: "envelope or a lease"},
		{name: "not cancelled", rec: taken, want: "answered TRANSFER_CANCELLED"},
		{name: "gone", err: errors.New("not found"), want: "answered TRANSFER_CANCELLED"},
	} {
		got := judgeCancelled("k", c.rec, c.err, c.txs, c.seen)
		switch {
		case c.want == "" && len(got) != 0:
			t.Errorf("%s: %v, want nothing", c.name, got)
		case c.want != "" && (len(got) != 1 || !strings.Contains(got[0], c.want)):
			t.Errorf("%s: %v, want %q", c.name, got, c.want)
		}
	}
}
