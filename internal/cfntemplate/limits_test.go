package cfntemplate_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestLimitsWriteOnlyTheirItems: the limits' writes, a charged claim's UpdateItem of its counters
// (the API function's DailyLimits) and a give-back's marker and counters (the alert function's
// DailyLimitGiveBacks), are allowed on the "limit:" keys only (internal/dynamo/limits.go), and the
// alert function writes nothing else.
func TestLimitsWriteOnlyTheirItems(t *testing.T) {
	tpl := load(t)
	limitKeys := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{transfer.CounterPrefix + "*"}}}
	for role, sid := range map[string]string{"ApiFunctionRole": "DailyLimits", "AlertFunctionRole": "DailyLimitGiveBacks"} {
		found := false
		for _, st := range statements(t, tpl, role) {
			if st.sid == sid {
				found = true
				if !reflect.DeepEqual(st.condition, limitKeys) {
					t.Errorf("%s %s condition = %v, want %v", role, sid, st.condition, limitKeys)
				}
			}
		}
		if !found {
			t.Errorf("%s has no statement %s", role, sid)
		}
	}
	for _, st := range statements(t, tpl, "AlertFunctionRole") {
		if (slices.Contains(st.actions, "dynamodb:PutItem") || slices.Contains(st.actions, "dynamodb:UpdateItem")) && st.sid != "DailyLimitGiveBacks" {
			t.Errorf("AlertFunctionRole statement %s writes %v outside the limits' items", st.sid, st.actions)
		}
	}
}
