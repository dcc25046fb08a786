package repotest

import (
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// MaxMainLines is the longest a function's main.go may be: a main only wires (the assembly lives
// in internal/wiring, where the local stack and the tests reuse it), as each function of
// aws-samples' serverless-go-demo does.
const MaxMainLines = 20

const module = "github.com/stellar-transfer/orchestrator/"

// mainImports are the only packages a function's main may import: the wiring, and the door it
// hands to the Lambda runtime.
var mainImports = map[string]bool{
	module + "internal/wiring": true,
	module + "internal/api":    true,
	module + "internal/queue":  true,
}

// mainFindings judges each functions/<name>/main.go among names under dir: at most MaxMainLines
// lines, importing only mainImports.
func mainFindings(dir string, names []string) ([]finding, error) {
	var found []finding
	for _, name := range names {
		if path.Base(name) != "main.go" || path.Dir(path.Dir(name)) != "functions" {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if err != nil {
			return nil, err
		}
		if n := strings.Count(strings.TrimRight(string(src), "\n"), "\n") + 1; n > MaxMainLines {
			found = append(found, finding{name, n, fmt.Sprintf("%d lines, more than %d: a main only wires; move the assembly to internal/wiring", n, MaxMainLines)})
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ImportsOnly)
		if err != nil {
			return nil, err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !mainImports[p] {
				found = append(found, finding{name, 0, "imports " + p + ": a main imports the wiring only (and the door it starts)"})
			}
		}
	}
	return found, nil
}

// TestMainsOnlyWire: every function's main is at most MaxMainLines lines and imports only the
// wiring and its door.
func TestMainsOnlyWire(t *testing.T) {
	dir := root(t)
	names, err := files(dir)
	if err != nil {
		t.Fatal(err)
	}
	mains := 0
	for _, n := range names {
		if path.Base(n) == "main.go" && path.Dir(path.Dir(n)) == "functions" {
			mains++
		}
	}
	if mains < 4 {
		t.Fatalf("found %d functions/*/main.go under %s: the listing is wrong", mains, dir)
	}
	found, err := mainFindings(dir, names)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range found {
		t.Error(f)
	}
}

// TestMainFindingsFinds: the rule reports a long main and a main that imports past the wiring,
// and passes a short one.
func TestMainFindingsFinds(t *testing.T) {
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
	write("functions/short/main.go", "package main\n\nimport \"github.com/stellar-transfer/orchestrator/internal/wiring\"\n\nfunc main() { wiring.Begin() }\n")
	write("functions/long/main.go", "package main\n\nfunc main() {\n"+strings.Repeat("\t_ = 1\n", MaxMainLines)+"}\n")
	write("functions/wide/main.go", "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n")
	write("internal/x/main.go", "package main\n\nimport \"os\"\n\nfunc main() { os.Exit(0) }\n")
	got, err := mainFindings(dir, []string{"functions/short/main.go", "functions/long/main.go", "functions/wide/main.go", "internal/x/main.go"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := fmt.Sprintf("functions/long/main.go:%d: %d lines, more than %d: a main only wires; move the assembly to internal/wiring\n"+
		"functions/wide/main.go: imports os: a main imports the wiring only (and the door it starts)", MaxMainLines+4, MaxMainLines+4, MaxMainLines)
	if strings.Join(lines, "\n") != want {
		t.Errorf("found\n%s\nwant\n%s", strings.Join(lines, "\n"), want)
	}
}

// neverDeployed are the packages that model or exercise AWS and Stellar on one machine: the local
// stack, the local network, virtual time, the fault campaign, the benchmarks and the Lambda
// emulator's tests. No function links them.
var neverDeployed = []string{"internal/devstack", "internal/stellarsim", "internal/vclock", "internal/chaos",
	"internal/loadtest", "internal/lambdatest"}

// TestFunctionsLinkNothingLocal: no function's binary links a package of neverDeployed (go list
// -deps of ./functions/...), so nothing built for tests ships.
func TestFunctionsLinkNothingLocal(t *testing.T) {
	dir := root(t)
	cmd := exec.Command("go", "list", "-deps", "./functions/...")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, module+"internal/wiring") {
		t.Fatalf("go list -deps ./functions/... does not list internal/wiring: the listing is wrong:\n%s", out)
	}
	for _, d := range deps {
		for _, bad := range neverDeployed {
			if d == module+bad || strings.HasPrefix(d, module+bad+"/") {
				t.Errorf("a function links %s", d)
			}
		}
	}
}
