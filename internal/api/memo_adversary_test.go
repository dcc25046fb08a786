package api

import (
	"net/http"
	"testing"
)

// A text memo is paid byte for byte (transfer.CanonicalMemo: "taken byte for byte"), so a body
// whose memo text is not the UTF-8 the client wrote must be refused, never paid with another memo.
// encoding/json (under strictjson) replaces an invalid UTF-8 byte and an unpaired surrogate
// escape with U+FFFD: the chain then carries EF BF BD where the client sent FF, and two requests
// naming two different memos ("\ud800" and "\udc00") become one memo and one fingerprint. RFC
// 8259 section 8.1 requires UTF-8; RFC 7493 (I-JSON) section 2.1 forbids unpaired surrogates.
func TestPostTransferTextMemoIsTheBytesSentOrRefused(t *testing.T) {
	for name, memo := range map[string]string{
		"an invalid UTF-8 byte":       "{\"type\":\"text\",\"value\":\"acct-\xff\"}",
		"a lone high surrogate":       `{"type":"text","value":"acct-\ud800"}`,
		"a lone low surrogate":        `{"type":"text","value":"acct-\udc00"}`,
		"surrogates in reverse order": `{"type":"text","value":"\udc00\ud800"}`,
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t)
			body := `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":` + memo + `}`
			rec := f.do(req{method: http.MethodPost, path: "/transfers", body: body,
				header: map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}})
			if len(f.svc.transfers) != 0 {
				t.Fatalf("%d: the domain was asked to pay memo %q, which the client did not send", rec.Code, f.svc.transfers[0].Request.Memo.Value)
			}
			if rec.Code != http.StatusBadRequest && rec.Code != http.StatusUnprocessableEntity {
				t.Errorf("status %d, want 400 or 422", rec.Code)
			}
		})
	}
}
