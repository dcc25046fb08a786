package transfer_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

func sha16(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:16]
}

func TestRefusedBeforeInclusion(t *testing.T) {
	for _, tc := range []struct {
		name           string
		res            transfer.SendResult
		maybeDelivered bool
		want           bool
	}{
		{"try again later on a first send", transfer.SendResult{Status: transfer.SendTryAgainLater}, false, true},
		{"bad seq on a first send", transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ"}, false, true},
		{"too late on a first send", transfer.SendResult{Status: transfer.SendError, Code: "txTOO_LATE"}, false, true},
		{"error without a code", transfer.SendResult{Status: transfer.SendError}, false, false},
		{"try again later on a re-send", transfer.SendResult{Status: transfer.SendTryAgainLater}, true, false},
		{"bad seq on a re-send", transfer.SendResult{Status: transfer.SendError, Code: "txBAD_SEQ"}, true, false},
		{"pending", transfer.SendResult{Status: transfer.SendPending}, false, false},
		{"duplicate", transfer.SendResult{Status: transfer.SendDuplicate}, false, false},
	} {
		if got := transfer.RefusedBeforeInclusion(tc.res, tc.maybeDelivered); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProvenDead(t *testing.T) {
	maxTime := time.Unix(1_800_000_100, 0)
	env := transfer.Envelope{InnerHash: "h", MaxTime: maxTime.Unix(), SubmittedLedger: 500}
	dead := transfer.Lookup{Status: transfer.LookupNotFound, LatestLedger: 520, LatestLedgerCloseTime: maxTime.Add(time.Second), OldestLedger: 10}
	for _, tc := range []struct {
		name   string
		env    transfer.Envelope
		mutate func(*transfer.Lookup)
		want   bool
	}{
		{"closed after maxTime, not found, history covers", env, func(*transfer.Lookup) {}, true},
		{"oldest ledger is the submitted one", env, func(l *transfer.Lookup) { l.OldestLedger = 500 }, true},
		{"close time equal to maxTime is still valid", env, func(l *transfer.Lookup) { l.LatestLedgerCloseTime = maxTime }, false},
		{"close time before maxTime", env, func(l *transfer.Lookup) { l.LatestLedgerCloseTime = maxTime.Add(-time.Minute) }, false},
		{"history starts after the submission", env, func(l *transfer.Lookup) { l.OldestLedger = 501 }, false},
		{"found SUCCESS", env, func(l *transfer.Lookup) { l.Status = transfer.LookupSuccess }, false},
		{"found FAILED", env, func(l *transfer.Lookup) { l.Status = transfer.LookupFailed }, false},
		{"no close time reported", env, func(l *transfer.Lookup) { l.LatestLedgerCloseTime = time.Time{} }, false},
		{"no history bound reported", env, func(l *transfer.Lookup) { l.OldestLedger = 0 }, false},
		{"latest ledger behind the submission (another node)", env, func(l *transfer.Lookup) { l.LatestLedger = 499 }, false},
		{"no maxTime on the envelope", transfer.Envelope{SubmittedLedger: 500}, func(*transfer.Lookup) {}, false},
		{"no submitted ledger recorded", transfer.Envelope{MaxTime: maxTime.Unix()}, func(*transfer.Lookup) {}, false},
		// The source account's sequence number, read at or after the ledger, corroborates alone.
		{"source not advanced, no history", env, func(l *transfer.Lookup) { l.OldestLedger = 0; l.SourceNotAdvanced = true }, true},
		{"source not advanced, history after the submission", env, func(l *transfer.Lookup) { l.OldestLedger = 501; l.SourceNotAdvanced = true }, true},
		{"source not advanced but no ledger after maxTime", env, func(l *transfer.Lookup) { l.LatestLedgerCloseTime = maxTime; l.SourceNotAdvanced = true }, false},
		{"source not advanced but found", env, func(l *transfer.Lookup) { l.Status = transfer.LookupSuccess; l.SourceNotAdvanced = true }, false},
		{"source not advanced, no maxTime", transfer.Envelope{SubmittedLedger: 500}, func(l *transfer.Lookup) { l.SourceNotAdvanced = true }, false},
	} {
		lk := dead
		tc.mutate(&lk)
		if got := transfer.ProvenDead(tc.env, lk); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClaimMinTime(t *testing.T) {
	a, b := transfer.ClaimMinTime("3f2a"), transfer.ClaimMinTime("3f2b")
	if a.Equal(b) {
		t.Errorf("two claims share minTime %v", a)
	}
	if !a.Equal(transfer.ClaimMinTime("3f2a")) {
		t.Error("ClaimMinTime is not deterministic")
	}
	for _, m := range []time.Time{a, b, transfer.ClaimMinTime("")} {
		if m.Unix() < 1 || m.Unix() > 1<<30 {
			t.Errorf("minTime %d is not in the past (1 to 2^30 s)", m.Unix())
		}
	}
}
