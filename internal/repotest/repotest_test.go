package repotest

import (
	"bytes"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// MaxFileSize is the largest file the repository may hold: 1 MiB.
const MaxFileSize = 1 << 20

// absent matches a citation of the documents that were once kept beside the repository and never
// in it: the design notes, and the source documents (the seeds, numbered 000 and 003). Written as
// alternations so that this file does not cite them itself.
var absent = regexp.MustCompile(`\b(?:(?:DESIGN|NOTES)\.md|seeds?[ /]0\d\d)\b`)

// skipped are the directories walked past when git is not there: build outputs, tool installs
// and local state, all ignored by .gitignore and .ci/.gitignore.
var skipped = []string{".git", ".ci/venv", ".ci/bin", ".ci/work", ".ci/sam", ".aws-sam", ".build", "node_modules"}

// root is the repository's root: the nearest directory above the test's with a go.mod.
func root(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// files lists the repository's files, slash-separated and relative to dir: what git tracks and
// what it would add (untracked, not ignored), else a walk of dir past the skipped directories.
func files(dir string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	cmd.Dir = dir
	if out, err := cmd.Output(); err == nil {
		var list []string
		for _, f := range bytes.Split(out, []byte{0}) {
			if len(f) > 0 {
				list = append(list, string(f))
			}
		}
		return list, nil
	}
	var list []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if slices.Contains(skipped, rel) || d.Name() == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		if d.Type().IsRegular() {
			list = append(list, rel)
		}
		return nil
	})
	return list, err
}

// finding is one broken rule: where, and what.
type finding struct {
	File string
	Line int // 0: the whole file
	What string
}

func (f finding) String() string {
	if f.Line == 0 {
		return f.File + ": " + f.What
	}
	return f.File + ":" + strconv.Itoa(f.Line) + ": " + f.What
}

// scan reads each of names under dir and reports every line citing an absent document and every
// file over MaxFileSize (whose content is not read). A name that no longer exists (deleted, not
// yet committed) is skipped.
func scan(dir string, names []string) ([]finding, error) {
	var found []finding
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		info, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		if info.Size() > MaxFileSize {
			found = append(found, finding{name, 0, fmt.Sprintf("%d bytes, over the 1 MiB limit", info.Size())})
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if !absent.Match(data) {
			continue
		}
		for i, line := range bytes.Split(data, []byte{'\n'}) {
			if m := absent.Find(line); m != nil {
				found = append(found, finding{name, i + 1, "cites " + string(m) + ", which a clone does not hold"})
			}
		}
	}
	return found, nil
}

// TestRepositoryExplainsItself: no file cites a document the repository lacks, and none is over
// 1 MiB.
func TestRepositoryExplainsItself(t *testing.T) {
	dir := root(t)
	names, err := files(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) < 50 || !slices.Contains(names, "README.md") || !slices.Contains(names, "internal/transfer/doc.go") {
		t.Fatalf("listed %d files under %s, README.md and internal/transfer/doc.go not among them: the listing is wrong", len(names), dir)
	}
	found, err := scan(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
	if len(found) > 0 {
		t.Log("the design lives in README.md and the packages' doc.go files: cite their sections; a file over 1 MiB is a build output or data to keep out of git")
	}
}

// TestScanFinds: the scan reports a planted citation with its line and an oversized file, and
// nothing in a clean file.
func TestScanFinds(t *testing.T) {
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
	write("clean.go", "// Store is transfer.Store (internal/transfer/doc.go, \"The item\").\n"+
		"// MY"+"DESIGN"+".mdx and RE"+"DESIGNED.md are no citations.\n")
	write("a/cites.go", "package a\n\n// The rule (see "+"DESIGN"+".md section 3).\n")
	write("Makefile", "# pinned (../shared/"+"NOTES"+".md)\n")
	write("b.go", "// Wallet-scoped keys\n// (seed"+" 000, \"Wallet-scoped keys\"); CHAOS_SEED=20261201, seeds 1, 2 and 3.\n")
	big := filepath.Join(dir, "big.bin")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil { // sparse: no MiB written
		t.Fatal(err)
	}
	f.Close()
	write("edge.bin", "")
	if err := os.Truncate(filepath.Join(dir, "edge.bin"), MaxFileSize); err != nil {
		t.Fatal(err)
	}

	got, err := scan(dir, []string{"clean.go", "a/cites.go", "Makefile", "b.go", "big.bin", "edge.bin", "deleted.go"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := []string{
		"a/cites.go:3: cites " + "DESIGN" + ".md, which a clone does not hold",
		"Makefile:1: cites " + "NOTES" + ".md, which a clone does not hold",
		"b.go:2: cites seed" + " 000, which a clone does not hold",
		"big.bin: 1048577 bytes, over the 1 MiB limit",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("scan found\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// houseImportRules are the imports each package may not have (doc.go, "The house"): the
// domain, internal/transfer, imports nothing of AWS, Stellar or the rest of the module, nor
// net/http (the doors map its problems to HTTP statuses: internal/api/status.go); internal/dynamo
// and internal/stellar (its packages included) never import each other. Inside internal/stellar
// the imports point one way, ledger -> sources -> signing (internal/stellar/doc.go): the signing
// keys import no other package of internal/stellar and nothing of the domain; the transaction
// sources import neither the ledger nor a store. A forbidden path ending in "/" forbids the path
// itself and everything below it; one without forbids that path alone.
var houseImportRules = []struct {
	pkg       string
	forbidden []string
}{
	{"internal/transfer", []string{"github.com/aws/", "github.com/stellar/", module, "net/http/"}},
	{"internal/dynamo", []string{module + "internal/stellar/"}},
	{"internal/stellar", []string{module + "internal/dynamo/"}},
	{"internal/stellar/signing", []string{module + "internal/stellar/", module + "internal/transfer/", module + "internal/dynamo/"}},
	{"internal/stellar/sources", []string{module + "internal/stellar", module + "internal/dynamo/"}},
}

// TestHouseImports holds every package of houseImportRules to its rule.
func TestHouseImports(t *testing.T) {
	dir := root(t)
	for _, r := range houseImportRules {
		imports := packageImports(t, filepath.Join(dir, filepath.FromSlash(r.pkg)))
		if len(imports) == 0 {
			t.Errorf("%s: no imports read: the package moved?", r.pkg)
		}
		for _, imp := range houseImportsRefused(r.pkg, imports) {
			t.Errorf("%s imports %s", r.pkg, imp)
		}
	}
}

// houseImportsRefused lists the imports of pkg that houseImportRules forbid, in order.
func houseImportsRefused(pkg string, imports []string) []string {
	var refused []string
	for _, imp := range imports {
		if houseImportRefused(pkg, imp) {
			refused = append(refused, imp)
		}
	}
	return refused
}

// TestHouseImportsReadsThePackage: a signing package planted in a directory, importing the
// ledger above it and the transaction sources beside it, is refused both, and its test file's
// imports are not read (a test may drive the package through anything).
func TestHouseImportsReadsThePackage(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"keys.go":      "package signing\n\nimport (\n\t\"fmt\"\n\n\t\"" + module + "internal/stellar\"\n)\n",
		"kms.go":       "package signing\n\nimport (\n\t_ \"" + module + "internal/stellar/sources\"\n\t_ \"" + module + "internal/strictjson\"\n)\n",
		"keys_test.go": "package signing\n\nimport _ \"" + module + "internal/dynamo\"\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got := houseImportsRefused("internal/stellar/signing", packageImports(t, dir))
	slices.Sort(got)
	want := []string{module + "internal/stellar", module + "internal/stellar/sources"}
	if !slices.Equal(got, want) {
		t.Errorf("refused %v, want %v", got, want)
	}
}

// houseImportRefused reports whether houseImportRules forbid pkg to import imp.
func houseImportRefused(pkg, imp string) bool {
	for _, r := range houseImportRules {
		if r.pkg != pkg {
			continue
		}
		for _, bad := range r.forbidden {
			if strings.HasSuffix(bad, "/") && strings.HasPrefix(imp+"/", bad) || imp == bad {
				return true
			}
		}
	}
	return false
}

// TestHouseImportRulesCanFail: the rules refuse what they name (net/http and what lies below it
// in the domain among them) and take what they do not.
func TestHouseImportRulesCanFail(t *testing.T) {
	for _, c := range []struct {
		pkg, imp string
		refused  bool
	}{
		{"internal/transfer", "net/http", true},
		{"internal/transfer", "net/http/httptest", true},
		{"internal/transfer", "net/url", false},
		{"internal/transfer", "net/netip", false},
		{"internal/transfer", "github.com/aws/aws-sdk-go-v2/aws", true},
		{"internal/transfer", "github.com/stellar/go-stellar-sdk/xdr", true},
		{"internal/transfer", module + "internal/dynamo", true},
		{"internal/transfer", "context", false},
		{"internal/dynamo", module + "internal/stellar", true},
		{"internal/dynamo", module + "internal/transfer", false},
		{"internal/stellar", module + "internal/dynamo", true},
		{"internal/stellar", module + "internal/stellar/signing", false},
		{"internal/stellar", module + "internal/stellar/sources", false},
		{"internal/dynamo", module + "internal/stellar/sources", true},
		{"internal/stellar/signing", module + "internal/stellar", true},
		{"internal/stellar/signing", module + "internal/stellar/sources", true},
		{"internal/stellar/signing", module + "internal/transfer", true},
		{"internal/stellar/signing", module + "internal/dynamo", true},
		{"internal/stellar/signing", module + "internal/strictjson", false},
		{"internal/stellar/signing", module + "internal/stellarsim", false},
		{"internal/stellar/signing", "github.com/aws/aws-sdk-go-v2/service/kms", false},
		{"internal/stellar/sources", module + "internal/stellar", true},
		{"internal/stellar/sources", module + "internal/dynamo", true},
		{"internal/stellar/sources", module + "internal/stellar/signing", false},
		{"internal/stellar/sources", module + "internal/stellarsim", false},
		{"internal/stellar/sources", module + "internal/transfer", false},
		{"internal/api", "net/http", false},
	} {
		if got := houseImportRefused(c.pkg, c.imp); got != c.refused {
			t.Errorf("%s importing %s: refused=%v, want %v", c.pkg, c.imp, got, c.refused)
		}
	}
}

// packageImports reads the import paths of the non-test Go files in dir (not its subdirectories).
func packageImports(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var imports []string
	fset := token.NewFileSet()
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range f.Imports {
			p, err := strconv.Unquote(s.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(imports, p) {
				imports = append(imports, p)
			}
		}
	}
	return imports
}
