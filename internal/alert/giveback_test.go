package alert_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// TestNothingMovedGivesTheChargeBackOnceHoweverOftenDelivered: a rejected transfer and a released
// claim give their charges back to the daily counters; a settled one and an in-doubt one keep
// theirs; the same batch delivered again (at-least-once) gives nothing back twice.
func TestNothingMovedGivesTheChargeBackOnceHoweverOftenDelivered(t *testing.T) {
	ctx := context.Background()
	store := transfertest.NewStore()
	limits := transfer.Limits{"USDC": {WalletDaily: 100 * transfer.StroopsPerUnit, AssetDaily: 1000 * transfer.StroopsPerUnit}}
	claim := func(key string) transfer.Record {
		rec := inFlight(key)
		rec.Envelope, rec.ClaimID = nil, "claim-"+key
		rec.Charges = limits.Charges(rec.Request, t0)
		if _, won, err := store.Claim(ctx, rec, t0); err != nil || !won {
			t.Fatalf("claim %s: %v %v", key, won, err)
		}
		return rec
	}
	rejected, released, landed, doubtful := claim("rejected"), claim("released"), claim("landed"), claim("doubtful")
	counter := rejected.Charges[1].Counter
	if n, _ := store.Counter(ctx, counter); n != 4*125_000_000 {
		t.Fatalf("asset counter after four claims = %d", n)
	}
	next := func(rec transfer.Record, status transfer.Status) *transfer.Record {
		rec.Status, rec.Version, rec.LeaseOwner = status, rec.Version+1, ""
		return &rec
	}
	batch := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "1", "MODIFY", &rejected, next(rejected, transfer.StatusRejected)),
		streamRecord(t, "2", "REMOVE", &released, nil),
		streamRecord(t, "3", "MODIFY", &landed, next(landed, transfer.StatusReplayable)),
		streamRecord(t, "4", "MODIFY", &doubtful, next(doubtful, transfer.StatusInDoubt)),
	}}
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Counters: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	for range 2 {
		resp, err := h.Handle(ctx, batch)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("Handle: %+v, %v", resp, err)
		}
		if n, _ := store.Counter(ctx, counter); n != 2*125_000_000 {
			t.Fatalf("asset counter = %d, want the landed and the in-doubt transfers' charges only", n)
		}
		if n, _ := store.Counter(ctx, rejected.Charges[0].Counter); n != 2*125_000_000 {
			t.Fatalf("wallet counter = %d, want two charges left", n)
		}
	}
}

// TestAFailedGiveBackRetriesTheBatchFromItsRecord: the charge stays (the counter errs on the side
// of refusing) and the stream delivers the record again.
func TestAFailedGiveBackRetriesTheBatchFromItsRecord(t *testing.T) {
	store := transfertest.NewStore()
	store.Fail(func(op string) error {
		if op == "giveback" {
			return errors.New("throttled")
		}
		return nil
	})
	rec := inFlight("fails")
	rec.Envelope, rec.ClaimID = nil, "claim-fails"
	rec.Charges = transfer.Limits{"USDC": {AssetDaily: 1000 * transfer.StroopsPerUnit}}.Charges(rec.Request, t0)
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Counters: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "7", "MODIFY", &inDoubtFree, &inDoubtFree),
		streamRecord(t, "8", "REMOVE", &rec, nil),
	}})
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "8" {
		t.Fatalf("Handle: %+v, %v; want the batch retried from record 8", resp, err)
	}
}

var inDoubtFree = inFlight("unrelated")
