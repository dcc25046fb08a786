package strictjson

import (
	"errors"
	"strings"
	"testing"
)

type payload struct {
	Action   string `json:"action"`
	StoreKey string `json:"storeKey,omitempty"`
	Discard  bool   `json:"discard,omitempty"`
	Force    bool   `json:"force,omitempty"`
	Limit    int    `json:"limit,omitempty"`
	//lint:ignore U1000 unexported: not a field of the document, which is what the test checks.
	ignored string
	Skipped string `json:"-"`
}

func TestDecodeReadsOneWay(t *testing.T) {
	for _, c := range []struct {
		doc   string
		kind  Kind
		field string
	}{
		{`{"action":"resolve","storeKey":"transfer:a","storeKey":"transfer:b"}`, KindDuplicateField, "storeKey"},
		{`{"ACTION":"resolve","Discard":true,"FORCE":true}`, KindUnknownField, "ACTION"},
		{`{"action":"resolve","discard":true,"discard":false}`, KindDuplicateField, "discard"},
		{`{"action":"list"} {"action":"sweep"}`, KindTrailingData, ""},
		{`{"action":"list"}garbage`, KindTrailingData, ""},
		{`{"action":"list"`, KindTruncated, ""},
		{`{"action" "list"}`, KindSyntax, ""},
		{"  \n ", KindEmpty, ""},
		{`[]`, KindNotObject, ""},
		{`null`, KindNotObject, ""},
		{`"x"`, KindNotObject, ""},
		{`{"action":1}`, KindWrongType, "action"},
		{`{"limit":"5"}`, KindWrongType, "limit"},
		{`{"discard":"true"}`, KindWrongType, "discard"},
		{`{"ignored":"x"}`, KindUnknownField, "ignored"},
		{`{"Skipped":"x"}`, KindUnknownField, "Skipped"},
		{`{"-":"x"}`, KindUnknownField, "-"},
	} {
		var p payload
		err := Decode([]byte(c.doc), &p)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c.kind || e.Field != c.field {
			t.Errorf("%s: %#v, want kind %d field %q", c.doc, err, c.kind, c.field)
			continue
		}
		if p != (payload{}) {
			t.Errorf("%s: v was changed on error: %+v", c.doc, p)
		}
	}
	var p payload
	if err := Decode([]byte(" {\"action\":\"resolve\",\"discard\":true,\"limit\":3,\"storeKey\":null}\n"), &p); err != nil ||
		p != (payload{Action: "resolve", Discard: true, Limit: 3}) {
		t.Errorf("a valid document: %+v, %v", p, err)
	}
}

func TestMessages(t *testing.T) {
	var p payload
	for doc, want := range map[string]string{
		`{"ACTION":"x"}`:            `unknown field "ACTION" (field names are case-sensitive: did you mean "action"?); the fields are action, storeKey, discard, force, limit`,
		`{"discard":1,"discard":2}`: `field "discard" appears more than once`,
		`{"discard":1}`:             `discard must be a boolean (true or false), not a JSON number`,
		`[1]`:                       `the payload must be a JSON object, not a JSON array`,
		`{}x`:                       `unexpected data after the JSON object (at byte 2)`,
		`{"a`:                       `the payload ends in the middle of a JSON value`,
		`{"` + strings.Repeat("x", MaxQuotedName+1) + `":1}`: `unknown field (a name of 65 bytes)`,
	} {
		err := Decode([]byte(doc), &p)
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(e.Message("the payload"), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
