package logging

import (
	"log/slog"
	"strings"
	"unicode/utf8"

	"github.com/stellar/go-stellar-sdk/strkey"
)

// seedLen is the length of an ed25519 secret seed's strkey (SEP-23): "S" and 55 base32 characters.
const seedLen = 56

// Redact replaces every secret seed inside s (a valid SEP-23 "S..." strkey, checksum included, in
// any case, wherever it stands: inside a longer word, after a prefix) with "[redacted]". The
// service's own seeds never reach a log call or an answer, but a client may paste one into a key,
// a field name or a path, and neither a log nor an answer may keep it. The checksum is checked
// (with go-stellar-sdk's strkey) so that ordinary long words are left alone.
func Redact(s string) string {
	if len(s) < seedLen {
		return s
	}
	var b strings.Builder
	last := 0
	for i := 0; i+seedLen <= len(s); {
		if (s[i] == 'S' || s[i] == 's') && isSeed(s[i:i+seedLen]) {
			b.WriteString(s[last:i])
			b.WriteString("[redacted]")
			i += seedLen
			last = i
			continue
		}
		i++
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// ContainsSeed reports whether s holds a secret seed anywhere.
func ContainsSeed(s string) bool { return Redact(s) != s }

func isSeed(w string) bool {
	for i := 1; i < len(w); i++ {
		c := w[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	_, err := strkey.Decode(strkey.VersionByteSeed, strings.ToUpper(w))
	return err == nil
}

// RedactSeeds is a slog ReplaceAttr that applies Redact to string values and error texts.
func RedactSeeds(_ []string, a slog.Attr) slog.Attr {
	var s string
	switch a.Value.Kind() {
	case slog.KindString:
		s = a.Value.String()
	case slog.KindAny:
		err, ok := a.Value.Any().(error)
		if !ok {
			return a
		}
		s = err.Error()
	default:
		return a
	}
	if r := Redact(s); r != s {
		return slog.String(a.Key, r)
	}
	return a
}

// Clip redacts s (Redact), then cuts it to at most n bytes on a UTF-8 boundary, marking a cut
// with "…". Redacting first is the point: a seed cut in two by a clip is no longer recognised,
// and 35 to 55 of its characters would survive. Every text that quotes input and is bounded
// goes through Clip (or redacts the whole text before clipping it).
func Clip(s string, n int) string {
	s = Redact(s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
