package repotest

import (
	"bytes"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// issueRef matches a reference to an issue by number: "issue N", "Issues N", "issue #N" for a
// number N, in any case.
// The repository's own issues are history, and comments say why, never history (doc.go, "The
// house"): a reference names the behaviour, the rule or the scenario instead.
var issueRef = regexp.MustCompile(`(?i)\bissues?[ \t]+#?[0-9]+\b`)

// externalQualifier is the one allowance: a reference whose word just before it, on the same
// line, is another project's owner/repo ("stellar/stellar-docs issue N") cites a source, not this
// repository's history. Nothing else on the line counts: naming stellar-rpc elsewhere on a line
// does not make the line's "issue N" someone else's. A citation without "issue" ("OpenZeppelin
// relayer #N") is not matched at all.
var externalQualifier = regexp.MustCompile(`[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+[ \t]+$`)

// issueScanSkipped reports whether name is not prose the house writes: fixtures under a testdata
// directory, vendored or installed code, and lock files (go.sum, package-lock.json, *.lock).
func issueScanSkipped(name string) bool {
	for _, dir := range strings.Split(path.Dir(name), "/") {
		if dir == "testdata" || dir == "vendor" || dir == "node_modules" {
			return true
		}
	}
	base := path.Base(name)
	return base == "go.sum" || strings.HasSuffix(base, ".lock") || strings.HasSuffix(base, "-lock.json") ||
		strings.HasSuffix(base, "-lock.yaml")
}

// issueRefs reads each of names under dir and reports every reference to an issue by number not
// qualified by another project's owner/repo. Binary files (a NUL byte), skipped names and names
// that no longer exist are passed over.
func issueRefs(dir string, names []string) ([]finding, error) {
	var found []finding
	for _, name := range names {
		if issueScanSkipped(name) {
			continue
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		info, err := os.Lstat(p)
		if err != nil || !info.Mode().IsRegular() || info.Size() > MaxFileSize {
			continue // gone, a link or oversized: TestRepositoryExplainsItself judges those
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if bytes.IndexByte(data, 0) >= 0 || !issueRef.Match(data) {
			continue
		}
		for i, line := range bytes.Split(data, []byte{'\n'}) {
			for _, m := range issueRef.FindAllIndex(line, -1) {
				if externalQualifier.Match(line[:m[0]]) {
					continue
				}
				found = append(found, finding{name, i + 1, "names an issue by number: " + string(line[m[0]:m[1]])})
			}
		}
	}
	return found, nil
}

// TestNoIssueNumbersInTheHouse: no comment, docstring, README or Makefile line refers to this
// project's issues by number; another project's issue, qualified by its owner/repo, may be cited.
func TestNoIssueNumbersInTheHouse(t *testing.T) {
	dir := root(t)
	names, err := files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(names, "README.md") || !slices.Contains(names, "Makefile") {
		t.Fatalf("listed %d files under %s, README.md and Makefile not among them: the listing is wrong", len(names), dir)
	}
	found, err := issueRefs(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
	if len(found) > 0 {
		t.Log("say what and why instead: name the behaviour, the rule or the scenario; another project's issue is cited as owner/repo issue N")
	}
}

// TestIssueRefsFinds: the scan reports this project's issue numbers, in any case and with or
// without '#', and passes over another project's qualified issue, fixtures, lock files and words
// that only begin like "issue".
func TestIssueRefsFinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	is := "iss" + "ue" // so that this file does not refer to an issue itself
	write("a.go", "// Stale writers ("+is+" 11).\n// "+strings.ToUpper(is[:1])+is[1:]+" 16, item 3: envelopes.\n"+
		"// stellar-rpc's read order ("+is+"s #12) and "+is+" 13.\n")
	write("README.md", "Ledger gaps (stellar/stellar-docs "+is+" 2805); the asset's "+is+"r 7; "+is+"d 3 cursors.\n"+
		"OpenZeppelin relayer #822, and "+is+" 4.\n")
	write("internal/x/testdata/corpus.txt", is+" 9\n")
	write("package-lock.json", "\""+is+" 1\"\n")
	write("bin.dat", is+" 2\x00")

	got, err := issueRefs(dir, []string{"a.go", "README.md", "internal/x/testdata/corpus.txt", "package-lock.json", "bin.dat", "gone.go"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := []string{
		"a.go:1: names an " + is + " by number: " + is + " 11",
		"a.go:2: names an " + is + " by number: " + strings.ToUpper(is[:1]) + is[1:] + " 16",
		"a.go:3: names an " + is + " by number: " + is + "s #12",
		"a.go:3: names an " + is + " by number: " + is + " 13",
		"README.md:2: names an " + is + " by number: " + is + " 4",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("scan found\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
