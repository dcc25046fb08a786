package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// The Idempotency-Key header's two forms (headerKey): bare, and the IETF draft's structured-field
// String (RFC 8941 section 3.3.3, parsed per section 4.2.5).

func TestHeaderKeyForms(t *testing.T) {
	for _, tc := range []struct {
		name, value, want string
	}{
		{"bare", "order-0001", "order-0001"},
		{"quoted", `"order-0001"`, "order-0001"},
		{"quoted, every key character", `"Az09._:~-"`, "Az09._:~-"},
		{"quoted with a parameter", `"order-0001";retry=2`, "order-0001"},
		{"quoted with parameters of each kind", `"order-0001";a;b=?0;c=1.5;d=tok;e=:AAE=:;f="s"`, "order-0001"},
		{"quoted, leading and trailing SP", `  "order-0001"  `, "order-0001"},
		// An escape is parsed: the value holds the escaped character (the key rules then refuse it).
		{"escaped quote", `"order\"0001"`, `order"0001`},
		{"escaped backslash", `"order\\0001"`, `order\0001`},
		// Bare values are the key as sent, checked by parseKey alone.
		{"bare with a quote inside", `order"0001`, `order"0001`},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := headerKey(tc.value)
			if err != nil || got != tc.want {
				t.Fatalf("headerKey(%q) = %q, %v; want %q", tc.value, got, err, tc.want)
			}
		})
	}
}

func TestHeaderKeyMalformed(t *testing.T) {
	for _, tc := range []struct {
		name, value, detail string
	}{
		{"unclosed", `"order-0001`, "not a valid structured-field String"},
		{"escape of another character", `"order\-0001"`, "not a valid structured-field String"},
		{"backslash at the end", `"order-0001\`, "not a valid structured-field String"},
		{"control character", "\"order\t0001\"", "not a valid structured-field String"},
		{"non-ASCII", `"ordér-0001"`, "not a valid structured-field String"},
		{"data after the String", `"order-0001"x`, "not a valid structured-field String"},
		{"two Strings (two headers joined)", `"order-0001", "order-0002"`, "not a valid structured-field String"},
		{"a malformed parameter", `"order-0001";=1`, "not a valid structured-field String"},
		{"empty String", `""`, "empty String"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := headerKey(tc.value)
			ve, ok := err.(*transfer.ValidationError)
			if !ok || ve.Code != transfer.CodeKeyInvalid || ve.Kind != transfer.KindMalformed || ve.Field != IdempotencyKeyHeader {
				t.Fatalf("headerKey(%q) = %q, %#v; want a 400 IDEMPOTENCY_KEY_INVALID", tc.value, got, err)
			}
			if !strings.Contains(ve.Detail, tc.detail) {
				t.Fatalf("detail %q lacks %q", ve.Detail, tc.detail)
			}
			if strings.Contains(ve.Detail, "order") {
				t.Fatalf("the detail quotes the value: %q", ve.Detail)
			}
		})
	}
}

// Both forms reach the Service as one key: the unquoted value, so a client that switches form
// replays (the orchestrator scopes and stores exactly ClientKey).
func TestPostTransferQuotedKeyIsTheSameKey(t *testing.T) {
	f := newFixture(t)
	for _, key := range []string{goodKey, `"` + goodKey + `"`, `"` + goodKey + `";v=1`} {
		if rec := f.do(post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: key})); rec.Code != http.StatusOK {
			t.Fatalf("%s: status %d: %s", key, rec.Code, rec.Body)
		}
	}
	if len(f.svc.transfers) != 3 {
		t.Fatalf("Transfer calls %d", len(f.svc.transfers))
	}
	for i, in := range f.svc.transfers {
		in.TraceID = f.svc.transfers[0].TraceID // each request has its own
		if in != f.svc.transfers[0] || in.ClientKey != goodKey {
			t.Fatalf("call %d: input %+v, want the key %q as in call 0 (%+v)", i, in, goodKey, f.svc.transfers[0])
		}
	}
	// The log line names the key as stored, not as sent.
	for _, line := range f.logs.lines(t) {
		if k, _ := line["idempotencyKey"].(string); strings.Contains(k, `"`) {
			t.Fatalf("the log names the key with its quotes: %v", line)
		}
	}
}

// A quoted key is held to the same rules as a bare one, and a malformed String is refused before
// anything else is read; the Service is never called.
func TestPostTransferQuotedKeyProblems(t *testing.T) {
	for _, tc := range []struct {
		name, key, code, detail string
	}{
		{"unclosed", `"` + goodKey, transfer.CodeKeyInvalid, "not a valid structured-field String"},
		{"bad escape", `"order\x0001"`, transfer.CodeKeyInvalid, "not a valid structured-field String"},
		{"empty String", `""`, transfer.CodeKeyInvalid, "empty String"},
		{"too short", `"1234567"`, transfer.CodeKeyInvalid, "8 to 255"},
		{"too long", `"` + strings.Repeat("k", 256) + `"`, transfer.CodeKeyInvalid, "8 to 255"},
		{"escaped quote inside", `"order\"0001"`, transfer.CodeKeyInvalid, "may only contain"},
		{"space inside", `"order 0001"`, transfer.CodeKeyInvalid, "may only contain"},
		{"a seed", `"` + randomAddress(versionSeed) + `"`, transfer.CodeKeyInvalid, "secret seed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			// The body is not even JSON: the key is checked first.
			pd := problem(t, f.do(post(`{`, map[string]string{IdempotencyKeyHeader: tc.key})), 400, tc.code)
			if !strings.Contains(pd.Detail, tc.detail) || pd.Classification != transfer.Terminal {
				t.Fatalf("problem %+v, want detail with %q", pd, tc.detail)
			}
			if f.svc.calls() != 0 {
				t.Fatal("Service called")
			}
		})
	}
}

// The GET path takes the key's value; its sf-string form there is refused with a detail that
// says so.
func TestGetTransferQuotedKeyInPath(t *testing.T) {
	f := newFixture(t)
	pd := problem(t, f.do(req{"GET", "/wallets/" + wallet + "/transfers/%22" + goodKey + "%22", "", nil}), 400, transfer.CodeKeyInvalid)
	if !strings.Contains(pd.Detail, "without the quotes") || f.svc.calls() != 0 {
		t.Fatalf("problem %+v, calls %d", pd, f.svc.calls())
	}
}

// Through the Lambda adapter: the header as API Gateway delivers it (lower-cased name, the value
// as sent), quoted and bare, reaches the Service as the same key.
func TestLambdaQuotedKey(t *testing.T) {
	f := newFixture(t)
	ev := loadEvent(t, "apigw-v2-request-post-transfer.json")
	var keys []string
	for _, v := range []string{`"order-2020-04-21.0001"`, "order-2020-04-21.0001"} {
		ev.Headers = map[string]string{"content-type": "application/json", "idempotency-key": v}
		resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %+v, %v", v, resp, err)
		}
		keys = append(keys, f.svc.transfers[len(f.svc.transfers)-1].ClientKey)
	}
	if keys[0] != "order-2020-04-21.0001" || keys[1] != keys[0] {
		t.Fatalf("keys %q", keys)
	}
	// A malformed String: 400, as over HTTP.
	ev.Headers = map[string]string{"content-type": "application/json", "idempotency-key": `"order-2020-04-21.0001`}
	resp, _ := NewLambdaHandler(f.h)(context.Background(), ev)
	decodeResponseProblem(t, resp, 400, transfer.CodeKeyInvalid)
	if len(f.svc.transfers) != 2 {
		t.Fatalf("Transfer calls %d", len(f.svc.transfers))
	}
}
