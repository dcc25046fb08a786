package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The memo is read as strictly as the body: an object of two strings, "value" present, exact
// names, each once; anything else is 400 REQUEST_INVALID naming the field, and what the network
// would not take is 422 INVALID_MEMO. A good memo reaches the domain canonical.
func TestPostTransferMemo(t *testing.T) {
	body := func(memo string) string {
		return `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":` + memo + `}`
	}
	for _, tc := range []struct {
		name, memo   string
		status       int
		code, detail string
	}{
		{"a string", `"42"`, 400, transfer.CodeRequestInvalid, "memo must be a JSON object"},
		{"an array", `[]`, 400, transfer.CodeRequestInvalid, "memo must be a JSON object"},
		{"no value", `{"type":"text"}`, 400, transfer.CodeRequestInvalid, "memo.value is required"},
		{"no type", `{"value":"1"}`, 400, transfer.CodeRequestInvalid, "memo.type is required"},
		{"a number", `{"type":"id","value":42}`, 400, transfer.CodeRequestInvalid, "memo.value must be a string"},
		{"an unknown field", `{"type":"id","value":"1","to":"x"}`, 400, transfer.CodeRequestInvalid, `unknown field "to"`},
		{"a field twice", `{"type":"id","value":"1","value":"2"}`, 400, transfer.CodeRequestInvalid, `"value" appears more than once`},
		{"a field in upper case", `{"Type":"id","value":"1"}`, 400, transfer.CodeRequestInvalid, `did you mean "type"`},
		{"a bad type", `{"type":"note","value":"x"}`, 422, transfer.CodeInvalidMemo, "memo.type must be"},
		{"text of 29 bytes", `{"type":"text","value":"` + strings.Repeat("x", 29) + `"}`, 422, transfer.CodeInvalidMemo, "at most 28 bytes"},
		{"an id not a number", `{"type":"id","value":"4x"}`, 422, transfer.CodeInvalidMemo, "unsigned 64-bit"},
		{"a hash of 31 bytes", `{"type":"hash","value":"` + strings.Repeat("ab", 31) + `"}`, 422, transfer.CodeInvalidMemo, "64 hex digits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			rec := f.do(req{method: http.MethodPost, path: "/transfers", body: body(tc.memo),
				header: map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}})
			pd := problem(t, rec, tc.status, tc.code)
			if !strings.Contains(pd.Detail, tc.detail) {
				t.Errorf("detail %q lacks %q", pd.Detail, tc.detail)
			}
			if len(f.svc.transfers) != 0 {
				t.Errorf("the service was called: %+v", f.svc.transfers)
			}
		})
	}
	for memo, want := range map[string]transfer.Memo{
		`null`:                         {},
		`{"type":"text","value":""}`:   {Type: transfer.MemoText, Value: ""},
		`{"type":"id","value":"0042"}`: {Type: transfer.MemoID, Value: "42"},
		`{"value":"AB` + strings.Repeat("cd", 31) + `","type":"return"}`: {Type: transfer.MemoReturn, Value: "ab" + strings.Repeat("cd", 31)},
	} {
		f := newFixture(t)
		rec := f.do(req{method: http.MethodPost, path: "/transfers", body: body(memo),
			header: map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}})
		if rec.Code != http.StatusOK || len(f.svc.transfers) != 1 || f.svc.transfers[0].Request.Memo != want {
			t.Errorf("%s: %d %s, the domain saw %+v; want %+v", memo, rec.Code, rec.Body, f.svc.transfers, want)
		}
	}
}
