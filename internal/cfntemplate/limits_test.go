package cfntemplate_test

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/dynamo"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// TestLimitsWriteOnlyTheirItems: the limits' writes, a charged claim's UpdateItem of its counters
// (the API function's DailyLimits) and a give-back's marker and counters (the alert function's
// DailyLimitGiveBacks), are allowed on the "limit:" keys only (internal/dynamo/limits.go), and the
// alert function writes nothing else but the records' items and a batch item's pagedBy.
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
	// BatchPages writes one attribute of the batches' items (a batch's one in-doubt page) and reads
	// that one and the key back, never an image or a projection of more.
	batchPages := map[string]any{
		"ForAllValues:StringLike":   map[string]any{"dynamodb:LeadingKeys": []any{transfer.BatchPrefix + "*"}},
		"ForAllValues:StringEquals": map[string]any{"dynamodb:Attributes": []any{dynamo.AttrPK, dynamo.BatchPagedAttr}},
		"StringEqualsIfExists": map[string]any{
			"dynamodb:Select":       "SPECIFIC_ATTRIBUTES",
			"dynamodb:ReturnValues": []any{"NONE", "UPDATED_OLD", "UPDATED_NEW"},
		},
	}
	for _, st := range statements(t, tpl, "AlertFunctionRole") {
		if st.sid == "BatchPages" && (!slices.Equal(st.actions, []string{"dynamodb:UpdateItem", "dynamodb:GetItem"}) || !reflect.DeepEqual(st.condition, batchPages)) {
			t.Errorf("AlertFunctionRole statement BatchPages: %v under %v; want UpdateItem and GetItem alone under %v", st.actions, st.condition, batchPages)
		}
		// LastingRecords writes the records' items only (TestLeastPrivilege holds it to them).
		if (slices.Contains(st.actions, "dynamodb:PutItem") || slices.Contains(st.actions, "dynamodb:UpdateItem")) &&
			st.sid != "DailyLimitGiveBacks" && st.sid != "LastingRecords" && st.sid != "BatchPages" {
			t.Errorf("AlertFunctionRole statement %s writes %v outside the limits', the records' and the batches' items", st.sid, st.actions)
		}
	}
}

// streamFilters parses the stream mapping's filters (its Properties) and returns whether they pass
// a record of an item from status old to next ("" for no image), charged or not. Each filter is
// valid JSON; a filter matches an event name (optional), and per image a list of statuses and,
// optionally, the charged marker of an item whose claim charged the limits.
func streamFilters(t *testing.T, mapping any) func(old, next transfer.Status, charged bool) bool {
	t.Helper()
	type image struct {
		Status  map[string][]string `json:"status"`
		Charged map[string][]bool   `json:"charged"`
	}
	type filter struct {
		EventName []string         `json:"eventName"`
		Dynamodb  map[string]image `json:"dynamodb"`
	}
	var filters []filter
	for i, f := range get(t, mapping, "FilterCriteria", "Filters").([]any) {
		var pat filter
		dec := json.NewDecoder(strings.NewReader(str(t, f, "Pattern")))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pat); err != nil || len(pat.Dynamodb) == 0 {
			t.Fatalf("filter %d: %v %v", i, pat, err)
		}
		for side, img := range pat.Dynamodb {
			if (side != "NewImage" && side != "OldImage") || len(img.Status) != 1 || len(img.Status["S"]) == 0 ||
				img.Charged != nil && !slices.Equal(img.Charged["BOOL"], []bool{true}) {
				t.Errorf("filter %d: %s %v: want a list of statuses of an image, and at most charged true", i, side, img)
			}
		}
		filters = append(filters, pat)
	}
	return func(old, next transfer.Status, charged bool) bool {
		status := map[string]transfer.Status{"OldImage": old, "NewImage": next}
		name := "MODIFY"
		switch {
		case old == "":
			name = "INSERT"
		case next == "":
			name = "REMOVE"
		}
		for _, f := range filters {
			all := f.EventName == nil || slices.Contains(f.EventName, name)
			for side, img := range f.Dynamodb {
				all = all && status[side] != "" && slices.Contains(img.Status["S"], string(status[side])) && (img.Charged == nil || charged)
			}
			if all {
				return true
			}
		}
		return false
	}
}

// TestStreamPassesEveryArchive: the stream's filters pass every change transfer.ArchiveOf writes
// a lasting record for (a settlement, a cancellation, a release from in_doubt), charged or not.
func TestStreamPassesEveryArchive(t *testing.T) {
	tpl := load(t)
	passes := streamFilters(t, get(t, tpl.Resources["AlertFunction"].Properties, "Events", "TransferChanges", "Properties"))
	statuses := []transfer.Status{"", transfer.StatusInFlight, transfer.StatusReplayable, transfer.StatusRejected, transfer.StatusInDoubt,
		transfer.StatusQueued, transfer.StatusCancelled}
	archived := 0
	for _, old := range statuses {
		for _, next := range statuses {
			var o, n *transfer.Record
			if old != "" {
				o = &transfer.Record{StoreKey: "transfer:k", ClaimID: "c", Status: old}
			}
			if next != "" {
				n = &transfer.Record{StoreKey: "transfer:k", ClaimID: "c", Status: next}
			}
			if _, ok := transfer.ArchiveOf(o, n, time.Unix(1_800_000_000, 0), 0); ok {
				archived++
				if !passes(old, next, false) {
					t.Errorf("the filters hold back the record of an uncharged %q -> %q", old, next)
				}
			}
		}
	}
	if archived == 0 {
		t.Fatal("no change archived")
	}
}

// TestStreamPassesEveryGiveBack: the stream's filters pass every change of a charged item that
// gives its charge back (transfer.GiveBackOf: a rejection, a cancellation, a release or a
// discard), and not the other changes of a charged item that no filter passed without charges.
func TestStreamPassesEveryGiveBack(t *testing.T) {
	tpl := load(t)
	passesCharged := streamFilters(t, get(t, tpl.Resources["AlertFunction"].Properties, "Events", "TransferChanges", "Properties"))
	statuses := []transfer.Status{"", transfer.StatusInFlight, transfer.StatusReplayable, transfer.StatusRejected, transfer.StatusInDoubt,
		transfer.StatusQueued, "cancelled"}
	charges := []transfer.Charge{{Counter: "limit:asset:USDC:2026-12-02", Stroops: 1, Cap: 2}}
	for _, old := range statuses {
		for _, next := range statuses {
			if old == "" && next == "" {
				continue
			}
			var o, n *transfer.Record
			if old != "" {
				o = &transfer.Record{StoreKey: "transfer:k", ClaimID: "c", Status: old, Charges: charges}
			}
			if next != "" {
				n = &transfer.Record{StoreKey: "transfer:k", ClaimID: "c", Status: next, Charges: charges}
			}
			if _, give := transfer.GiveBackOf(o, n); give != nil && !passesCharged(old, next, true) {
				t.Errorf("the filters hold back the give-back of a charged %q -> %q", old, next)
			}
		}
	}
	for _, held := range [][2]transfer.Status{{transfer.StatusInFlight, transfer.StatusInFlight}, {"", transfer.StatusInFlight}} {
		if passesCharged(held[0], held[1], true) {
			t.Errorf("the filters pass a charged %q -> %q, which the handler ignores", held[0], held[1])
		}
	}
}
