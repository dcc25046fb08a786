package alert_test

import (
	"context"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestASettledItemRemovedBeforeItsRecordIsStillArchived: the stream delivers at least once but
// not for ever (24 h retention, or an event source mapping's retry limit drops a batch), so the
// MODIFY into a settled state may never reach the handler; the item's REMOVE (its TTL) still
// carries the settled image in its old image and is the last chance to keep the record. A
// conditional write on the version makes it harmless when the record is already there.
func TestASettledItemRemovedBeforeItsRecordIsStillArchived(t *testing.T) {
	h, st := newArchiveRig(t, 30*24*time.Hour)
	done := settled(claimed("order-0901", "claim-0901"), t0.Add(10*time.Second), time.Hour)
	handleAll(t, h, removedAt(t, "90", &done, t0.Add(2*time.Hour)))
	got := st.Archives(done.StoreKey)
	if len(got) != 1 || got[0].Record.Status != transfer.StatusReplayable || got[0].Record.Result == nil || got[0].Record.Result.TransactionHash != done.Result.TransactionHash {
		t.Fatalf("archives after the TTL removed a settled item whose record was never written: %+v (result %+v); want its replayable record", got, resultOf(got))
	}
}

// TestAReleaseIsFiledUnderTheDayItHappened: the daily reconciliation reads each day's records
// once the day is over (ListArchivedDay); an in_doubt item released days after it went in doubt
// is a settlement of the day of its release (its retention already counts from then), so it
// must be listed under that day. Filed under the day it went in doubt, a day already read, no
// reconciliation ever sees it.
func TestAReleaseIsFiledUnderTheDayItHappened(t *testing.T) {
	h, st := newArchiveRig(t, 30*24*time.Hour)
	doubt := transfer.InDoubtRecord(claimed("order-0902", "claim-0902"), "TRANSFER_TIMEOUT", t0.Add(45*time.Second))
	releasedAt := t0.Add(3 * 24 * time.Hour)
	handleAll(t, h, removedAt(t, "91", &doubt, releasedAt))
	if got := st.Archives(doubt.StoreKey); len(got) != 1 || got[0].Record.Status != transfer.StatusReleased {
		t.Fatalf("archives %+v, want one released", got)
	}
	day, _, err := st.ListArchivedDay(context.Background(), releasedAt, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(day) != 1 || day[0].Record.StoreKey != doubt.StoreKey {
		early, _, _ := st.ListArchivedDay(context.Background(), doubt.UpdatedAt, 0, "")
		t.Fatalf("the release day %s lists %d records (the day it went in doubt, %s, lists %d): a release is filed under a day already reconciled",
			transfer.ArchiveDay(releasedAt), len(day), transfer.ArchiveDay(doubt.UpdatedAt), len(early))
	}
}

// resultOf is the first archive's result, for a failure's message.
func resultOf(got []transfer.Archive) *transfer.Result {
	if len(got) == 0 {
		return nil
	}
	return got[0].Record.Result
}
