package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/vclock"
)

// TestHistoryNeverListsARecordPastItsRetention: retention is decided by the clock, never by the
// item's absence (transfer.Archive.Retained: DynamoDB's TTL deletes days late), and GET answers a
// record past its retention not found; a wallet's history must agree with GET, or it keeps
// showing (and serving, for days) a transfer the service says it no longer holds.
func TestHistoryNeverListsARecordPastItsRetention(t *testing.T) {
	f := minidynFixture(t)
	ctx := context.Background()
	base := t0

	rec := walletClaim(walletA, "retained-key-1", base)
	done := settle(attach(rec), transfer.StatusReplayable, base.Unix()+86400)
	putArchive(t, f, nil, &done, base, 48*time.Hour)
	// The live item is gone (its TTL); three days on, the record's retention (two days) has passed.
	now := base.Add(72 * time.Hour)
	o := &transfer.Orchestrator{Store: f.store, WalletHistory: f.store, Archives: f.store, Clock: vclock.New(now)}
	w := transfer.Wallet{Address: walletA}
	var nf *transfer.NotFoundError
	if _, err := o.View(ctx, w, "retained-key-1"); !errors.As(err, &nf) {
		t.Fatalf("View past retention = %v, want not found", err)
	}
	page, err := o.History(ctx, w, 10, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range page.Entries {
		if e.ClientKey == "retained-key-1" {
			t.Fatalf("history lists a record past its retention (%+v) while GET answers not found", e)
		}
	}
}
