package repotest

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestTransfertestImports: internal/transfer/transfertest, the test helpers of the domain that
// other packages import as they would net/http/httptest, imports only internal/transfer and the
// standard library, so importing it brings no adapter into a test and it can never depend on the
// DynamoDB store whose semantics it mirrors.
func TestTransfertestImports(t *testing.T) {
	const module = "github.com/stellar-transfer/orchestrator/"
	imports := packageImports(t, filepath.Join(root(t), "internal", "transfer", "transfertest"))
	if len(imports) == 0 {
		t.Fatal("internal/transfer/transfertest: no imports read: the package moved?")
	}
	for _, imp := range imports {
		if bad := transfertestImportRefused(module, imp); bad != "" {
			t.Errorf("internal/transfer/transfertest imports %s: %s", imp, bad)
		}
	}
}

// transfertestImportRefused says why transfertest may not import imp, "" when it may: the
// standard library (no dot in the path's first element) and internal/transfer only.
func transfertestImportRefused(module, imp string) string {
	first, _, _ := strings.Cut(imp, "/")
	switch {
	case imp == module+"internal/transfer":
		return ""
	case !strings.Contains(first, "."):
		return ""
	}
	return "only the standard library and internal/transfer"
}

// TestTransfertestImportRuleCanFail: the rule refuses an adapter, another internal package and a
// third-party module, and takes the domain and the standard library.
func TestTransfertestImportRuleCanFail(t *testing.T) {
	const module = "github.com/stellar-transfer/orchestrator/"
	for imp, refused := range map[string]bool{
		module + "internal/transfer":        false,
		"context":                           false,
		"encoding/base64":                   false,
		module + "internal/dynamo":          true,
		module + "internal/vclock":          true,
		module + "internal/transfer/other":  true,
		"github.com/aws/aws-sdk-go-v2/aws":  true,
		"github.com/stellar/go-stellar-sdk": true,
	} {
		if got := transfertestImportRefused(module, imp) != ""; got != refused {
			t.Errorf("import %s: refused=%v, want %v", imp, got, refused)
		}
	}
}
