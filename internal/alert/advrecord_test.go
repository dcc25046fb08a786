package alert_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestASettledItemRemovedBeforeItsRecordIsStillArchived: the stream delivers at least once but
// not for ever (24 h retention, or an event source mapping's retry limit drops a batch), so the
// MODIFY into a settled state may never reach the handler; the item's REMOVE (its TTL) still
// carries the settled image in its old image and is the last chance to keep the record. A
// conditional write on the version makes it harmless when the record is already there.
func TestASettledItemRemovedBeforeItsRecordIsStillArchived(t *testing.T) {
	log, _ := logtest.New(t)
	st := transfertest.NewStore()
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Logger: log, Archives: st, Retention: 30 * 24 * time.Hour})

	flight := inFlight("order-0901")
	flight.ClaimID = "claim-0901"
	done := transfer.SettledRecord(flight, transfer.Lookup{Status: transfer.LookupSuccess, Hash: "ab", Ledger: 9}, t0.Add(10*time.Second), time.Hour)
	ttl := streamRecord(t, "90", "REMOVE", &done, nil)
	ttl.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: t0.Add(2 * time.Hour)}
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{ttl}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	got := st.Archives(done.StoreKey)
	if len(got) != 1 || got[0].Record.Status != transfer.StatusReplayable || got[0].Record.Result == nil || got[0].Record.Result.TransactionHash != "ab" {
		t.Fatalf("archives after the TTL removed a settled item whose record was never written: %+v; want its replayable record", got)
	}
}
