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

// TransfersPerTransaction: 1 to 100 (a Stellar transaction's operations), default 1, passed to
// SubmitterFunction as BATCH_SIZE. It is not SQS's BatchSize (the event source's, the Submitter
// mapping's column), whose name no parameter takes. Above 1 the event source takes
// TransfersPerTransaction messages (one transaction's worth) and
// runs at most one invocation per source account (the Submitter mapping's Sources: max(channels,
// 2)); at 1 the event source is the one-transfer mapping's. A batch above 10 needs the batching
// window, which the async test holds at 1 to 5 s.
func TestTransfersPerTransactionParameter(t *testing.T) {
	tpl := load(t)
	p := tpl.Parameters["TransfersPerTransaction"]
	if d, _ := cfntemplate.String(p["Default"]); d != "1" || p["MinValue"] != 1 || p["MaxValue"] != 100 {
		t.Errorf("TransfersPerTransaction = %v, want Default 1, MinValue 1, MaxValue 100", p)
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
	if want := map[string]any{"Fn::If": []any{"Batched", map[string]any{"Ref": "TransfersPerTransaction"}, inMap("BatchSize")}}; !reflect.DeepEqual(get(t, ev, "BatchSize"), want) {
		t.Errorf("event BatchSize = %v, want %v", get(t, ev, "BatchSize"), want)
	}
	if want := map[string]any{"Fn::If": []any{"Batched", inMap("Sources"), inMap("MaxConcurrency")}}; !reflect.DeepEqual(get(t, ev, "ScalingConfig", "MaximumConcurrency"), want) {
		t.Errorf("event MaximumConcurrency = %v, want %v", get(t, ev, "ScalingConfig", "MaximumConcurrency"), want)
	}
	for _, c := range tpl.Parameters["ChannelCount"]["AllowedValues"].([]any) {
		count, _ := cfntemplate.String(c)
		n, _ := strconv.Atoi(count)
		if s, _ := strconv.Atoi(str(t, tpl.Mappings["Submitter"][count], "Sources")); s != max(n, 2) {
			t.Errorf("ChannelCount %d: Sources %d, want %d", n, s, max(n, 2))
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
