package chaos

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The batched run's judge held to its rules on made-up ledger records: a key is decided by the
// transactions that paid it or failed its own operation, never by a FAILED batch in which its
// operation succeeded; an operation must pay a key, once.

// judgeRig is a rig with keys, wallets and nothing running: enough for the judge's attribution.
func judgeRig(t *testing.T, keys, wallets int) *rig {
	t.Helper()
	r := &rig{cfg: Config{Keys: keys}}
	for range wallets {
		r.wallets = append(r.wallets, keypair.MustRandom().Address())
	}
	r.wallet = r.wallets[0]
	return r
}

// payment is key k's payment as the local network records it.
func (r *rig) payment(k int) stellarsim.OpSummary {
	req := r.input(k).Request
	op := stellarsim.OpSummary{Type: "payment", Destination: r.walletOf(k), Asset: "USDC", Amount: req.Stroops}
	if req.Account != "" {
		op.DestinationMuxed, op.DestinationMuxedID = req.WalletAddress, strconv.FormatUint(req.MuxedID, 10)
	}
	return op
}

func TestAFailedBatchDecidesOnlyTheKeyWhoseOperationFailed(t *testing.T) {
	r := judgeRig(t, 4, 4)
	// Keys 0 and 3 pay G... wallets without a memo (key 1 is muxed, key 2 has a memo).
	failed := stellarsim.AppliedTx{Hash: "f1", Status: "FAILED", MemoType: "none", Ops: []stellarsim.OpSummary{r.payment(0), r.payment(3)},
		OpResults: []string{"op_not_authorized", "op_success"}}
	paid := stellarsim.AppliedTx{Hash: "s1", Status: "SUCCESS", MemoType: "none", Ops: []stellarsim.OpSummary{r.payment(3)}}
	rep := &Report{BatchTxs: map[string]int{}, BatchOps: map[string]int{}}
	perKey := map[int][]stellarsim.AppliedTx{}
	for _, tx := range []stellarsim.AppliedTx{failed, paid} {
		if bad := r.attribute(tx, perKey, rep); len(bad) > 0 {
			t.Fatalf("attribute(%s) = %v, want nothing wrong", tx.Hash, bad)
		}
	}
	if got := perKey[0]; len(got) != 1 || got[0].Hash != "f1" {
		t.Errorf("key 0 decided by %v, want the FAILED batch in which its operation failed", got)
	}
	if got := perKey[3]; len(got) != 1 || got[0].Hash != "s1" {
		t.Errorf("key 3 decided by %v, want only the transaction that paid it (its operation succeeded in the FAILED batch)", got)
	}
	rec := transfer.Record{Status: transfer.StatusRejected, Result: &transfer.Result{TransactionHash: "f1"}}
	if why := r.failedItself(0, rec, perKey[0]); why != "" {
		t.Errorf("key 0's rejection by f1: %s, want it held", why)
	}
	if why := r.failedItself(3, rec, []stellarsim.AppliedTx{failed}); why == "" {
		t.Errorf("key 3 rejected by the batch in which its own operation succeeded: held, want refused")
	}
}

func TestAnOperationPaysOneKeyOnce(t *testing.T) {
	r := judgeRig(t, 4, 4)
	stranger := r.payment(0)
	stranger.Destination = r.walletOf(3) // key 0's amount to key 3's wallet
	for _, tc := range []struct {
		name string
		ops  []stellarsim.OpSummary
		want string
	}{
		{"an operation that pays no key", []stellarsim.OpSummary{r.payment(3), stranger}, "pays no key"},
		{"a key paid twice in one transaction", []stellarsim.OpSummary{r.payment(0), r.payment(0)}, "holds its payment twice"},
	} {
		tx := stellarsim.AppliedTx{Hash: "t", Status: "SUCCESS", MemoType: "none", Ops: tc.ops}
		bad := r.attribute(tx, map[int][]stellarsim.AppliedTx{}, &Report{BatchTxs: map[string]int{}, BatchOps: map[string]int{}})
		if !strings.Contains(strings.Join(bad, "; "), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, bad, tc.want)
		}
	}
}

func TestALetGoIsARequeueReleaseOrRebuildOfASentEnvelope(t *testing.T) {
	env := func(h string) *transfer.Envelope { return &transfer.Envelope{InnerHash: h} }
	inFlight := transfer.Condition{Status: transfer.StatusInFlight, InnerHash: "a"}
	for _, tc := range []struct {
		name string
		cond transfer.Condition
		next *transfer.Record
		want bool
	}{
		{"requeued", inFlight, &transfer.Record{Status: transfer.StatusQueued}, true},
		{"released", transfer.Condition{Status: transfer.StatusInDoubt, InnerHash: "a"}, nil, true},
		{"rebuilt", inFlight, &transfer.Record{Status: transfer.StatusInFlight, Envelope: env("b")}, true},
		{"taken over with its envelope", inFlight, &transfer.Record{Status: transfer.StatusInFlight, Envelope: env("a")}, false},
		{"settled", inFlight, &transfer.Record{Status: transfer.StatusReplayable, Envelope: env("a")}, false},
		{"a queued item cancelled", transfer.Condition{Status: transfer.StatusQueued}, &transfer.Record{Status: transfer.StatusCancelled}, false},
	} {
		if got := letsGo(tc.cond, tc.next); got != tc.want {
			t.Errorf("%s: letsGo = %v, want %v", tc.name, got, tc.want)
		}
	}
}
