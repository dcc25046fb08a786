package api

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// leaksSeed reports whether s holds 16 or more consecutive characters of seed (in any case),
// as sent or once %-decoded: a clipped seed is a leaked seed too.
func leaksSeed(s, seed string) bool {
	texts := []string{strings.ToUpper(s)}
	if u, err := url.PathUnescape(s); err == nil {
		texts = append(texts, strings.ToUpper(u))
	}
	seed = strings.ToUpper(seed)
	for i := 0; i+16 <= len(seed); i++ {
		for _, t := range texts {
			if strings.Contains(t, seed[i:i+16]) {
				return true
			}
		}
	}
	return false
}

// TestTraceIDOnlyInXRayFormat: X-Amzn-Trace-Id is used only in X-Ray's format; anything else is
// replaced by an ID of our own, never echoed in X-Trace-Id, the problem or the stored request
// (a seed sent as Root=S... must not come back anywhere).
func TestTraceIDOnlyInXRayFormat(t *testing.T) {
	seed := randomAddress(versionSeed)
	ours := regexp.MustCompile(`^[0-9a-f]{32}$`)
	const root = "1-5e9f0c65-1de4d666d4dd26aced652b6c"
	for hdr, want := range map[string]string{
		"Root=" + root: root,
		"Root=" + root + ";Parent=53995c3f42cd8ad8;Sampled=1":                                         root,
		"Sampled=?; Root=" + root + ";Lineage=a87bd80c:1":                                             root,
		"Self=1-67891233-12456789abcdef012345678;Root=" + root + ";Parent=53995C3F42CD8AD8;Sampled=0": root,
		"Root=" + seed:                                 "",
		"Root=1-" + seed:                               "",
		"Root=" + root + ";Parent=" + seed:             "",
		"Root=" + root + ";Sampled=" + seed:            "",
		"Root=" + root + ";Root=1-5e9f0c65-0000000000": "",
		"Root=" + root + ";" + seed:                    "",
		"Root=abc":                                     "",
		"Root=1-5e9f0c65-1de4d666d4dd26aced652b6":      "",
		"root=" + root:                                 "",
	} {
		f := newFixture(t)
		rec := f.do(post(goodBody(wallet), map[string]string{AmznTraceHeader: hdr}))
		if rec.Code != http.StatusOK || len(f.svc.transfers) != 1 {
			t.Fatalf("%s: status %d, %d calls", hdr, rec.Code, len(f.svc.transfers))
		}
		got, stored := rec.Header().Get(TraceHeader), f.svc.transfers[0].TraceID
		if got != stored || (want != "" && got != want) || (want == "" && !ours.MatchString(got)) {
			t.Errorf("%s: X-Trace-Id %q, stored %q; want %q", hdr, got, stored, want)
		}
		bad := f.do(post(`{`, map[string]string{AmznTraceHeader: hdr}))
		if pd := problem(t, bad, 400, transfer.CodeRequestInvalid); leaksSeed(pd.TraceID, seed) || leaksSeed(bad.Body.String(), seed) {
			t.Errorf("%s: the problem echoes the seed: %s", hdr, bad.Body)
		}
		if leaksSeed(f.logs.String(), seed) {
			t.Errorf("%s: the log holds the seed", hdr)
		}
	}
}

// TestSeedsRedactedBeforeClipping: text that quotes input is redacted, then clipped; the path is
// redacted as decoded. Each request here left 16 to 56 characters of the seed in the answer.
func TestSeedsRedactedBeforeClipping(t *testing.T) {
	seed := randomAddress(versionSeed)
	escaped := "%" + strings.ToUpper(hexByte(seed[0])) + seed[1:]
	f := newFixture(t)
	for _, r := range []req{
		post(`{"`+strings.Repeat("x", 40)+seed+`":"1"}`, nil),                  // a field name over 64 bytes
		post(`{"`+strings.Repeat("x", 5)+seed+`":"1"}`, nil),                   // one under
		{method: "GET", path: "/" + strings.Repeat("a", 230) + seed},           // the instance cut at 256
		{method: "GET", path: "/" + strings.Repeat("a", 470) + seed},           // the detail cut at 512
		{method: "GET", path: "/wallets/" + escaped + "/transfers/order-0001"}, // %-escaped in the path
		{method: "GET", path: "/nowhere/" + escaped},                           // and in a 404's detail
		{method: "GET", path: "/wallets/" + wallet + "/transfers/x" + escaped}, // in the key
		{method: "DELETE", path: "/wallets/" + escaped + "/transfers/k"},       // 405
	} {
		rec := f.do(r)
		if rec.Code < 400 || rec.Code > 499 {
			t.Errorf("%s %s: status %d", r.method, r.path, rec.Code)
		}
		if leaksSeed(rec.Body.String(), seed) {
			t.Errorf("%s %.60s...: the answer holds part of the seed: %s", r.method, r.path, rec.Body)
		}
	}
	if leaksSeed(f.logs.String(), seed) {
		t.Errorf("the log holds part of the seed: %s", f.logs)
	}
}

func hexByte(c byte) string {
	return strings.ToLower(string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15]))
}

// TestLambdaAdapterProblemIsRedactedAndClipped: the adapter's own 400 (an event it cannot turn
// into a request) quotes the path as every problem does, redacted and clipped; it echoed the raw
// path whole, seed and 20 kB alike.
func TestLambdaAdapterProblemIsRedactedAndClipped(t *testing.T) {
	seed := randomAddress(versionSeed)
	f := newFixture(t)
	for _, path := range []string{
		"/transfers/" + seed + "%zz" + strings.Repeat("y", 20_000),
		"/transfers/%" + hexByte(seed[0]) + seed[1:] + "%",
		"/" + strings.Repeat("a", 240) + seed + "%",
	} {
		ev := loadEvent(t, "apigw-v2-request-post-transfer.json")
		ev.RawPath = path
		ev.Headers["x-amzn-trace-id"] = "Root=" + seed
		resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		pd := decodeResponseProblem(t, resp, 400, transfer.CodeRequestInvalid)
		if leaksSeed(resp.Body, seed) || leaksSeed(resp.Headers[TraceHeader], seed) || len(pd.Instance) > 3*maxInstance+8 || !strings.HasPrefix(pd.Instance, "/") {
			t.Errorf("%.40s...: instance %q (%d bytes), body %.300s", path, pd.Instance, len(pd.Instance), resp.Body)
		}
	}
}

// TestRequestIDWithASeedIsNotATraceID: the API Gateway request ID stands in for a missing X-Ray
// header only when it holds no seed.
func TestRequestIDWithASeedIsNotATraceID(t *testing.T) {
	seed := randomAddress(versionSeed)
	f := newFixture(t)
	ev := loadEvent(t, "apigw-v2-request-no-authorizer.json")
	delete(ev.Headers, "x-amzn-trace-id")
	ev.RequestContext.RequestID = seed
	resp, err := NewLambdaHandler(f.h)(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Headers[TraceHeader]; !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(got) || leaksSeed(resp.Body, seed) {
		t.Errorf("trace ID %q, body %s", got, resp.Body)
	}
}
