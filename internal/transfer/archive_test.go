package transfer_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestViewAnswersFromTheLastingRecordOnlyOnceTheItemIsGone: the live item answers while the store
// holds it, even when an archive of an older incarnation exists; the archive answers once it is
// gone, marked outside the replay window, until its retention passes; the same key after the
// window is a new transfer the archive does not refuse; an archive never answers for another
// wallet whose store key collides.
func TestViewAnswersFromTheLastingRecordOnlyOnceTheItemIsGone(t *testing.T) {
	h := newArchivingHarness(t)
	ctx := context.Background()
	key := transfer.StoreKey(wallet, "order-archive-1")

	first, _, a := h.transferArchived(t, "order-archive-1")

	// Past the window, the TTL deletes the item: the archive answers.
	h.clock.Advance(25 * time.Hour)
	h.store.Remove(key)
	v, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-archive-1")
	if err != nil || v.Status != "success" || v.TransactionHash != first.TransactionHash || !v.OutsideReplayWindow {
		t.Fatalf("view from the archive = %+v, %v", v, err)
	}

	// The same key again: a new transfer (the archive holds no key), which GET then shows.
	second, err := h.orch.Transfer(ctx, input("order-archive-1", "1"))
	if err != nil || second.Replayed || second.TransactionHash == first.TransactionHash {
		t.Fatalf("the key after its window = %+v, %v; want a new transfer", second, err)
	}
	v, err = h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-archive-1")
	if err != nil || v.TransactionHash != second.TransactionHash || v.OutsideReplayWindow {
		t.Fatalf("view of the new transfer = %+v, %v (the older archive must not answer)", v, err)
	}

	// Its item gone too, without an archive yet (the stream lags): the older archive answers, as
	// what it is, a record outside the window.
	h.store.Remove(key)
	v, err = h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-archive-1")
	if err != nil || v.TransactionHash != first.TransactionHash || !v.OutsideReplayWindow {
		t.Fatalf("view with only the older archive = %+v, %v", v, err)
	}

	// Past the retention: not found, whether or not the store deleted it yet.
	h.clock.Advance(31 * 24 * time.Hour)
	if _, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-archive-1"); problemCode(err) != transfer.CodeNotFound {
		t.Fatalf("view past the retention: %v, want not found", err)
	}

	// An archive whose request names another wallet never answers for this one.
	other := a
	other.RetainUntil = 0
	other.Record.ClaimID = "claim-other"
	other.Record.StoreKey = transfer.StoreKey(wallet, "order-archive-2")
	other.Record.Request.WalletAddress = strings.Replace(wallet, wallet[1:5], "AAAA", 1)
	if err := h.store.PutArchive(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := h.orch.View(ctx, transfer.Wallet{Address: wallet}, "order-archive-2"); problemCode(err) != transfer.CodeNotFound {
		t.Fatalf("another wallet's archive: %v, want not found", err)
	}
}

// TestArchiveOfSettlesOnlySettledStates: which changes call for an archive.
func TestArchiveOfSettlesOnlySettledStates(t *testing.T) {
	at := time.Unix(1_800_000_000, 0).UTC()
	base := transfer.Record{StoreKey: transfer.StoreKey(wallet, "order-archive-3"), ClaimID: "c", Fingerprint: "fp",
		LeaseOwner: "o", LeaseExpiresAt: at, UpdatedAt: at, CreatedAt: at, Version: 2,
		Envelope: &transfer.Envelope{XDR: "AAAA", InnerHash: "ab", Channel: "GC"}}
	with := func(s transfer.Status) *transfer.Record { r := base; r.Status = s; return &r }
	for _, c := range []struct {
		name      string
		old, next *transfer.Record
		want      transfer.Status
	}{
		{"insert in flight", nil, with(transfer.StatusInFlight), ""},
		{"settled", with(transfer.StatusInFlight), with(transfer.StatusReplayable), transfer.StatusReplayable},
		{"rejected", with(transfer.StatusInFlight), with(transfer.StatusRejected), transfer.StatusRejected},
		{"cancelled", with(transfer.StatusQueued), with(transfer.StatusCancelled), transfer.StatusCancelled},
		{"resolved", with(transfer.StatusInDoubt), with(transfer.StatusReplayable), transfer.StatusReplayable},
		{"in doubt", with(transfer.StatusInFlight), with(transfer.StatusInDoubt), ""},
		{"requeued", with(transfer.StatusInDoubt), with(transfer.StatusQueued), ""},
		{"released", with(transfer.StatusInDoubt), nil, transfer.StatusReleased},
		{"a claim released", with(transfer.StatusInFlight), nil, ""},
		{"the TTL: its last chance, conditional on the version", with(transfer.StatusReplayable), nil, transfer.StatusReplayable},
	} {
		a, ok := transfer.ArchiveOf(c.old, c.next, at.Add(time.Hour), 24*time.Hour)
		if ok != (c.want != "") || ok && a.Record.Status != c.want {
			t.Errorf("%s: archive %v %q, want %q", c.name, ok, a.Record.Status, c.want)
			continue
		}
		if !ok {
			continue
		}
		if r := a.Record; r.Fingerprint != "" || r.LeaseOwner != "" || !r.LeaseExpiresAt.IsZero() || r.Envelope.XDR != "" ||
			r.Envelope.Channel != "" || r.Envelope.InnerHash != "ab" || base.Envelope.XDR != "AAAA" {
			t.Errorf("%s: archived form %+v %+v", c.name, r, r.Envelope)
		}
		if a.RetainUntil == 0 {
			t.Errorf("%s: no retention", c.name)
		}
	}
	if a, _ := transfer.ArchiveOf(nil, with(transfer.StatusReplayable), at, 0); a.RetainUntil != 0 {
		t.Errorf("retention 0 kept until %d, want for ever", a.RetainUntil)
	}
}

// newArchivingHarness is the harness whose orchestrator answers from the lasting records of its
// store once an item is gone (Orchestrator.Archives).
func newArchivingHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.orch.Archives = h.store
	return h
}

// transferArchived runs a transfer of 1 under clientKey and writes the lasting record of its
// settled item, retained 30 days, as the stream would (here and in advrecord_test.go); it
// returns the outcome, the settled item and its record.
func (h *harness) transferArchived(t *testing.T, clientKey string) (transfer.Outcome, transfer.Record, transfer.Archive) {
	t.Helper()
	out, err := h.orch.Transfer(context.Background(), input(clientKey, "1"))
	if err != nil {
		t.Fatal(err)
	}
	settled := h.item(t, clientKey)
	a, ok := transfer.ArchiveOf(nil, &settled, h.clock.Now(), 30*24*time.Hour)
	if !ok {
		t.Fatal("a settled item calls for no archive")
	}
	if err := h.store.PutArchive(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return out, settled, a
}
