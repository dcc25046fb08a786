package api

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// answered is one way the domain can produce a code: the kind it comes with and the status the
// HTTP layer must answer it with (README.md, "Problem types"; openapi.yaml).
type answered struct {
	kind   transfer.Kind
	status int
}

// domainStatuses lists every code the domain can produce (transfer.Code*, which internal/stellar
// uses for its own refusals) with each kind it comes with. A refusal of Ledger.Prepare (422) is
// also stored as the rejection of a queued request; the failing codes only ever come as
// TRANSFER_IN_DOUBT's failingCode (checked as that answer: 409).
var domainStatuses = map[string][]answered{
	transfer.CodeKeyMissing:     {{transfer.KindMalformed, 400}},
	transfer.CodeKeyInvalid:     {{transfer.KindMalformed, 400}},
	transfer.CodeRequestInvalid: {{transfer.KindMalformed, 400}},
	transfer.CodeLimitInvalid:   {{transfer.KindMalformed, 400}},
	transfer.CodeCursorInvalid:  {{transfer.KindMalformed, 400}},

	transfer.CodeInvalidAddress:   {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},
	transfer.CodeInvalidAmount:    {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},
	transfer.CodeInvalidAsset:     {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},
	transfer.CodeOperationNotSupp: {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},
	transfer.CodeInvalidMemo:      {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},
	transfer.CodeMemoNotSupported: {{transfer.KindUnacceptable, 422}, {transfer.KindRejected, 422}},

	transfer.CodeTransactionFailed: {{transfer.KindRejected, 422}},

	transfer.CodeAmountAboveLimit:   {{transfer.KindUnacceptable, 422}},
	transfer.CodeDailyLimitExceeded: {{transfer.KindLimited, 429}},

	transfer.CodeKeyConflict: {{transfer.KindConflict, 409}},
	transfer.CodeInDoubt:     {{transfer.KindConflict, 409}},
	transfer.CodeInProgress:  {{transfer.KindConflict, 409}},
	transfer.CodeNotFound:    {{transfer.KindNotFound, 404}},

	transfer.CodeNotCancellable: {{transfer.KindConflict, 409}},
	transfer.CodeCancelled:      {{transfer.KindConflict, 409}},

	transfer.CodeCircuitOpen:            {{transfer.KindUnavailable, 503}},
	transfer.CodeSimulationError:        {{transfer.KindUnavailable, 503}},
	transfer.CodeRestoreRequired:        {{transfer.KindUnavailable, 503}},
	transfer.CodeRPCError:               {{transfer.KindUnavailable, 503}},
	transfer.CodeTransactionExpired:     {{transfer.KindUnavailable, 503}},
	transfer.CodeNetworkUnavailable:     {{transfer.KindUnavailable, 503}},
	transfer.CodeStoreUnavailable:       {{transfer.KindUnavailable, 503}},
	transfer.CodeConfigurationInvalid:   {{transfer.KindUnavailable, 503}},
	transfer.CodeChannelsBusy:           {{transfer.KindUnavailable, 503}},
	transfer.CodeSigningKeysUnavailable: {{transfer.KindUnavailable, 503}},
	transfer.CodeVaultUnderfunded:       {{transfer.KindUnavailable, 503}},
	transfer.CodeFeeAccountUnderfunded:  {{transfer.KindUnavailable, 503}},
	transfer.CodeServiceSideFailure:     {{transfer.KindUnavailable, 503}},
	transfer.CodeFeeAboveCap:            {{transfer.KindUnavailable, 503}},

	// Failing codes.
	transfer.CodeTimeout:          {{transfer.KindConflict, 409}},
	transfer.CodeSubmissionFailed: {{transfer.KindConflict, 409}},
	transfer.CodeLeaseExpired:     {{transfer.KindConflict, 409}},
	transfer.CodeInternalError:    {{transfer.KindConflict, 409}},
}

// failingCodes come only as TRANSFER_IN_DOUBT's failingCode.
var failingCodes = []string{transfer.CodeTimeout, transfer.CodeSubmissionFailed, transfer.CodeLeaseExpired, transfer.CodeInternalError}

// TestEveryCodeHasItsStatus walks every code the domain declares (the Code* constants of
// internal/transfer, read from its source so that a new one cannot be missed) and every code
// internal/stellar writes into a problem, renders each through the typed error the domain
// answers it with, and holds the status. A code without an entry in domainStatuses fails: say
// what kind it is and what it answers before it ships.
func TestEveryCodeHasItsStatus(t *testing.T) {
	codes := declaredCodes(t, filepath.Join("..", "transfer"))
	if len(codes) < 30 {
		t.Fatalf("read %d Code* constants from internal/transfer: the package moved?", len(codes))
	}
	for _, c := range problemCodes(t, filepath.Join("..", "stellar")) {
		if !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	for _, code := range codes {
		ways, ok := domainStatuses[code]
		if !ok {
			t.Errorf("code %s has no status: add it to domainStatuses with the kind the domain gives it", code)
			continue
		}
		for _, w := range ways {
			err := domainError(code, w.kind)
			pd, isProblem := problemFor(err, nil)
			wantCode := code
			if slices.Contains(failingCodes, code) {
				wantCode = transfer.CodeInDoubt
				if pd.FailingCode != code {
					t.Errorf("%s as a failing code: failingCode %q", code, pd.FailingCode)
				}
			}
			if !isProblem || pd.Status != w.status || pd.Code != wantCode {
				t.Errorf("%s (%s): %d %s, want %d", code, w.kind, pd.Status, pd.Code, w.status)
			}
		}
	}
	for _, k := range declaredKinds(t, filepath.Join("..", "transfer")) {
		if _, ok := statuses[k]; !ok {
			t.Errorf("kind %q has no row in statuses", k)
		}
	}
}

// domainError is the typed error the domain answers code of kind with.
func domainError(code string, kind transfer.Kind) error {
	switch code {
	case transfer.CodeAmountAboveLimit, transfer.CodeDailyLimitExceeded:
		return &transfer.LimitError{Code: code, Limit: "wallet", Asset: "USDC", Cap: 25 * transfer.StroopsPerUnit,
			Charge: transfer.Charge{Scope: transfer.LimitWallet, Day: "2026-12-02"}, RetryAfter: time.Hour}
	}
	switch kind {
	case transfer.KindMalformed, transfer.KindUnacceptable:
		return &transfer.ValidationError{Code: code, Kind: kind, Detail: "refused"}
	case transfer.KindRejected:
		return &transfer.RejectedError{Code: code, Detail: "rejected"}
	case transfer.KindUnavailable:
		return &transfer.UnavailableError{Code: code, Detail: "unavailable"}
	case transfer.KindNotFound:
		return &transfer.NotFoundError{}
	}
	switch code {
	case transfer.CodeKeyConflict:
		return &transfer.ConflictError{}
	case transfer.CodeInProgress:
		return &transfer.InProgressError{}
	case transfer.CodeInDoubt:
		return &transfer.InDoubtError{FailingCode: transfer.CodeTimeout}
	case transfer.CodeNotCancellable:
		return &transfer.NotCancellableError{State: "in_flight"}
	case transfer.CodeCancelled:
		return &transfer.CancelledError{}
	}
	return &transfer.InDoubtError{FailingCode: code}
}

// TestStoredStatusIsAnswered: a rejection replays the status its item holds (items written
// while the domain stored one), and one whose item holds none answers 422, as the version that
// wrote statuses did for an item without one.
func TestStoredStatusIsAnswered(t *testing.T) {
	for _, tc := range []struct {
		stored, want int
	}{{422, 422}, {400, 400}, {0, 422}, {200, 422}} {
		pd, _ := problemFor(&transfer.RejectedError{Code: transfer.CodeInvalidAsset, StoredStatus: tc.stored}, nil)
		if pd.Status != tc.want {
			t.Errorf("stored status %d: answered %d, want %d", tc.stored, pd.Status, tc.want)
		}
	}
}

// declaredCodes reads the values of the string constants named Code* in the non-test files of
// dir.
func declaredCodes(t *testing.T, dir string) []string {
	t.Helper()
	var codes []string
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if !strings.HasPrefix(n.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if v, ok := stringLit(vs.Values[i]); ok {
						codes = append(codes, v)
					}
				}
			}
		}
	}
	return codes
}

// declaredKinds reads the values of the constants of type Kind in the non-test files of dir.
func declaredKinds(t *testing.T, dir string) []transfer.Kind {
	t.Helper()
	var kinds []transfer.Kind
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Kind" {
					continue
				}
				for _, v := range vs.Values {
					if k, ok := stringLit(v); ok {
						kinds = append(kinds, transfer.Kind(k))
					}
				}
			}
		}
	}
	if len(kinds) == 0 {
		t.Fatalf("no Kind constants in %s", dir)
	}
	return kinds
}

// problemCodes reads the codes the non-test files of dir write as string literals into a Code
// field of a composite literal (a typed error); codes written as transfer.Code* constants are
// among declaredCodes already.
func problemCodes(t *testing.T, dir string) []string {
	t.Helper()
	var codes []string
	for _, f := range parseDir(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Code" {
				if v, ok := stringLit(kv.Value); ok && v != "" && strings.ToUpper(v) == v && !strings.HasPrefix(v, "tx") {
					codes = append(codes, v)
				}
			}
			return true
		})
	}
	return codes
}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	v, err := strconv.Unquote(lit.Value)
	return v, err == nil
}
