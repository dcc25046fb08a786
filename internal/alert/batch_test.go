package alert_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/stellar-transfer/orchestrator/internal/alert"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
	"github.com/stellar-transfer/orchestrator/internal/transfer/transfertest"
)

// batchedInFlight are n keys attached to one batch envelope (operation i of n), in flight, and the
// store holding that batch's item.
func batchedInFlight(t *testing.T, n int) ([]transfer.Record, *transfertest.Store) {
	t.Helper()
	st := transfertest.NewStore()
	b := transfer.BatchEnvelope{Version: 1, CreatedAt: t0, Envelope: transfer.Envelope{XDR: "AAAA-batch", InnerHash: strings.Repeat("c5", 32),
		OuterHash: strings.Repeat("d6", 32), MaxTime: t0.Unix() + 40, SubmittedLedger: 77}}
	var recs []transfer.Record
	for i := range n {
		rec := inFlight("order-batch-" + string(rune('a'+i)))
		rec.Async, rec.ClaimID = true, "claim-"+rec.ClientKey
		b.Ops = append(b.Ops, transfer.BatchOp{StoreKey: rec.StoreKey, ClaimID: rec.ClaimID})
		recs = append(recs, rec)
	}
	if err := st.PutBatch(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		recs[i] = transfer.BatchAttached(recs[i], b.Envelope, transfer.BatchRef{Index: i, Size: n}, t0)
	}
	return recs, st
}

// One page per batch in doubt: the keys of one batch's transaction going in doubt together
// publish one SNS message and one "alert" line, naming the batch's size, not one per key; each
// other key logs a line without the alert field and stays in the in-doubt list (the gauge counts
// every key). A key that is not batched pages alone, as before. The batch's first record delivered
// again (its publish failed) pages again; another key's does not.
func TestABatchInDoubtPagesOnce(t *testing.T) {
	recs, st := batchedInFlight(t, 3)
	plain := inFlight("order-plain")
	log, buf := logtest.New(t)
	pub := &publisher{}
	g := &gauge{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 4}, Gauge: g, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log, Batches: st})
	var records []events.DynamoDBEventRecord
	for i, rec := range append(recs, plain) {
		doubt := transfer.InDoubtRecord(rec, "TRANSFER_TIMEOUT", t0)
		records = append(records, streamRecord(t, string(rune('1'+i)), "MODIFY", &rec, &doubt))
	}
	resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: records})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("Handle = %+v, %v", resp, err)
	}
	if len(pub.in) != 2 {
		t.Fatalf("published %d pages, want 2 (the batch once, the plain transfer)", len(pub.in))
	}
	var batchPage alert.Details
	if err := json.Unmarshal([]byte(*pub.in[0].Message), &batchPage); err != nil {
		t.Fatal(err)
	}
	if batchPage.BatchSize != 3 || batchPage.StoreKey != recs[0].StoreKey || !strings.Contains(*pub.in[0].Subject, "Batch of 3 transfers") {
		t.Fatalf("the batch's page: %s / %+v", *pub.in[0].Subject, batchPage)
	}
	alerts, quiet := 0, 0
	for _, l := range lines(t, buf) {
		switch {
		case l["alert"] == alert.InDoubtAlert:
			alerts++
		case l["batchSize"] == float64(3) && l["alert"] == nil:
			quiet++
		}
	}
	if alerts != 2 || quiet != 2 {
		t.Fatalf("%d alert lines (want 2) and %d lines of keys the batch's page stands for (want 2):\n%s", alerts, quiet, buf.Bytes())
	}
	if len(g.values) != 1 || g.values[0] != 4 {
		t.Fatalf("gauge %v, want every key counted", g.values)
	}

	// The first key's record again (a retry after its publish failed), and a later key's.
	pub.in = nil
	if _, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: records[:2]}); err != nil {
		t.Fatal(err)
	}
	if len(pub.in) != 1 {
		t.Fatalf("a redelivery published %d pages, want 1 (the pager's record again)", len(pub.in))
	}
}

// A claim of the batch's page that fails retries the batch from that record, before anything of
// it is published.
func TestABatchPageClaimThatFailsIsRetried(t *testing.T) {
	recs, st := batchedInFlight(t, 2)
	st.Fail(func(op string) error {
		if op == "pagebatch" {
			return errors.New("throttled")
		}
		return nil
	})
	log, _ := logtest.New(t)
	pub := &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 2}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log, Batches: st})
	doubt := transfer.InDoubtRecord(recs[0], "TRANSFER_TIMEOUT", t0)
	resp, _ := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{streamRecord(t, "9", "MODIFY", &recs[0], &doubt)}})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "9" || len(pub.in) != 0 {
		t.Fatalf("failures %+v, published %d", resp.BatchItemFailures, len(pub.in))
	}
}

// A settlement event of a key paid or rejected by a batch's transaction names its operation's
// index (operationIndex), read from the item's image as the stream delivers it; a key paid alone
// has no such member.
func TestABatchedKeysSettlementEventNamesItsOperation(t *testing.T) {
	recs, _ := batchedInFlight(t, 3)
	hash := recs[0].Envelope.InnerHash
	landed := transfer.SettledRecord(recs[1], transfer.Lookup{Status: transfer.LookupSuccess, Hash: hash, Ledger: 901, FeeChargedStroops: 100}, t0.Add(7*time.Second), time.Hour)
	failed := transfer.SettledRecord(recs[2], transfer.Lookup{Status: transfer.LookupFailed, Hash: hash, Ledger: 901,
		ResultCodes: []string{"tx_failed", "op_no_trust"}, FeeChargedStroops: 100}, t0.Add(7*time.Second), time.Hour)
	plain := inFlight("order-plain")
	plainLanded := transfer.SettledRecord(plain, transfer.Lookup{Status: transfer.LookupSuccess, Hash: plain.Envelope.InnerHash, Ledger: 902}, t0.Add(7*time.Second), time.Hour)
	for _, tc := range []struct {
		name      string
		old, next transfer.Record
		want      string // the detail's operationIndex member, "" for none
	}{
		{"batched success", recs[1], landed, "1"},
		{"batched error", recs[2], failed, "2"},
		{"alone", plain, plainLanded, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := streamRecord(t, "1", "MODIFY", &tc.old, &tc.next)
			old, next := decodeImage(t, r.Change.OldImage), decodeImage(t, r.Change.NewImage)
			ev, ok := alert.SettlementEventOf(&r, &old, &next)
			if !ok || ev.DetailType != alert.DetailTypeSettled {
				t.Fatalf("event %+v, %v; want Transfer Settled", ev, ok)
			}
			body, err := json.Marshal(ev.Detail)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(body, &m); err != nil {
				t.Fatal(err)
			}
			if got := string(m["operationIndex"]); got != tc.want {
				t.Fatalf("operationIndex %q, want %q: %s", got, tc.want, body)
			}
		})
	}
}

func decodeImage(t *testing.T, img map[string]events.DynamoDBAttributeValue) transfer.Record {
	t.Helper()
	av, err := alert.ToSDK(img)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := dynamo.DecodeItem(av)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// A batched key whose batch item is gone cannot claim its batch's page: it logs that the batch
// item could not be read and that the in-doubt alarm pages, never that its batch paged, and
// publishes nothing.
func TestABatchedKeyWithoutItsBatchItemSaysSo(t *testing.T) {
	recs, _ := batchedInFlight(t, 2)
	empty := transfertest.NewStore()
	log, buf := logtest.New(t)
	pub := &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 1}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log, Batches: empty})
	doubt := transfer.InDoubtRecord(recs[1], "TRANSFER_TIMEOUT", t0)
	resp, err := h.Handle(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{streamRecord(t, "1", "MODIFY", &recs[1], &doubt)}})
	if err != nil || len(resp.BatchItemFailures) != 0 || len(pub.in) != 0 {
		t.Fatalf("Handle = %+v, %v; published %d, want nothing", resp, err, len(pub.in))
	}
	found := false
	for _, l := range lines(t, buf) {
		msg, _ := l["msg"].(string)
		if strings.Contains(msg, "paged once") {
			t.Fatalf("a line says the batch paged: %v", l)
		}
		if strings.Contains(msg, "batch item could not be read") && strings.Contains(msg, "in-doubt alarm pages") && l["batchIndex"] == float64(1) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no line saying the batch item could not be read:\n%s", buf.Bytes())
	}
}

// A batch replaced by fee before it went in doubt: its keys' items hold the hashes they were
// attached with, the batch item every outer hash; the batch's page names every fee bump that may
// land, from the batch item.
func TestABatchReplacedByFeePagesEveryOuterHash(t *testing.T) {
	recs, st := batchedInFlight(t, 2)
	ctx := context.Background()
	b, err := st.GetBatch(ctx, recs[0].Envelope.InnerHash)
	if err != nil {
		t.Fatal(err)
	}
	next := b
	next.Envelope.OuterHash, next.Envelope.XDR, next.Version = strings.Repeat("e7", 32), "AAAA-replacement", 2
	next.Envelope.OuterHashes = []string{b.Envelope.OuterHash, next.Envelope.OuterHash}
	if err := transfer.ReplaceBatchItem(ctx, st, b, next); err != nil {
		t.Fatal(err)
	}
	log, _ := logtest.New(t)
	pub := &publisher{}
	h := alert.New(alert.Config{Store: fakeIndex{n: 2}, Gauge: &gauge{}, Publisher: pub, TopicARN: "arn:aws:sns:us-east-1:1:alerts", Logger: log, Batches: st})
	doubt := transfer.InDoubtRecord(recs[0], "TRANSFER_TIMEOUT", t0)
	if _, err := h.Handle(ctx, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{streamRecord(t, "1", "MODIFY", &recs[0], &doubt)}}); err != nil {
		t.Fatal(err)
	}
	if len(pub.in) != 1 {
		t.Fatalf("published %d pages, want 1", len(pub.in))
	}
	var page alert.Details
	if err := json.Unmarshal([]byte(*pub.in[0].Message), &page); err != nil {
		t.Fatal(err)
	}
	if page.OuterHash != next.Envelope.OuterHash || len(page.OuterHashes) != 2 || page.OuterHashes[0] != b.Envelope.OuterHash || page.OuterHashes[1] != next.Envelope.OuterHash {
		t.Fatalf("the page names outer hash %s, all %v; want %s of %v", page.OuterHash, page.OuterHashes, next.Envelope.OuterHash, next.Envelope.OuterHashes)
	}
}
