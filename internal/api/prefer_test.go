package api

import (
	"net/http"
	"testing"
)

// Prefer is read as RFC 7240's grammar in ASCII: a look-alike name or white space outside SP and
// HTAB is not respond-async, so such a request stays synchronous.

func TestPreferNameWithUnicodeFoldingIsNotRespondAsync(t *testing.T) {
	for _, v := range []string{
		"re\u017fpond-async",  // ſ (LATIN SMALL LETTER LONG S) folds to s in Unicode
		"RE\u017fPOND-ASYNC",  //
		"respond-a\u017fync",  //
		"respond-async\u212a", // K (KELVIN SIGN) folds to k
		"r\u0435spond-async",  // Cyrillic е
		"respond\u2010async",  // HYPHEN, not HYPHEN-MINUS
		"ｒｅｓｐｏｎｄ－ａｓｙｎｃ",       // full width
	} {
		h := http.Header{}
		h.Set(PreferHeader, v)
		if prefersAsync(h) {
			t.Errorf("prefersAsync(%q) = true, want false: names compare in ASCII only", v)
		}
	}
}

func TestPreferWhiteSpaceIsSPAndHTABOnly(t *testing.T) {
	for v, want := range map[string]bool{
		"respond-async":                true,
		" \trespond-async\t ":          true,
		"respond-async ; wait=1":       true,
		"respond-async\t=\tx":          true,
		"wait=10 ,\trespond-async":     true,
		"RESPOND-ASYNC":                true,
		"Respond-Async":                true,
		"respond-async\u00a0":          false, // NO-BREAK SPACE
		"\u00a0respond-async":          false,
		"respond-async\u0085":          false, // NEXT LINE
		"respond-async\u2003":          false, // EM SPACE
		"respond-async\u3000":          false, // IDEOGRAPHIC SPACE
		"respond-async\v":              false,
		"respond-async\f":              false,
		"respond-async\r":              false,
		"\u00a0respond-async, wait=1":  false,
		"respond-async x":              false, // a second token is no preference
		"respond-async\u00a0, wait=10": false,
		"wait=1, respond-async\u00a0":  false,
		"x\u00a0, respond-async":       true, // a malformed element does not hide a good one
		`x="a\", respond-async"`:       false,
		"":                             false,
		",,":                           false,
	} {
		h := http.Header{}
		h.Set(PreferHeader, v)
		if got := prefersAsync(h); got != want {
			t.Errorf("prefersAsync(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestPreferenceName(t *testing.T) {
	for in, want := range map[string]string{
		"respond-async": "respond-async", " wait = 10 ": "wait", "handling=lenient;x": "handling",
		"a!#$%&'*+-.^_`|~9": "a!#$%&'*+-.^_`|~9",
	} {
		if got, ok := preferenceName(in); !ok || got != want {
			t.Errorf("preferenceName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", " ", "=1", ";x", "a b", "a\u00a0", "é", `"respond-async"`, "a/b"} {
		if got, ok := preferenceName(in); ok {
			t.Errorf("preferenceName(%q) = %q, want malformed", in, got)
		}
	}
}
