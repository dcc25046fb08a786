package alert_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/stellar/go-stellar-sdk/keypair"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

const bus = "transfers-events"

// bridge is a fake EventBridge: it records every PutEvents request and refuses the entries
// refuse names (by idempotency key) the given number of times.
type bridge struct {
	mu       sync.Mutex
	requests [][]ebtypes.PutEventsRequestEntry
	ok       []ebtypes.PutEventsRequestEntry // accepted, in order
	refuse   map[string]int                  // idempotency key -> how many more times its entry is refused
	err      error                           // the whole request fails
}

func (b *bridge) PutEvents(_ context.Context, in *eventbridge.PutEventsInput, _ ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests = append(b.requests, slices.Clone(in.Entries))
	if len(in.Entries) > 10 {
		return nil, errors.New("ValidationException: more than 10 entries")
	}
	if b.err != nil {
		return nil, b.err
	}
	out := &eventbridge.PutEventsOutput{}
	for i, e := range in.Entries {
		var d alert.EventDetail
		_ = json.Unmarshal([]byte(aws.ToString(e.Detail)), &d)
		if b.refuse[d.IdempotencyKey] > 0 {
			b.refuse[d.IdempotencyKey]--
			out.FailedEntryCount++
			out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{ErrorCode: aws.String("InternalFailure"), ErrorMessage: aws.String("try again")})
			continue
		}
		b.ok = append(b.ok, e)
		out.Entries = append(out.Entries, ebtypes.PutEventsResultEntry{EventId: aws.String(fmt.Sprintf("id-%d-%d", len(b.requests), i))})
	}
	return out, nil
}

// sent is an accepted entry with its detail decoded.
type sent struct {
	detailType string
	detail     alert.EventDetail
	raw        string
}

func (b *bridge) accepted(t *testing.T) []sent {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []sent
	for _, e := range b.ok {
		var d alert.EventDetail
		if err := json.Unmarshal([]byte(aws.ToString(e.Detail)), &d); err != nil {
			t.Fatalf("detail %q: %v", aws.ToString(e.Detail), err)
		}
		if aws.ToString(e.Source) != alert.EventSource || aws.ToString(e.EventBusName) != bus {
			t.Errorf("entry source %q bus %q", aws.ToString(e.Source), aws.ToString(e.EventBusName))
		}
		out = append(out, sent{detailType: aws.ToString(e.DetailType), detail: d, raw: aws.ToString(e.Detail)})
	}
	return out
}

type failures struct{ n []int }

func (f *failures) EventPublishFailures(_ context.Context, n int) { f.n = append(f.n, n) }

type waits struct{ d []time.Duration }

func (w *waits) wait(_ context.Context, d time.Duration) error {
	w.d = append(w.d, d)
	return nil
}

func eventHandler(t *testing.T, b *bridge) (*alert.Handler, *failures, *waits) {
	t.Helper()
	log, _ := logtest.New(t)
	f, w := &failures{}, &waits{}
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Events: b, EventBus: bus, EventFailures: f, Wait: w.wait, Logger: log})
	return h, f, w
}

// TestSettlementEventsFromStreamRecords: which stream records become which events (README.md,
// "Settlement events"), from the images the table's stream carries.
func TestSettlementEventsFromStreamRecords(t *testing.T) {
	const key = "order-0100"
	claim := inFlight(key)
	claim.Envelope, claim.Version, claim.ClaimID = nil, 1, "claim-1"
	attached := inFlight(key)
	attached.ClaimID = "claim-1"
	landed := transfer.SettledRecord(attached, transfer.Lookup{Status: transfer.LookupSuccess, Hash: attached.Envelope.InnerHash, Ledger: 901, FeeChargedStroops: 200}, t0.Add(7*time.Second), time.Hour)
	failed := transfer.SettledRecord(attached, transfer.Lookup{Status: transfer.LookupFailed, Hash: attached.Envelope.InnerHash, Ledger: 902,
		ResultCodes: []string{"tx_failed", "op_underfunded"}, FeeChargedStroops: 100}, t0.Add(8*time.Second), time.Hour)
	doubt := transfer.InDoubtRecord(attached, transfer.CodeTimeout, t0.Add(25*time.Second))
	resolved := transfer.SettledRecord(doubt, transfer.Lookup{Status: transfer.LookupSuccess, Hash: attached.Envelope.InnerHash, Ledger: 950}, t0.Add(time.Minute), time.Hour)
	byHand := resolved
	byHand.Audit = &transfer.Audit{Action: "resolve", Operator: "alice", RequestID: "req-1", Reason: "checked on an explorer", At: t0.Add(time.Minute)}
	failedLater := transfer.SettledRecord(doubt, transfer.Lookup{Status: transfer.LookupFailed, Hash: attached.Envelope.InnerHash, Ledger: 951, ResultCodes: []string{"tx_failed"}}, t0.Add(time.Minute), time.Hour)
	audited := doubt
	audited.Version++
	audited.Audit = &transfer.Audit{Action: "discard", Operator: "alice", RequestID: "req-2", Reason: "history gone", Forced: true, At: t0.Add(2 * time.Minute)}
	removedAt := t0.Add(2*time.Minute + time.Second)
	queued := claim
	queued.Status, queued.LeaseOwner, queued.LeaseExpiresAt, queued.Async = transfer.StatusQueued, "", time.Time{}, true
	cancelled := transfer.Cancelled(queued, transfer.Canceller{Caller: "arn:aws:iam::123456789012:user/ops", RequestID: "req-3"}, t0.Add(4*time.Second), time.Hour)

	hash := attached.Envelope.InnerHash
	base := alert.EventDetail{SchemaVersion: 1, WalletAddress: wallet, IdempotencyKey: key, OperationType: "withdraw", Amount: "12.5", Asset: "USDC", CreatedAt: t0}
	with := func(f func(d *alert.EventDetail)) *alert.EventDetail {
		d := base
		f(&d)
		return &d
	}
	for _, tc := range []struct {
		name      string
		event     string
		old, next *transfer.Record
		wantType  string
		want      *alert.EventDetail // EventID aside; nil: no event
	}{
		{name: "claim", event: "INSERT", next: &claim},
		{name: "attach", event: "MODIFY", old: &claim, next: &attached},
		{name: "take-over", event: "MODIFY", old: &attached, next: func() *transfer.Record { r := attached; r.Version++; r.LeaseOwner = "other"; return &r }()},
		{name: "released in flight", event: "REMOVE", old: &attached},
		{name: "settled success", event: "MODIFY", old: &attached, next: &landed, wantType: alert.DetailTypeSettled,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.TransactionHash, d.Ledger, d.FeeChargedStroops, d.OccurredAt = "success", hash, 901, 200, t0.Add(7*time.Second)
			})},
		{name: "settled error", event: "MODIFY", old: &attached, next: &failed, wantType: alert.DetailTypeSettled,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.TransactionHash, d.Ledger, d.Code, d.FeeChargedStroops, d.OccurredAt = "error", hash, 902, "TRANSACTION_FAILED", 100, t0.Add(8*time.Second)
				d.ResultCodes = []string{"tx_failed", "op_underfunded"}
			})},
		{name: "in doubt", event: "MODIFY", old: &attached, next: &doubt, wantType: alert.DetailTypeInDoubt,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.Code, d.FailingCode, d.OccurredAt = "in_doubt", "TRANSFER_IN_DOUBT", "TRANSFER_TIMEOUT", t0.Add(25*time.Second)
			})},
		{name: "in doubt without a prior image", event: "INSERT", next: &doubt, wantType: alert.DetailTypeInDoubt,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.Code, d.FailingCode, d.OccurredAt = "in_doubt", "TRANSFER_IN_DOUBT", "TRANSFER_TIMEOUT", t0.Add(25*time.Second)
			})},
		{name: "resolved by the ledger", event: "MODIFY", old: &doubt, next: &resolved, wantType: alert.DetailTypeResolved,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.TransactionHash, d.Ledger, d.ResolvedBy, d.OccurredAt = "success", hash, 950, "ledger", t0.Add(time.Minute)
			})},
		{name: "resolved by an operator", event: "MODIFY", old: &doubt, next: &byHand, wantType: alert.DetailTypeResolved,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.TransactionHash, d.Ledger, d.ResolvedBy, d.OccurredAt = "success", hash, 950, "operator", t0.Add(time.Minute)
			})},
		{name: "resolved as failed", event: "MODIFY", old: &doubt, next: &failedLater, wantType: alert.DetailTypeResolved,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.TransactionHash, d.Ledger, d.Code, d.ResultCodes, d.ResolvedBy, d.OccurredAt = "error", hash, 951, "TRANSACTION_FAILED", []string{"tx_failed"}, "ledger", t0.Add(time.Minute)
			})},
		{name: "operator's audit before a discard", event: "MODIFY", old: &doubt, next: &audited},
		{name: "released after a forced discard", event: "REMOVE", old: &audited, wantType: alert.DetailTypeResolved,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.ResolvedBy, d.Forced, d.OccurredAt = "released", "operator", true, removedAt
			})},
		{name: "released, proven dead", event: "REMOVE", old: &doubt, wantType: alert.DetailTypeResolved,
			want: with(func(d *alert.EventDetail) { d.Status, d.ResolvedBy, d.OccurredAt = "released", "ledger", removedAt })},
		{name: "settled item rewritten", event: "MODIFY", old: &landed, next: func() *transfer.Record { r := landed; r.Version++; return &r }()},
		{name: "TTL removes a settled item", event: "REMOVE", old: &landed},
		{name: "cancelled", event: "MODIFY", old: &queued, next: &cancelled, wantType: alert.DetailTypeCancelled,
			want: with(func(d *alert.EventDetail) {
				d.Status, d.Code, d.OccurredAt = "cancelled", "TRANSFER_CANCELLED", t0.Add(4*time.Second)
			})},
		{name: "TTL removes a cancelled item", event: "REMOVE", old: &cancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bridge{}
			h, _, _ := eventHandler(t, b)
			r := streamRecord(t, "5", tc.event, tc.old, tc.next)
			r.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: removedAt}
			resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{r}})
			if err != nil || len(resp.BatchItemFailures) != 0 {
				t.Fatalf("resp %+v, err %v", resp, err)
			}
			got := b.accepted(t)
			if tc.want == nil {
				if len(got) != 0 {
					t.Fatalf("published %+v, want no event", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("published %d events, want 1", len(got))
			}
			if got[0].detailType != tc.wantType {
				t.Errorf("detail-type %q, want %q", got[0].detailType, tc.wantType)
			}
			if len(got[0].detail.EventID) != 32 {
				t.Errorf("eventId %q, want 32 hex", got[0].detail.EventID)
			}
			d := got[0].detail
			d.EventID = ""
			if !reflect.DeepEqual(d, *tc.want) {
				t.Errorf("detail\n got %+v\nwant %+v", d, *tc.want)
			}
			if e := b.requests[0][0]; e.Time == nil || !e.Time.Equal(tc.want.OccurredAt) {
				t.Errorf("entry time %v, want %v", e.Time, tc.want.OccurredAt)
			}
		})
	}
}

// TestEventIDIsStablePerTransition: a stream record delivered again gives the same eventId; the
// same transition of a later claim of the key (a new claim ID) another.
func TestEventIDIsStablePerTransition(t *testing.T) {
	attached := inFlight("order-0101")
	attached.ClaimID = "claim-a"
	landed := transfer.SettledRecord(attached, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 3}, t0, time.Hour)
	again := attached
	again.ClaimID = "claim-b"
	landedAgain := transfer.SettledRecord(again, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 3}, t0, time.Hour)
	id := func(old, next *transfer.Record) string {
		r := streamRecord(t, "1", "MODIFY", old, next)
		ev, ok := alert.SettlementEventOf(&r, old, next)
		if !ok {
			t.Fatal("no event")
		}
		return ev.Detail.EventID
	}
	if a, b := id(&attached, &landed), id(&attached, &landed); a != b {
		t.Errorf("redelivery: %s then %s", a, b)
	}
	if a, b := id(&attached, &landed), id(&again, &landedAgain); a == b {
		t.Errorf("two incarnations share the eventId %s", a)
	}
}

func settledBatch(t *testing.T, keys ...string) []events.DynamoDBEventRecord {
	var out []events.DynamoDBEventRecord
	for i, k := range keys {
		f := inFlight(k)
		s := transfer.SettledRecord(f, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: uint32(10 + i)}, t0, time.Hour)
		out = append(out, streamRecord(t, fmt.Sprintf("%03d", 100+i), "MODIFY", &f, &s))
	}
	return out
}

// TestPutEventsPartialFailures: PutEvents answers per entry; an entry it refuses is sent again
// (only it), and one still refused after three attempts ends the batch at its record, reported
// as the batch item failure, so Lambda delivers the batch again from it.
func TestPutEventsPartialFailures(t *testing.T) {
	keys := []string{"order-a0001", "order-a0002", "order-a0003", "order-a0004"}
	t.Run("refused once, then accepted", func(t *testing.T) {
		b := &bridge{refuse: map[string]int{"order-a0002": 1}}
		h, f, w := eventHandler(t, b)
		resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: settledBatch(t, keys...)})
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("failures %+v", resp.BatchItemFailures)
		}
		if len(b.requests) != 2 || len(b.requests[0]) != 4 || len(b.requests[1]) != 1 {
			t.Fatalf("requests of %v entries, want 4 then the refused one", lens(b.requests))
		}
		var got []string
		for _, s := range b.accepted(t) {
			got = append(got, s.detail.IdempotencyKey)
		}
		if want := []string{"order-a0001", "order-a0003", "order-a0004", "order-a0002"}; !slices.Equal(got, want) {
			t.Errorf("accepted %v, want %v", got, want)
		}
		if len(f.n) != 0 || !slices.Equal(w.d, []time.Duration{100 * time.Millisecond}) {
			t.Errorf("failures counted %v, waits %v", f.n, w.d)
		}
	})
	t.Run("refused every time", func(t *testing.T) {
		b := &bridge{refuse: map[string]int{"order-a0002": 99, "order-a0004": 99}}
		h, f, w := eventHandler(t, b)
		resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: settledBatch(t, keys...)})
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "101" {
			t.Fatalf("resp %+v err %v, want the failure of sequence number 101 (the first refused)", resp, err)
		}
		if !slices.Equal(lens(b.requests), []int{4, 2, 2}) {
			t.Errorf("requests of %v entries, want 4, 2, 2", lens(b.requests))
		}
		if !slices.Equal(f.n, []int{2}) || !slices.Equal(w.d, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}) {
			t.Errorf("failures counted %v, waits %v", f.n, w.d)
		}
	})
	t.Run("the request fails", func(t *testing.T) {
		b := &bridge{err: errors.New("AccessDeniedException")}
		h, f, _ := eventHandler(t, b)
		resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: settledBatch(t, keys...)})
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "100" || len(b.requests) != 3 || !slices.Equal(f.n, []int{4}) {
			t.Fatalf("failures %+v after %d requests, counted %v", resp.BatchItemFailures, len(b.requests), f.n)
		}
	})
	t.Run("more than ten events", func(t *testing.T) {
		var many []string
		for i := range 23 {
			many = append(many, fmt.Sprintf("order-b%04d", i))
		}
		b := &bridge{refuse: map[string]int{"order-b0015": 99}}
		h, _, _ := eventHandler(t, b)
		resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: settledBatch(t, many...)})
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "115" {
			t.Fatalf("failures %+v, want sequence number 115", resp.BatchItemFailures)
		}
		// Ten, then ten with the refused one (twice more alone); records after its request wait
		// for the retry.
		if !slices.Equal(lens(b.requests), []int{10, 10, 1, 1}) {
			t.Errorf("requests of %v entries", lens(b.requests))
		}
	})
}

func lens(reqs [][]ebtypes.PutEventsRequestEntry) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, len(r))
	}
	return out
}

// TestEventsWaitBehindAFailedAlert: the events before an in-doubt record's SNS publish go out
// first; when the publish fails, the batch ends at that record and no later event is sent.
func TestEventsWaitBehindAFailedAlert(t *testing.T) {
	log, _ := logtest.New(t)
	b := &bridge{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Publisher: &publisher{err: errors.New("throttled")},
		TopicARN: "arn:aws:sns:us-east-1:1:t", Events: b, EventBus: bus, Wait: (&waits{}).wait, Logger: log})
	recs := settledBatch(t, "order-c0001")
	flight, doubt := inFlight("order-c0002"), inDoubt("order-c0002")
	recs = append(recs, streamRecord(t, "200", "MODIFY", &flight, &doubt))
	recs = append(recs, settledBatch(t, "order-c0003")...)
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: recs})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "200" {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	got := b.accepted(t)
	if len(got) != 1 || got[0].detail.IdempotencyKey != "order-c0001" {
		t.Fatalf("published %+v, want only the event before the failed alert", got)
	}
}

// TestEventsCarryNoSecret: no signed envelope XDR, fingerprint, lease owner, claim ID, trace ID,
// operator's name or reason, and no secret seed (redacted even where an old item holds one).
func TestEventsCarryNoSecret(t *testing.T) {
	seed := keypair.MustRandom().Seed()
	b := &bridge{}
	h, _, _ := eventHandler(t, b)
	flight := inFlight("order-" + seed)
	flight.ClaimID, flight.TraceID = "claim-secret-id", "Root="+seed
	doubt := transfer.InDoubtRecord(flight, transfer.CodeTimeout, t0)
	doubt.Audit = &transfer.Audit{Action: "discard", Operator: "alice-" + seed, Reason: "reason " + seed, Forced: true, At: t0}
	landed := transfer.SettledRecord(flight, transfer.Lookup{Status: transfer.LookupSuccess, Ledger: 4}, t0, time.Hour)
	landed.Envelope = flight.Envelope // even if the XDR were kept on the item
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{
		streamRecord(t, "1", "MODIFY", &flight, &doubt),
		streamRecord(t, "2", "REMOVE", &doubt, nil),
		streamRecord(t, "3", "MODIFY", &flight, &landed),
	}}); err != nil {
		t.Fatal(err)
	}
	got := b.accepted(t)
	if len(got) != 3 {
		t.Fatalf("%d events, want 3", len(got))
	}
	for _, s := range got {
		for _, secret := range []string{seed, "AAAA-signed-xdr", "f1f2f3-secret-fingerprint", "owner", "claim-secret-id", "Root=", "alice", "reason"} {
			if strings.Contains(s.raw, secret) {
				t.Errorf("%s event holds %q: %s", s.detailType, secret, s.raw)
			}
		}
		if logging.ContainsSeed(s.raw) {
			t.Errorf("%s event holds a seed: %s", s.detailType, s.raw)
		}
	}
}

// TestNoBusNoEvents: without EVENT_BUS_NAME the handler publishes nothing.
func TestNoBusNoEvents(t *testing.T) {
	b := &bridge{}
	h := alert.New(alert.Config{Store: fakeIndex{}, Gauge: &gauge{}, Events: b})
	if resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: settledBatch(t, "order-d0001")}); len(resp.BatchItemFailures) != 0 || len(b.requests) != 0 {
		t.Fatalf("resp %+v, %d requests", resp, len(b.requests))
	}
}
