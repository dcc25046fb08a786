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
	log, _ := logtest.New(t)
	st := transfertest.NewStore()
	const retention = 30 * 24 * time.Hour
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Logger: log, Archives: st, Retention: retention})

	flight := inFlight("order-0101")
	flight.ClaimID = "claim-0101"
	done := transfer.SettledRecord(flight, transfer.Lookup{Status: transfer.LookupSuccess, Hash: "ab", Ledger: 9}, t0.Add(10*time.Second), 24*time.Hour)
	resolved := done
	resolved.Version++
	resolved.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", Reason: "seen on chain", At: t0.Add(time.Hour)}

	lost := inFlight("order-0102")
	lost.ClaimID = "claim-0102"
	doubt := transfer.InDoubtRecord(lost, "TRANSFER_TIMEOUT", t0.Add(45*time.Second))
	removedAt := t0.Add(2 * time.Hour)

	released := streamRecord(t, "24", "REMOVE", &doubt, nil)
	released.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: removedAt}
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "20", "INSERT", nil, &flight),
		streamRecord(t, "21", "MODIFY", &flight, &done),
		streamRecord(t, "22", "MODIFY", &done, &resolved),
		streamRecord(t, "23", "MODIFY", &lost, &doubt),
		released,
		streamRecord(t, "21", "MODIFY", &flight, &done), // a redelivery, late
	}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
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
	if len(rel) != 1 || rel[0].Record.Status != transfer.StatusReleased || rel[0].RetainUntil != removedAt.Add(retention).Unix() {
		t.Fatalf("released archives %+v", rel)
	}
	if _, ok := st.Item(flight.StoreKey); ok {
		t.Fatal("archiving wrote a transfer item")
	}
}

// TestAnArchiveFailureRetriesTheBatchFromThatRecord: a failed record write is retried with the
// batch from its record, as a failed alert is; a record no retry can archive is skipped.
func TestAnArchiveFailureRetriesTheBatchFromThatRecord(t *testing.T) {
	log, _ := logtest.New(t)
	st := transfertest.NewStore()
	st.Fail(func(op string) error {
		if op == "archive" {
			return errors.New("throttled")
		}
		return nil
	})
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Logger: log, Archives: st})
	flight := inFlight("order-0103")
	flight.ClaimID = "claim-0103"
	done := transfer.SettledRecord(flight, transfer.Lookup{Status: transfer.LookupSuccess, Hash: "ab", Ledger: 9}, t0, time.Hour)
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
