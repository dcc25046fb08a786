package cfntemplate_test

import (
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TransfersPerTransaction: a list of allowed values from 1 to 100 (a Stellar transaction's
// operations), default 1, passed to SubmitterFunction as BATCH_SIZE. It is not SQS's BatchSize (the
// event source's, the Submitter mapping's column), whose name no parameter takes. Above 1 the event
// source takes k x TransfersPerTransaction messages (k transactions' worth, the BatchMessages
// mapping), k the Submitter mapping's BatchSize, passed as SUBMITTER_TRANSACTIONS_PER_INVOCATION;
// MaxConcurrency is the Submitter mapping's either way. At 1 the event source is the one-transfer
// mapping's. A batch above 10 needs the batching window, which the async test holds at 1 to 5 s.
func TestTransfersPerTransactionParameter(t *testing.T) {
	tpl := load(t)
	p := tpl.Parameters["TransfersPerTransaction"]
	if d, _ := cfntemplate.String(p["Default"]); d != "1" {
		t.Errorf("TransfersPerTransaction's Default = %v, want 1", p["Default"])
	}
	if _, ok := p["MaxValue"]; ok {
		t.Error("TransfersPerTransaction has a MaxValue: its AllowedValues are the BatchMessages mapping's rows")
	}
	allowed := perTransactionValues(t, tpl)
	if allowed[0] != 1 || allowed[len(allowed)-1] > transfer.MaxBatchOperations {
		t.Errorf("TransfersPerTransaction's AllowedValues = %v, want 1 first and none above %d", allowed, transfer.MaxBatchOperations)
	}
	if _, ok := tpl.Parameters["BatchSize"]; ok {
		t.Error("a parameter BatchSize: the name is SQS's event source's (messages per invocation)")
	}
	fn := tpl.Resources["SubmitterFunction"].Properties
	if !reflect.DeepEqual(get(t, fn, "Environment", "Variables", "BATCH_SIZE"), map[string]any{"Ref": "TransfersPerTransaction"}) {
		t.Errorf("SubmitterFunction's BATCH_SIZE = %v", get(t, fn, "Environment", "Variables", "BATCH_SIZE"))
	}
	if !reflect.DeepEqual(tpl.Conditions["Batched"], map[string]any{"Fn::Not": []any{map[string]any{"Fn::Equals": []any{map[string]any{"Ref": "TransfersPerTransaction"}, 1}}}}) {
		t.Errorf("Batched = %v", tpl.Conditions["Batched"])
	}
	ev := get(t, fn, "Events", "Transfers", "Properties")
	inMap := func(col string) any {
		return map[string]any{"Fn::FindInMap": []any{"Submitter", map[string]any{"Ref": "ChannelCount"}, col}}
	}
	batched := map[string]any{"Fn::FindInMap": []any{"BatchMessages", map[string]any{"Ref": "TransfersPerTransaction"}, inMap("BatchSize")}}
	if want := map[string]any{"Fn::If": []any{"Batched", batched, inMap("BatchSize")}}; !reflect.DeepEqual(get(t, ev, "BatchSize"), want) {
		t.Errorf("event BatchSize = %v, want %v", get(t, ev, "BatchSize"), want)
	}
	if want := inMap("MaxConcurrency"); !reflect.DeepEqual(get(t, ev, "ScalingConfig", "MaximumConcurrency"), want) {
		t.Errorf("event MaximumConcurrency = %v, want %v", get(t, ev, "ScalingConfig", "MaximumConcurrency"), want)
	}
	if got := get(t, fn, "Environment", "Variables", "SUBMITTER_TRANSACTIONS_PER_INVOCATION"); !reflect.DeepEqual(got, inMap("BatchSize")) {
		t.Errorf("SubmitterFunction's SUBMITTER_TRANSACTIONS_PER_INVOCATION = %v, want %v", got, inMap("BatchSize"))
	}
}

// perTransactionValues is TransfersPerTransaction's AllowedValues, ascending.
func perTransactionValues(t *testing.T, tpl *cfntemplate.Template) []int {
	t.Helper()
	list, _ := tpl.Parameters["TransfersPerTransaction"]["AllowedValues"].([]any)
	var out []int
	for _, v := range list {
		s, _ := cfntemplate.String(v)
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("TransfersPerTransaction allows %v, not an integer", v)
		}
		out = append(out, n)
	}
	if len(out) == 0 || !slices.IsSorted(out) {
		t.Fatalf("TransfersPerTransaction's AllowedValues = %v, want a non-empty ascending list", out)
	}
	return out
}

// sqsRecordBytes bounds what one SQS record of TransferQueue weighs in the submitter's event: its
// body ({storeKey, claimId}: a store key of at most MaxKeyLengthBound and a wallet, under 1.5 KiB)
// and the record's envelope (message ID, a receipt handle of a few hundred characters,
// attributes, MD5, ARN, region), generously 2 KiB in all.
const sqsRecordBytes = 2 << 10

// Every value of the BatchMessages mapping is k x TransfersPerTransaction, for every allowed
// TransfersPerTransaction (its row) and every k the Submitter mapping's BatchSize takes (its
// column), so an invocation receives k transactions' worth; and within the event source's limits
// (Lambda developer guide, "Lambda parameters for Amazon SQS event source mappings": BatchSize at
// most 10,000 for a standard queue; an event at most 6 MB, the payload limit of a synchronous
// invocation). A row or column missing would fail the stack's deployment, which cfn-lint does
// not check.
func TestBatchMessagesIsTransactionsTimesTransfers(t *testing.T) {
	tpl := load(t)
	rows := tpl.Mappings["BatchMessages"]
	if rows == nil {
		t.Fatal("template.yaml has no BatchMessages mapping")
	}
	ks := map[int]bool{}
	for count, row := range tpl.Mappings["Submitter"] {
		k, err := strconv.Atoi(str(t, row, "BatchSize"))
		if err != nil || k < 1 {
			t.Fatalf("Submitter[%s] BatchSize = %v", count, row["BatchSize"])
		}
		ks[k] = true
	}
	allowed := perTransactionValues(t, tpl)
	if len(rows) != len(allowed) {
		t.Errorf("BatchMessages has %d rows, TransfersPerTransaction allows %d values", len(rows), len(allowed))
	}
	for _, perTx := range allowed {
		row, ok := rows[strconv.Itoa(perTx)]
		if !ok {
			t.Errorf("BatchMessages has no row for TransfersPerTransaction %d", perTx)
			continue
		}
		if len(row) != len(ks) {
			t.Errorf("BatchMessages[%d] has %d columns, the Submitter mapping's BatchSize takes %d values", perTx, len(row), len(ks))
		}
		for k := range ks {
			v, ok := row[strconv.Itoa(k)]
			s, _ := cfntemplate.String(v)
			n, err := strconv.Atoi(s)
			switch {
			case !ok:
				t.Errorf("BatchMessages[%d] has no column for k = %d", perTx, k)
			case err != nil || n != k*perTx:
				t.Errorf("BatchMessages[%d][%d] = %v, want %d", perTx, k, v, k*perTx)
			case n > 10_000 || n*sqsRecordBytes > 6_000_000:
				t.Errorf("BatchMessages[%d][%d] = %d: past SQS's 10,000 messages or Lambda's 6 MB event", perTx, k, n)
			}
		}
	}
}

// TestReconcileUpdatesOnlyABatchsTTL: the reconcile function's one UpdateItem is BatchExpiry, a
// decided batch's TTL (dynamo.Store.ExpireBatch, after an operator's resolve or discard): the
// batch items' pk and expiresAt alone, never a transfer item.
func TestReconcileUpdatesOnlyABatchsTTL(t *testing.T) {
	tpl := load(t)
	want := map[string]any{
		"ForAllValues:StringLike":   map[string]any{"dynamodb:LeadingKeys": []any{transfer.BatchPrefix + "*"}},
		"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": []any{dynamo.AttrPK, dynamo.TTLAttribute}},
	}
	found := false
	for _, st := range statements(t, tpl, "ReconcileFunctionRole") {
		if !slices.Contains(st.actions, "dynamodb:UpdateItem") {
			continue
		}
		found = found || st.sid == "BatchExpiry"
		if st.sid != "BatchExpiry" || len(st.actions) != 1 || !reflect.DeepEqual(st.condition, want) {
			t.Errorf("ReconcileFunctionRole statement %s: UpdateItem beside %v under %v; want it alone in BatchExpiry under %v", st.sid, st.actions, st.condition, want)
		}
	}
	if !found {
		t.Error("ReconcileFunctionRole has no BatchExpiry: the batch items an operator settles would keep no TTL")
	}
}
