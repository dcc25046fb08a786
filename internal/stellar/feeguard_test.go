package stellar

import (
	"math"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/stellar/sources"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The book of this process's envelopes: an entry counts only under the lease it was built under,
// a replacement by fee around the same inner envelope raises it (never lowers it), another
// envelope's replacement or Done leaves it alone, and its own Done drops it.
func TestFeeGuardBook(t *testing.T) {
	var g feeGuard
	lease := sources.Lease{Account: "GCHAN", Owner: "owner-1"}
	env := transfer.Envelope{Channel: "GCHAN", InnerHash: "aa", FeeStroops: 200}
	g.note(lease, env)
	if fee, ok := g.booked("GCHAN", "owner-1"); !ok || fee != 200 {
		t.Fatalf("booked %d %v, want 200", fee, ok)
	}
	if _, ok := g.booked("GCHAN", "owner-2"); ok {
		t.Fatal("an entry counts under another lease owner")
	}
	if _, ok := g.booked("GCHAN", ""); ok {
		t.Fatal("an entry counts without a lease owner")
	}
	g.noteFee("GCHAN", "bb", 5_000)
	g.noteFee("GCHAN", "aa", 100)
	if fee, _ := g.booked("GCHAN", "owner-1"); fee != 200 {
		t.Fatalf("booked %d after another envelope's and a lower replacement, want 200", fee)
	}
	g.noteFee("GCHAN", "aa", 2_000)
	if fee, _ := g.booked("GCHAN", "owner-1"); fee != 2_000 {
		t.Fatalf("booked %d after a replacement by fee, want 2000", fee)
	}
	g.forget(transfer.Envelope{Channel: "GCHAN", InnerHash: "bb"})
	if _, ok := g.booked("GCHAN", "owner-1"); !ok {
		t.Fatal("another envelope's Done dropped the entry")
	}
	g.forget(env)
	if _, ok := g.booked("GCHAN", "owner-1"); ok {
		t.Fatal("the entry outlived its envelope's Done")
	}
}

// The sums saturate instead of wrapping: a huge MAX_FEE_STROOPS times the channel count never
// turns into a small (or negative) worst case that would let a send through.
func TestFeeSumsSaturate(t *testing.T) {
	if got := mulCapped(math.MaxInt64/2, 3); got != math.MaxInt64 {
		t.Errorf("mulCapped = %d", got)
	}
	if got := mulCapped(1_000, 15); got != 15_000 {
		t.Errorf("mulCapped = %d", got)
	}
	if got := addCapped(math.MaxInt64-1, 5); got != math.MaxInt64 {
		t.Errorf("addCapped = %d", got)
	}
	if got := (accountState{balance: 100, subentries: 1, sponsoring: 2, sponsored: 1, sellingLiabilities: 7}).available(10); got != 100-40-7 {
		t.Errorf("available = %d, want 53", got)
	}
}
