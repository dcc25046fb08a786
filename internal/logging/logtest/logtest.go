// Package logtest captures a test's log output and checks it for secrets. Any package's tests can
// use it: New gives a logger whose whole output is scanned for Stellar secret seeds when the test
// ends.
package logtest

import (
	"bytes"
	"log/slog"
	"regexp"
	"sync"
	"testing"

	"github.com/stellar/go-stellar-sdk/strkey"

	"github.com/stellar-transfer/orchestrator/internal/logging"
)

// seedPattern is the shape of a Stellar secret seed strkey: "S" and 55 more base32 characters
// (RFC 4648 alphabet, upper case), 56 in all, not part of a longer base32 run.
var seedPattern = regexp.MustCompile(`(?:^|[^A-Z2-7])(S[A-Z2-7]{55})(?:[^A-Z2-7]|$)`)

// Finding is one secret-seed-shaped string in log output. Prefix is its first 4 characters: the
// finding never repeats the secret.
type Finding struct {
	Line   int // 1-based line number
	Prefix string
	// ValidSeed is true when the checksum and version byte make it a real seed (a certain leak);
	// false for a seed-shaped string (still refused: a mangled seed is a leak too).
	ValidSeed bool
}

// FindSecrets returns every secret-seed-shaped string in output.
func FindSecrets(output []byte) []Finding {
	var out []Finding
	for i, line := range bytes.Split(output, []byte("\n")) {
		for _, m := range seedPattern.FindAllSubmatch(line, -1) {
			seed := string(m[1])
			_, err := strkey.Decode(strkey.VersionByteSeed, seed)
			out = append(out, Finding{Line: i + 1, Prefix: seed[:4], ValidSeed: err == nil})
		}
	}
	return out
}

// AssertNoSecrets fails t for every secret-seed-shaped string in output, naming the line and the
// first 4 characters only.
func AssertNoSecrets(t testing.TB, output []byte) {
	t.Helper()
	for _, f := range FindSecrets(output) {
		t.Errorf("log line %d contains a secret seed (%s..., valid checksum %v)", f.Line, f.Prefix, f.ValidSeed)
	}
}

// Buffer is a concurrency-safe log sink.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// Bytes returns a copy of everything written.
func (b *Buffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// New returns a debug-level JSON logger (logging.New, so with request and trace IDs) writing
// into a Buffer, and the Buffer. When t ends, the whole output is checked with AssertNoSecrets
// and, if t failed, written to the test log.
func New(t testing.TB) (*slog.Logger, *Buffer) {
	t.Helper()
	b := &Buffer{}
	t.Cleanup(func() {
		out := b.Bytes()
		AssertNoSecrets(t, out)
		if t.Failed() && len(out) > 0 {
			t.Logf("captured log:\n%s", out)
		}
	})
	return logging.New(b, slog.LevelDebug), b
}
