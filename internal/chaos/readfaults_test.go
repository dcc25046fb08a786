package chaos

import (
	"testing"
	"time"

	"github.com/stellar/go-stellar-sdk/keypair"
	"github.com/stellar/go-stellar-sdk/xdr"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// envelopeWith encodes a transaction envelope whose Soroban data marks the given archived entries
// (nil: no Soroban data), plain or wrapped in a fee bump.
func envelopeWith(t *testing.T, archived []xdr.Uint32, feeBump bool) string {
	t.Helper()
	src := xdr.MustMuxedAddress(keypair.MustRandom().Address())
	tx := xdr.Transaction{SourceAccount: src, Fee: 100, SeqNum: 1,
		Operations: []xdr.Operation{{Body: xdr.OperationBody{Type: xdr.OperationTypeRestoreFootprint, RestoreFootprintOp: &xdr.RestoreFootprintOp{}}}}}
	if archived != nil {
		tx.Ext = xdr.TransactionExt{V: 1, SorobanData: &xdr.SorobanTransactionData{
			Ext: xdr.SorobanTransactionDataExt{V: 1, ResourceExt: &xdr.SorobanResourcesExtV0{ArchivedSorobanEntries: archived}}}}
	}
	env := xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: &xdr.TransactionV1Envelope{Tx: tx}}
	if feeBump {
		env = xdr.TransactionEnvelope{Type: xdr.EnvelopeTypeEnvelopeTypeTxFeeBump, FeeBump: &xdr.FeeBumpTransactionEnvelope{Tx: xdr.FeeBumpTransaction{
			FeeSource: src, Fee: 200,
			InnerTx: xdr.FeeBumpTransactionInnerTx{Type: xdr.EnvelopeTypeEnvelopeTypeTx, V1: env.V1},
		}}}
	}
	s, err := xdr.MarshalBase64(env)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRestoresArchived(t *testing.T) {
	for _, c := range []struct {
		name     string
		archived []xdr.Uint32
		feeBump  bool
		want     bool
	}{
		{"marks an entry", []xdr.Uint32{0}, false, true},
		{"marks an entry, fee bump", []xdr.Uint32{0, 2}, true, true},
		{"soroban data, nothing archived", []xdr.Uint32{}, true, false},
		{"no soroban data", nil, false, false},
	} {
		if got := restoresArchived(envelopeWith(t, c.archived, c.feeBump)); got != c.want {
			t.Errorf("%s: restoresArchived = %v, want %v", c.name, got, c.want)
		}
	}
	if restoresArchived("not base64 XDR") {
		t.Error("an undecodable envelope counted as restoring")
	}
}

func TestReportRates(t *testing.T) {
	r := Report{Calls: 2500, Events: map[string]int{"in_doubt_opened": 10, "rebuilds": 75},
		InDoubtSettle: []time.Duration{time.Second, 2 * time.Second, 3 * time.Minute}}
	if got := r.InDoubtRate(); got != 4 {
		t.Errorf("in-doubt rate %v, want 4 per 1,000 calls", got)
	}
	if got := r.RebuildRate(); got != 30 {
		t.Errorf("rebuild rate %v, want 30 per 1,000 calls", got)
	}
	if m, l := r.SettleTimes(); m != 2*time.Second || l != 3*time.Minute {
		t.Errorf("settle times %v / %v, want 2s / 3m", m, l)
	}
	if m, l := (Report{}).SettleTimes(); m != 0 || l != 0 || (Report{}).InDoubtRate() != 0 {
		t.Errorf("empty report: %v / %v", m, l)
	}
}

// TestInDoubtEpisodes times an item's in_doubt episode from its first in_doubt write to its
// settlement or release, across a re-judging caller's take-back to in_flight.
func TestInDoubtEpisodes(t *testing.T) {
	clock := vclock.New(time.Unix(2_000_000_000, 0))
	s := &heldStore{clock: clock, events: &counter{}}
	step := func(d time.Duration) { clock.Advance(d) }
	s.count("a", transfer.StatusInDoubt, transfer.StatusInFlight)
	step(10 * time.Second)
	s.count("a", transfer.StatusInFlight, transfer.StatusInDoubt) // taken back to re-judge
	step(5 * time.Second)
	s.count("a", transfer.StatusInDoubt, transfer.StatusInFlight)
	step(5 * time.Second)
	s.count("a", transfer.StatusReplayable, transfer.StatusInDoubt) // landed: 20 s in all
	s.count("b", transfer.StatusInDoubt, transfer.StatusInFlight)
	step(time.Minute)
	s.count("b", "", transfer.StatusInDoubt) // released after a proof
	s.count("c", transfer.StatusInDoubt, transfer.StatusInFlight)
	got, open := s.settleTimes()
	if len(got) != 2 || got[0] != 20*time.Second || got[1] != time.Minute || open != 1 {
		t.Fatalf("episodes %v, %d open; want [20s 1m], 1 open", got, open)
	}
	if ev := s.events.snapshot(); ev["in_doubt_opened"] != 4 || ev["in_doubt_closed"] != 3 {
		t.Fatalf("events %v", ev)
	}
}
