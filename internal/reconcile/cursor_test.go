package reconcile_test

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/dynamo/dynamotest"
	"github.com/stellar-transfer/orchestrator/internal/logging/logtest"
	"github.com/stellar-transfer/orchestrator/internal/reconcile"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The list action's cursor is read as input: one the function did not return (another listing's,
// one whose keys DynamoDB would refuse, one without a key) is the BAD_REQUEST refusal, answered
// as a Problem and not a function error, after no DynamoDB request at all; on the read-only
// function too.

// countingFixture is newFixture's service over a store whose DynamoDB requests are counted.
func countingFixture(t *testing.T, readOnly bool) (*fixture, *dynamotest.CountingClient) {
	t.Helper()
	f := newFixture(t)
	client, _ := dynamotest.Minidyn(t)
	counter := dynamotest.NewCountingClient(client)
	f.store = dynamotest.NewStore(t, counter)
	log, logs := logtest.New(t)
	f.logs = logs
	f.svc = reconcile.New(reconcile.Config{Store: f.store, Settler: f.orch, Ledger: f.ledger, Gauge: f.gauge, Clock: f.clock,
		KeyTTL: func() time.Duration { return time.Hour }, Logger: log, ReadOnly: readOnly})
	return f, counter
}

func listCursor(partition, pk, sk string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(`{"gsi1pk":"` + partition + `","gsi1sk":"` + sk + `","pk":"` + pk + `"}`))
}

// listRefused asserts that list with cursor is refused BAD_REQUEST after no DynamoDB request.
func listRefused(t *testing.T, f *fixture, counter *dynamotest.CountingClient, name, cursor string) {
	t.Helper()
	counter.Reset()
	if _, code := do(t, f, `{"action":"list","cursor":"`+cursor+`"}`); code != reconcile.CodeBadRequest {
		t.Errorf("%s: %q, want the refusal %s", name, code, reconcile.CodeBadRequest)
	}
	if n := counter.Total(); n != 0 {
		t.Errorf("%s: %d DynamoDB requests, want 0", name, n)
	}
}

func TestListCursorFromAnotherPartitionIsBadRequest(t *testing.T) {
	for _, readOnly := range []bool{false, true} {
		f, counter := countingFixture(t, readOnly)
		pk := transfer.StoreKey(wallet, "order-0001")
		for _, partition := range []string{dynamo.ClaimsPartition, dynamo.QueuedPartition, "elsewhere"} {
			listRefused(t, f, counter, partition, listCursor(partition, pk, "2026-03-01T12:00:00.000Z#"+pk))
		}
	}
}

func TestListCursorWithA1100ByteSortKeyIsBadRequest(t *testing.T) {
	f, counter := countingFixture(t, true)
	pk := transfer.StoreKey(wallet, strings.Repeat("k", 1100-51))
	sk := "2026-03-01T12:00:00.000Z#" + pk
	if len(sk) != 1100 {
		t.Fatalf("gsi1sk is %d bytes", len(sk))
	}
	listRefused(t, f, counter, "1,100-byte gsi1sk", listCursor(dynamo.InDoubtPartition, pk, sk))
}

func TestListCursorWithAnEmptyPKIsBadRequest(t *testing.T) {
	f, counter := countingFixture(t, true)
	listRefused(t, f, counter, "empty pk", listCursor(dynamo.InDoubtPartition, "", "2026-03-01T12:00:00.000Z#"))
	pk := transfer.StoreKey(wallet, "order-0001")
	listRefused(t, f, counter, "empty gsi1sk", listCursor(dynamo.InDoubtPartition, pk, ""))
}

// A cursor the function returned still pages, with one Query per page.
func TestListCursorAsReturnedPages(t *testing.T) {
	f, counter := countingFixture(t, false)
	for _, key := range []string{"order-cur1", "order-cur2"} {
		f.put(t, key, transfer.StatusInDoubt, t0.Add(time.Hour), true)
	}
	first := mustDo(t, f, `{"action":"list","limit":1}`)
	c, _ := first["cursor"].(string)
	if c == "" {
		t.Fatalf("first page: %v", first)
	}
	counter.Reset()
	second := mustDo(t, f, `{"action":"list","limit":1,"cursor":"`+c+`"}`)
	if items := second["items"].([]any); len(items) != 1 || counter.Count("Query") != 1 {
		t.Fatalf("second page %v after %d queries", second, counter.Count("Query"))
	}
}

// get reads any transfer the configuration can have stored: a key of MaxKeyLengthBound
// characters (a store key of 999) is read, not refused as malformed; a key one longer, or a store
// key of another form, is refused before any request.
func TestGetReadsTheLongestKeyAndRefusesOthersWithoutARequest(t *testing.T) {
	f, counter := countingFixture(t, true)
	long := strings.Repeat("k", transfer.MaxKeyLengthBound)
	rec := f.put(t, long, transfer.StatusInDoubt, t0.Add(time.Hour), true)
	if got := mustDo(t, f, `{"action":"get","storeKey":"`+rec.StoreKey+`"}`)["item"].(map[string]any); got["storeKey"] != rec.StoreKey {
		t.Fatalf("get of a %d-character store key: %v", len(rec.StoreKey), got)
	}
	refused(t, f, `{"action":"get","storeKey":"`+transfer.StoreKey(wallet, "k"+long[1:len(long)-1]+"j")+`"}`, reconcile.CodeNotFound)
	counter.Reset()
	for _, key := range []string{transfer.StoreKey(wallet, long+"k"), transfer.StoreKey(wallet, "short"), transfer.StoreKey(wallet, "order 0001"),
		"transfer:ABCDEF0123456789:order-0001", "channel:GABC"} {
		refused(t, f, `{"action":"get","storeKey":"`+key+`"}`, reconcile.CodeBadRequest)
	}
	if n := counter.Total(); n != 0 {
		t.Errorf("%d DynamoDB requests for malformed store keys, want 0", n)
	}
}
