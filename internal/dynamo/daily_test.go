package dynamo_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// A daily report is kept under its day, replaced by a later run of the day, read back byte for
// byte, never another day's; a day without one is ErrNotFound; an oversized one is refused
// before writing, the stored one unchanged.
func TestDailyReportIsKeptPerDay(t *testing.T) {
	client, _ := dynamotest.Minidyn(t)
	store := dynamotest.NewStore(t, client)
	ctx := context.Background()
	day := time.Date(2026, 2, 28, 17, 3, 0, 0, time.UTC) // any instant of the day names it
	at := day.Add(8 * time.Hour)
	if _, err := store.GetDailyReport(ctx, day); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("before any report: %v", err)
	}
	if err := store.PutDailyReport(ctx, day, []byte(`{"day":"2026-02-28","discrepancies":2}`), at, 2); err != nil {
		t.Fatal(err)
	}
	if err := store.PutDailyReport(ctx, day, []byte(`{"day":"2026-02-28","discrepancies":0}`), at.Add(time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetDailyReport(ctx, time.Date(2026, 2, 28, 0, 0, 0, 0, time.UTC))
	if err != nil || string(got) != `{"day":"2026-02-28","discrepancies":0}` {
		t.Fatalf("report %s, %v", got, err)
	}
	if _, err := store.GetDailyReport(ctx, day.AddDate(0, 0, 1)); !errors.Is(err, transfer.ErrNotFound) {
		t.Fatalf("the next day: %v", err)
	}
	big := []byte(`"` + strings.Repeat("x", dynamo.MaxDailyReport) + `"`)
	if err := store.PutDailyReport(ctx, day, big, at, 0); err == nil {
		t.Fatal("an oversized report was written")
	}
	if got, _ := store.GetDailyReport(ctx, day); string(got) != `{"day":"2026-02-28","discrepancies":0}` {
		t.Fatalf("after the refused write: %s", got)
	}
	if dynamo.DailyKey(day) != "daily:2026-02-28" {
		t.Fatalf("key %s", dynamo.DailyKey(day))
	}
}
