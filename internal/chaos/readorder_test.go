package chaos

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/clients/rpcclient"
	protocol "github.com/stellar/go-stellar-sdk/protocols/rpc"

	"github.com/stellar-transfer/orchestrator/internal/stellarsim"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestReadOrderDoesNotProveDeath (issue 12): stellar-rpc's getTransaction reads the transaction
// before the ledger range (get_transaction.go), so while it catches up a NOT_FOUND can carry a
// latestLedger, closed after the envelope's maxTime, that includes the ledger holding the
// envelope. With the vault as the only source (no fee bump, one lookup) the old proof (the
// NOT_FOUND answer's own latest ledger) takes that for death and releases a key whose envelope
// landed: the retry pays again. The proof now judges only a ledger read before the search, which
// the search then covers, and finds the envelope.
func TestReadOrderDoesNotProveDeath(t *testing.T) {
	r := quietRig(t) // vault only: one hash, one lookup
	r.orch.Hooks = func(_ context.Context, step transfer.Step, _ transfer.Record) error {
		if step == transfer.StepSent {
			return errCrash // the invocation dies right after its send
		}
		return nil
	}
	if _, err := r.call(0); !errors.Is(err, errCrash) {
		t.Fatalf("err = %v", err)
	}
	r.orch.Hooks = nil
	// The envelope lands in the next ledger; ledgers close far past its maxTime; the lease expires.
	for range 24 {
		r.clock.Advance(ledgerInterval)
	}
	if len(r.net.Applied()) != 1 {
		t.Fatalf("the envelope should have landed: applied %+v, envelopes %+v", r.net.Applied(), r.net.Envelopes())
	}
	rec, err := r.store.Get(context.Background(), r.storeKey(0))
	if err != nil || rec.Envelope == nil {
		t.Fatalf("item = %+v, %v", rec, err)
	}
	env := *rec.Envelope
	readOrder := stellarsim.Fault{Kind: stellarsim.FaultReadOrder, Ledgers: 60, Count: 1} // RPC catching up

	// The old proof: getTransaction alone, judged by its own answer's latest ledger.
	r.arm(t, readOrder)
	c := rpcclient.NewClient(r.net.RPCURL(), nil)
	defer c.Close()
	resp, err := c.GetTransaction(context.Background(), protocol.GetTransactionRequest{Hash: env.InnerHash})
	if err != nil {
		t.Fatal(err)
	}
	old := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: resp.LatestLedger,
		LatestLedgerCloseTime: time.Unix(resp.LatestLedgerCloseTime, 0), OldestLedger: resp.OldestLedger}
	if resp.Status != protocol.TransactionStatusNotFound || !transfer.ProvenDead(env, old) {
		t.Fatalf("the read-order fault should make the old proof release a landed envelope: %+v", resp)
	}

	// The proof as it is: the sweep's Settle, with the same fault armed again.
	r.arm(t, readOrder)
	st, err := r.orch.Settle(context.Background(), rec)
	if err != nil || st.Resolution != transfer.ResolvedLanded {
		t.Fatalf("Settle = %s (%+v), %v; want the landed envelope found", st.Resolution, st.Lookup, err)
	}
	out, err := r.call(0)
	if err != nil || !out.Replayed {
		t.Fatalf("retry = %+v, %v", out, err)
	}
	r.assertOnce(t, 0, out)
}
