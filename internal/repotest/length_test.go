package repotest

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// MaxGoFileLines is the longest a Go file may be, tests included: each file holds one idea (as
// net/http splits one package by concept into files), and the longest the house has, the fault
// campaign's driver and the async benchmark, sit just under it. A file that grows past it is split
// by concept, not the limit raised.
const MaxGoFileLines = 900

// lengthFindings reports each .go file among names under dir that is longer than MaxGoFileLines.
// Fixtures under a testdata directory are not the house's prose and are skipped.
func lengthFindings(dir string, names []string) ([]finding, error) {
	var found []finding
	for _, name := range names {
		if path.Ext(name) != ".go" || strings.Contains("/"+name, "/testdata/") {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		if n := strings.Count(strings.TrimRight(string(src), "\n"), "\n") + 1; n > MaxGoFileLines {
			found = append(found, finding{name, n, fmt.Sprintf("%d lines, more than %d: split the file by concept", n, MaxGoFileLines)})
		}
	}
	return found, nil
}

// TestGoFilesHoldOneIdea: no Go file is longer than MaxGoFileLines.
func TestGoFilesHoldOneIdea(t *testing.T) {
	dir := root(t)
	names, err := files(dir)
	if err != nil {
		t.Fatal(err)
	}
	goFiles := 0
	for _, n := range names {
		if path.Ext(n) == ".go" {
			goFiles++
		}
	}
	if goFiles < 100 {
		t.Fatalf("found %d .go files under %s: the listing is wrong", goFiles, dir)
	}
	found, err := lengthFindings(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestLengthFindingsFinds: the rule reports a Go file one line over the limit, and passes one at
// the limit, a long file that is not Go and a long Go fixture.
func TestLengthFindingsFinds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines int) {
		t.Helper()
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.Repeat("// x\n", lines)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("internal/x/at.go", MaxGoFileLines)
	write("internal/x/over_test.go", MaxGoFileLines+1)
	write("internal/x/notes.md", 2*MaxGoFileLines)
	write("internal/x/testdata/fixture.go", 2*MaxGoFileLines)
	got, err := lengthFindings(dir, []string{"internal/x/at.go", "internal/x/over_test.go", "internal/x/notes.md", "internal/x/testdata/fixture.go"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := fmt.Sprintf("internal/x/over_test.go:%d: %d lines, more than %d: split the file by concept", MaxGoFileLines+1, MaxGoFileLines+1, MaxGoFileLines)
	if strings.Join(lines, "\n") != want {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(lines, "\n"), want)
	}
}
