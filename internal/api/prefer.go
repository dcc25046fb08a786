package api

import (
	"net/http"
	"strings"
)

// prefersAsync reports whether the Prefer headers hold the preference respond-async (RFC 7240
// section 4.1). Every Prefer header is one comma-separated list (RFC 9110 section 5.3); each
// element is parsed by RFC 7240 section 2's grammar,
//
//	preference = token [ BWS "=" BWS word ] *( OWS ";" [ OWS parameter ] )
//
// in ASCII: white space is SP and HTAB only (OWS, RFC 9110 section 5.6.3), the name is a token
// (RFC 9110 section 5.6.2) and names compare case-insensitively in ASCII only. So neither
// "reſpond-async" (U+017F, which Unicode folds to "s") nor "respond-async" followed by U+00A0
// (which strings.TrimSpace would remove) is respond-async: an element whose name is not followed
// by OWS then the end, "=" or ";" is malformed and ignored, as a preference the server does not
// understand is (RFC 7240 section 2). A quoted value is skipped whole, so a comma or
// "respond-async" inside quotes is never read as a preference.
func prefersAsync(h http.Header) bool {
	for _, v := range h.Values(PreferHeader) {
		for _, pref := range splitPreferences(v) {
			if name, ok := preferenceName(pref); ok && asciiEqualFold(name, RespondAsync) {
				return true
			}
		}
	}
	return false
}

// preferenceName is the token that names the preference element pref (a list element, OWS
// around it allowed); ok is false for an empty or malformed element.
func preferenceName(pref string) (string, bool) {
	pref = trimOWS(pref)
	n := 0
	for n < len(pref) && isTokenChar(pref[n]) {
		n++
	}
	if n == 0 {
		return "", false
	}
	rest := trimOWS(pref[n:])
	if rest != "" && rest[0] != '=' && rest[0] != ';' {
		return "", false
	}
	return pref[:n], true
}

// The three helpers below are RFC 9110's ASCII grammar. The standard library keeps its own copies
// internal (net/http's httpguts and internal/ascii); golang.org/x/net/http/httpguts has
// IsTokenRune, but the service builds nothing else from that module, and the rules are a few
// lines each.

// trimOWS removes optional white space, SP and HTAB only (RFC 9110 section 5.6.3), from both ends.
func trimOWS(s string) string {
	return strings.Trim(s, " \t")
}

// isTokenChar reports whether c is a tchar (RFC 9110 section 5.6.2).
func isTokenChar(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// asciiEqualFold reports whether a and b are equal ignoring the case of ASCII letters only.
func asciiEqualFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if lower(a[i]) != lower(b[i]) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// splitPreferences splits a Prefer value at the commas outside quoted strings (RFC 9110 section
// 5.6.4: a backslash escapes the next character inside quotes).
func splitPreferences(v string) []string {
	var out []string
	start, quoted := 0, false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case quoted && c == '\\':
			i++
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, v[start:i])
			start = i + 1
		}
	}
	return append(out, v[start:])
}
