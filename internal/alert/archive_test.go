package alert_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestSettlementsAreArchivedOnce: a transition into a settled state and the removal of an
// in_doubt item each write one lasting record, with the retention from the settlement; a stale
// redelivery of an earlier version leaves the record as it is; nothing else is archived.
func TestSettlementsAreArchivedOnce(t *testing.T) {
	const retention = 30 * 24 * time.Hour
	h, st := newArchiveRig(t, retention)

	flight := claimed("order-0101", "claim-0101")
	done := settled(flight, t0.Add(10*time.Second), 24*time.Hour)
	resolved := done
	resolved.Version++
	resolved.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", Reason: "seen on chain", At: t0.Add(time.Hour)}

	lost := claimed("order-0102", "claim-0102")
	doubt := transfer.InDoubtRecord(lost, "TRANSFER_TIMEOUT", t0.Add(45*time.Second))
	releasedAt := t0.Add(2 * time.Hour)

	handleAll(t, h,
		streamRecord(t, "20", "INSERT", nil, &flight),
		streamRecord(t, "21", "MODIFY", &flight, &done),
		streamRecord(t, "22", "MODIFY", &done, &resolved),
		streamRecord(t, "23", "MODIFY", &lost, &doubt),
		removedAt(t, "24", &doubt, releasedAt),
		streamRecord(t, "21", "MODIFY", &flight, &done), // a redelivery, late
	)
	got := st.Archives(flight.StoreKey)
	if len(got) != 1 {
		t.Fatalf("%d archives of the settled key, want 1", len(got))
	}
	if a := got[0]; a.Record.Version != resolved.Version || a.Record.Audit == nil || a.Record.Audit.Operator != "alice" ||
		a.Record.Result.TransactionHash != done.Result.TransactionHash || a.Record.ExpiresAt != done.ExpiresAt ||
		a.RetainUntil != resolved.UpdatedAt.Add(retention).Unix() || a.Record.Fingerprint != "" || a.Record.Envelope.XDR != "" {
		t.Fatalf("archive %+v %+v %+v %+v (retain until %d)", a.Record, a.Record.Result, a.Record.Audit, a.Record.Envelope, a.RetainUntil)
	}
	rel := st.Archives(lost.StoreKey)
	if len(rel) != 1 || rel[0].Record.Status != transfer.StatusReleased || rel[0].RetainUntil != releasedAt.Add(retention).Unix() {
		t.Fatalf("released archives %+v", rel)
	}
	if _, ok := st.Item(flight.StoreKey); ok {
		t.Fatal("archiving wrote a transfer item")
	}
}

// TestAnArchiveFailureRetriesTheBatchFromThatRecord: a failed record write is retried with the
// batch from its record, as a failed alert is; a record no retry can archive is skipped.
func TestAnArchiveFailureRetriesTheBatchFromThatRecord(t *testing.T) {
	h, st := newArchiveRig(t, 0)
	st.Fail(func(op string) error {
		if op == "archive" {
			return errors.New("throttled")
		}
		return nil
	})
	flight := claimed("order-0103", "claim-0103")
	done := settled(flight, t0, time.Hour)
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "30", "INSERT", nil, &flight),
		streamRecord(t, "31", "MODIFY", &flight, &done),
	}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "31" {
		t.Fatalf("failures %+v, want only sequence number 31", resp.BatchItemFailures)
	}
	st.Fail(nil)
	noClaim := done
	noClaim.ClaimID = ""
	resp, _ = h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "32", "MODIFY", &flight, &noClaim),
	}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("an unarchivable record held the shard: %+v", resp.BatchItemFailures)
	}
}

// The archive tests' rig (here and in advrecord_test.go).

// newArchiveRig is the alert handler archiving into an in-memory store with retention (0: the
// records are kept for ever), and the store.
func newArchiveRig(t *testing.T, retention time.Duration) (*alert.Handler, *transfertest.Store) {
	t.Helper()
	log, _ := logtest.New(t)
	st := transfertest.NewStore()
	return alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Logger: log, Archives: st, Retention: retention}), st
}

// claimed is inFlight(key) under claim, a claim ID the archive's key can hold.
func claimed(key, claim string) transfer.Record {
	r := inFlight(key)
	r.ClaimID = claim
	return r
}

// settled is r settled successfully at at (transaction "ab", ledger 9), replayable for keep.
func settled(r transfer.Record, at time.Time, keep time.Duration) transfer.Record {
	return transfer.SettledRecord(r, transfer.Lookup{Status: transfer.LookupSuccess, Hash: "ab", Ledger: 9}, at, keep)
}

// removedAt is the stream's REMOVE of old at at (a TTL's deletion, or a release).
func removedAt(t *testing.T, seq string, old *transfer.Record, at time.Time) events.DynamoDBEventRecord {
	t.Helper()
	r := streamRecord(t, seq, "REMOVE", old, nil)
	r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: at}
	return r
}

// handleAll hands recs to h as one batch and fails the test unless every record is done.
func handleAll(t *testing.T, h *alert.Handler, recs ...events.DynamoDBEventRecord) {
	t.Helper()
	if resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: recs}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
}
