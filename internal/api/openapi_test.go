package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"gopkg.in/yaml.v3"

	"github.com/stellar-transfer/orchestrator/internal/cfntemplate"
	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// openapi.yaml held to the handler: the document is valid OpenAPI 3.1, it lists exactly the codes
// the code defines, and every kind of answer the handler gives validates against it and is named
// in the description of its status.

func loadOpenAPI(t *testing.T) ([]byte, validator.Validator) {
	t.Helper()
	spec, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		t.Fatal(err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		t.Fatalf("validator: %v", errs)
	}
	return spec, v
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	spec, v := loadOpenAPI(t)
	if ok, errs := v.ValidateDocument(); !ok {
		for _, e := range errs {
			t.Errorf("openapi.yaml: %s: %s (line %d)", e.Message, e.Reason, e.SpecLine)
		}
	}
	if !bytes.HasPrefix(spec, []byte("openapi: 3.1.")) {
		t.Error("openapi.yaml is not OpenAPI 3.1")
	}
}

// codeConstants returns the string constants named Code* declared in the non-test Go files of
// dir: the problem codes.
func codeConstants(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var codes []string
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Code") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, _ := strconv.Unquote(lit.Value)
						codes = append(codes, v)
					}
				}
			}
		}
	}
	return codes
}

type openAPIDoc struct {
	Servers []struct {
		URL       string
		Variables map[string]struct {
			Default string
			Enum    []string
		}
	}
	Security   []map[string][]string
	Paths      map[string]map[string]yaml.Node
	Components struct {
		Responses map[string]struct {
			Description string
			Content     map[string]yaml.Node
		}
		Schemas map[string]struct {
			Enum        []string
			Pattern     string
			Description string
		}
		SecuritySchemes map[string]map[string]string `yaml:"securitySchemes"`
	}
}

func parseOpenAPI(t *testing.T, spec []byte) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := yaml.Unmarshal(spec, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// apiCodes are the problem codes the code base can answer over HTTP: internal/transfer's and
// this package's Code* constants, sorted, each once.
func apiCodes(t *testing.T) []string {
	t.Helper()
	codes := append(codeConstants(t, "../transfer"), codeConstants(t, ".")...)
	sort.Strings(codes)
	codes = slices.Compact(codes)
	if len(codes) < 20 {
		t.Fatalf("only %d codes found; is the parser looking in the right place?", len(codes))
	}
	return codes
}

// documentedCode is one line of ProblemCode's description: "- `CODE` ...".
var documentedCode = regexp.MustCompile("(?m)^- `([A-Z][A-Z0-9_]*)`")

// ProblemCode is an open set (a pattern, no enum: a generated client must not break when a code
// is added), and its description lists exactly the codes the code defines.
func TestOpenAPICodesMatchTheCode(t *testing.T) {
	spec, _ := loadOpenAPI(t)
	doc := parseOpenAPI(t, spec)
	codes := apiCodes(t)
	pc := doc.Components.Schemas["ProblemCode"]
	if len(pc.Enum) > 0 {
		t.Errorf("ProblemCode is a closed enum %v; it must stay an open set", pc.Enum)
	}
	pattern := regexp.MustCompile(pc.Pattern)
	var documented []string
	for _, m := range documentedCode.FindAllStringSubmatch(pc.Description, -1) {
		documented = append(documented, m[1])
	}
	sort.Strings(documented)
	if !slices.Equal(codes, documented) {
		t.Errorf("ProblemCode's description lists %v\nthe code defines %v", documented, codes)
	}
	for _, code := range codes {
		if pc.Pattern == "" || !pattern.MatchString(code) {
			t.Errorf("ProblemCode's pattern %q does not match %s", pc.Pattern, code)
		}
	}
	// Every code the titles table knows is defined, so a code added there is added here too.
	for code := range titles {
		if !slices.Contains(codes, code) {
			t.Errorf("titles has %s, which is not a Code* constant", code)
		}
	}
}

// responseDescription is the description of (path, method, status), following a $ref into
// components.responses.
func responseDescription(t *testing.T, doc openAPIDoc, path, method string, status int) string {
	t.Helper()
	op, ok := doc.Paths[path][strings.ToLower(method)]
	if !ok {
		t.Fatalf("openapi.yaml has no %s %s", method, path)
	}
	var o struct {
		Responses map[string]struct {
			Ref         string `yaml:"$ref"`
			Description string
		}
	}
	if err := op.Decode(&o); err != nil {
		t.Fatal(err)
	}
	r, ok := o.Responses[strconv.Itoa(status)]
	if !ok {
		return ""
	}
	if r.Ref != "" {
		return doc.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")].Description
	}
	return r.Description
}

func TestOpenAPIResponsesMatchTheHandler(t *testing.T) {
	spec, v := loadOpenAPI(t)
	doc := parseOpenAPI(t, spec)
	hash := strings.Repeat("ab", 32)
	const transfers, view = "/transfers", "/wallets/{walletAddress}/transfers/{idempotencyKey}"
	const history = "/wallets/{walletAddress}/transfers"
	viewPath := "/wallets/" + wallet + "/transfers/" + goodKey
	historyPath := "/wallets/" + wallet + "/transfers"
	listing := func(p transfer.HistoryPage, err error) func(context.Context, string, int, string) (transfer.HistoryPage, error) {
		return func(context.Context, string, int, string) (transfer.HistoryPage, error) { return p, err }
	}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	op := 99 // the last operation of the largest batch
	fullPage := transfer.HistoryPage{Next: "eyJwayI6IngifQ", Entries: []transfer.HistoryEntry{
		{ClientKey: goodKey, View: transfer.View{Status: "success", TransactionHash: hash, Ledger: 9}, Operation: transfer.Withdraw, Amount: "12.5", Asset: "USDC", CreatedAt: at, UpdatedAt: at.Add(5 * time.Second)},
		{ClientKey: "order-0002", View: transfer.View{Status: "pending", InDoubt: true}, Operation: transfer.Deposit, Amount: "1", Asset: "USDC", CreatedAt: at, UpdatedAt: at},
		{ClientKey: "order-0003", View: transfer.View{Status: "pending"}, Operation: transfer.Deposit, Amount: "1", Asset: "USDC", CreatedAt: at, UpdatedAt: at},
		{ClientKey: "order-0005", View: transfer.View{Status: "success", TransactionHash: hash, OperationIndex: &op, Ledger: 9}, Operation: transfer.Withdraw, Amount: "2", Asset: "USDC", CreatedAt: at, UpdatedAt: at},
		{ClientKey: "order-0004", View: transfer.View{Status: "error", TransactionHash: hash,
			Problem: &transfer.Problem{Code: transfer.CodeTransactionFailed, Detail: "failed", TransactionHash: hash, ResultCodes: []string{"tx_failed"}}},
			Operation: transfer.Withdraw, Amount: "0.0000001", Asset: "USDC", CreatedAt: at, UpdatedAt: at},
	}}
	json := map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: goodKey}
	failing := func(err error) func(context.Context, transfer.Input) (transfer.Outcome, error) {
		return func(context.Context, transfer.Input) (transfer.Outcome, error) { return transfer.Outcome{}, err }
	}
	viewing := func(v transfer.View, err error) func(context.Context, string, string) (transfer.View, error) {
		return func(context.Context, string, string) (transfer.View, error) { return v, err }
	}
	cancelling := func(c transfer.Cancellation, err error) func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error) {
		return func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error) {
			return c, err
		}
	}
	unavailable := func(code string) error {
		return &transfer.UnavailableError{Code: code, Detail: "down", RetryAfter: 1500 * time.Millisecond, Err: errors.New("cause")}
	}
	cases := []struct {
		name     string
		route    string
		r        req
		transfer func(context.Context, transfer.Input) (transfer.Outcome, error)
		view     func(context.Context, string, string) (transfer.View, error)
		history  func(context.Context, string, int, string) (transfer.HistoryPage, error)
		cancel   func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error)
		status   int
		code     string
	}{
		{name: "landed", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 200},
		{name: "replayed", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 200,
			transfer: func(context.Context, transfer.Input) (transfer.Outcome, error) {
				return transfer.Outcome{TransactionHash: hash, Ledger: 7, Replayed: true}, nil
			}},
		{name: "replayed, batched", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 200,
			transfer: func(context.Context, transfer.Input) (transfer.Outcome, error) {
				return transfer.Outcome{TransactionHash: hash, OperationIndex: &op, Ledger: 7, Replayed: true}, nil
			}},
		{name: "no key", route: transfers, r: req{"POST", transfers, goodBody(wallet), map[string]string{"Content-Type": "application/json"}}, status: 400, code: transfer.CodeKeyMissing},
		{name: "bad key", route: transfers, r: req{"POST", transfers, goodBody(wallet), map[string]string{"Content-Type": "application/json", IdempotencyKeyHeader: "short"}}, status: 400, code: transfer.CodeKeyInvalid},
		{name: "bad JSON", route: transfers, r: req{"POST", transfers, `{"amount":`, json}, status: 400, code: transfer.CodeRequestInvalid},
		{name: "media type", route: transfers, r: req{"POST", transfers, goodBody(wallet), map[string]string{"Content-Type": "text/plain", IdempotencyKeyHeader: goodKey}}, status: 415, code: CodeUnsupportedMediaType},
		{name: "too large", route: transfers, r: req{"POST", transfers, `{"amount":"` + strings.Repeat("1", DefaultMaxBodyBytes) + `"}`, json}, status: 413, code: CodeRequestTooLarge},
		{name: "address", route: transfers, r: req{"POST", transfers, goodBody("GABC"), json}, status: 422, code: transfer.CodeInvalidAddress},
		{name: "amount", route: transfers, r: req{"POST", transfers, `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"-1","asset":"USDC"}`, json}, status: 422, code: transfer.CodeInvalidAmount},
		{name: "asset", route: transfers, r: req{"POST", transfers, `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"DOGE"}`, json}, status: 422, code: transfer.CodeInvalidAsset},
		{name: "memo", route: transfers, r: req{"POST", transfers, `{"operationType":"withdraw","walletAddress":"` + wallet + `","amount":"1","asset":"USDC","memo":{"type":"id","value":"-1"}}`, json}, status: 422, code: transfer.CodeInvalidMemo},
		{name: "memo not carried", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 422, code: transfer.CodeMemoNotSupported,
			transfer: failing(&transfer.ValidationError{Code: transfer.CodeMemoNotSupported, Kind: transfer.KindUnacceptable, Field: "memo", Detail: "no memo on a contract call"})},
		{name: "operation", route: transfers, r: req{"POST", transfers, `{"operationType":"burn","walletAddress":"` + wallet + `","amount":"1","asset":"USDC"}`, json}, status: 422, code: transfer.CodeOperationNotSupp},
		{name: "failed on ledger", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 422, code: transfer.CodeTransactionFailed,
			transfer: failing(&transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "op_underfunded", TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_underfunded"}})},
		{name: "failed on ledger, batched", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 422, code: transfer.CodeTransactionFailed,
			transfer: failing(&transfer.RejectedError{Code: transfer.CodeTransactionFailed, Detail: "op_no_trust", TransactionHash: hash, ResultCodes: []string{"tx_failed", "op_no_trust"}, OperationIndex: &op})},
		{name: "amount above limit", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 422, code: transfer.CodeAmountAboveLimit,
			transfer: failing(&transfer.LimitError{Code: transfer.CodeAmountAboveLimit, Limit: "per-transfer", Asset: "USDC", Cap: 5000 * transfer.StroopsPerUnit})},
		{name: "daily limit", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 429, code: transfer.CodeDailyLimitExceeded,
			transfer: failing(&transfer.LimitError{Code: transfer.CodeDailyLimitExceeded, Limit: "asset", Asset: "USDC", Cap: 20000 * transfer.StroopsPerUnit,
				Charge: transfer.Charge{Scope: transfer.LimitAsset, Asset: "USDC", Day: "2026-12-02"}, RetryAfter: 3 * time.Hour})},
		{name: "conflict", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 409, code: transfer.CodeKeyConflict, transfer: failing(&transfer.ConflictError{})},
		{name: "in progress", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 409, code: transfer.CodeInProgress, transfer: failing(&transfer.InProgressError{RetryAfter: time.Second})},
		{name: "in doubt", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 409, code: transfer.CodeInDoubt, transfer: failing(&transfer.InDoubtError{FailingCode: transfer.CodeTimeout, RetryAfter: 5 * time.Second})},
		{name: "in doubt after a failed submission", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 409, code: transfer.CodeInDoubt, transfer: failing(&transfer.InDoubtError{FailingCode: transfer.CodeSubmissionFailed})},
		{name: "internal", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 500, code: transfer.CodeInternalError, transfer: failing(errors.New("bug"))},
		{name: "view success", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "success", TransactionHash: hash, Ledger: 9}, nil)},
		{name: "view success, batched", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "success", TransactionHash: hash, OperationIndex: &op, Ledger: 9}, nil)},
		{name: "view pending", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "pending"}, nil)},
		{name: "view in doubt", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "pending", InDoubt: true}, nil)},
		{name: "view error", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "error",
			Problem: &transfer.Problem{Code: transfer.CodeTransactionFailed, Detail: "failed", TransactionHash: hash, ResultCodes: []string{"tx_failed"}}}, nil)},
		{name: "view error, batched", route: view, r: req{"GET", viewPath, "", nil}, status: 200, view: viewing(transfer.View{Status: "error", TransactionHash: hash, OperationIndex: &op,
			Problem: &transfer.Problem{Code: transfer.CodeTransactionFailed, Detail: "failed", TransactionHash: hash, OperationIndex: &op, ResultCodes: []string{"tx_failed", "op_no_trust"}}}, nil)},
		{name: "view not found", route: view, r: req{"GET", viewPath, "", nil}, status: 404, code: transfer.CodeNotFound},
		{name: "view bad key", route: view, r: req{"GET", "/wallets/" + wallet + "/transfers/short", "", nil}, status: 400, code: transfer.CodeKeyInvalid},
		{name: "view bad wallet", route: view, r: req{"GET", "/wallets/GABC/transfers/" + goodKey, "", nil}, status: 422, code: transfer.CodeInvalidAddress},
		{name: "view store down", route: view, r: req{"GET", viewPath, "", nil}, status: 503, code: transfer.CodeStoreUnavailable, view: viewing(transfer.View{}, unavailable(transfer.CodeStoreUnavailable))},
		{name: "history", route: history, r: req{"GET", historyPath + "?limit=5", "", nil}, status: 200, history: listing(fullPage, nil)},
		{name: "history empty", route: history, r: req{"GET", historyPath, "", nil}, status: 200},
		{name: "history bad limit", route: history, r: req{"GET", historyPath + "?limit=101", "", nil}, status: 400, code: transfer.CodeLimitInvalid},
		{name: "history bad cursor", route: history, r: req{"GET", historyPath + "?cursor=abc", "", nil}, status: 400, code: transfer.CodeCursorInvalid,
			history: listing(transfer.HistoryPage{}, transfer.CursorInvalid())},
		{name: "history bad query", route: history, r: req{"GET", historyPath + "?limit=%zz", "", nil}, status: 400, code: transfer.CodeRequestInvalid},
		{name: "history bad wallet", route: history, r: req{"GET", "/wallets/GABC/transfers", "", nil}, status: 422, code: transfer.CodeInvalidAddress},
		{name: "history store down", route: history, r: req{"GET", historyPath, "", nil}, status: 503, code: transfer.CodeStoreUnavailable,
			history: listing(transfer.HistoryPage{}, unavailable(transfer.CodeStoreUnavailable))},
		{name: "history with a cancelled transfer", route: history, r: req{"GET", historyPath, "", nil}, status: 200,
			history: listing(transfer.HistoryPage{Entries: []transfer.HistoryEntry{{ClientKey: goodKey, View: transfer.View{Status: "cancelled", CancelledAt: at},
				Operation: transfer.Withdraw, Amount: "1", Asset: "USDC", CreatedAt: at, UpdatedAt: at}}}, nil)},
		{name: "view cancelled", route: view, r: req{"GET", viewPath, "", nil}, status: 200,
			view: viewing(transfer.View{Status: "cancelled", CancelledAt: at, CancelledBy: "arn:aws:iam::123456789012:user/ops"}, nil)},
		{name: "cancel", route: view, r: req{"DELETE", viewPath, "", nil}, status: 200,
			cancel: cancelling(transfer.Cancellation{View: transfer.View{Status: "cancelled", CancelledAt: at, CancelledBy: transfer.AnonymousCaller}}, nil)},
		{name: "cancel replayed", route: view, r: req{"DELETE", viewPath, "", nil}, status: 200,
			cancel: cancelling(transfer.Cancellation{Replayed: true, View: transfer.View{Status: "cancelled", CancelledAt: at, CancelledBy: transfer.AnonymousCaller}}, nil)},
		{name: "cancel not found", route: view, r: req{"DELETE", viewPath, "", nil}, status: 404, code: transfer.CodeNotFound},
		{name: "cancel taken", route: view, r: req{"DELETE", viewPath, "", nil}, status: 409, code: transfer.CodeNotCancellable,
			cancel: cancelling(transfer.Cancellation{}, &transfer.NotCancellableError{State: "in_flight"})},
		{name: "cancel settled", route: view, r: req{"DELETE", viewPath, "", nil}, status: 409, code: transfer.CodeNotCancellable,
			cancel: cancelling(transfer.Cancellation{}, &transfer.NotCancellableError{State: "success", TransactionHash: hash})},
		{name: "cancel settled, batched", route: view, r: req{"DELETE", viewPath, "", nil}, status: 409, code: transfer.CodeNotCancellable,
			cancel: cancelling(transfer.Cancellation{}, &transfer.NotCancellableError{State: "success", TransactionHash: hash, OperationIndex: &op})},
		{name: "cancel bad key", route: view, r: req{"DELETE", "/wallets/" + wallet + "/transfers/short", "", nil}, status: 400, code: transfer.CodeKeyInvalid},
		{name: "cancel bad wallet", route: view, r: req{"DELETE", "/wallets/GABC/transfers/" + goodKey, "", nil}, status: 422, code: transfer.CodeInvalidAddress},
		{name: "cancel store down", route: view, r: req{"DELETE", viewPath, "", nil}, status: 503, code: transfer.CodeStoreUnavailable,
			cancel: cancelling(transfer.Cancellation{}, unavailable(transfer.CodeStoreUnavailable))},
		{name: "post of a cancelled key", route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 409, code: transfer.CodeCancelled,
			transfer: failing(&transfer.CancelledError{CancelledAt: at})},
	}
	for _, code := range []string{transfer.CodeCircuitOpen, transfer.CodeRPCError, transfer.CodeSimulationError, transfer.CodeRestoreRequired,
		transfer.CodeTransactionExpired, transfer.CodeNetworkUnavailable, transfer.CodeStoreUnavailable, transfer.CodeConfigurationInvalid,
		transfer.CodeChannelsBusy, transfer.CodeSigningKeysUnavailable, transfer.CodeVaultUnderfunded, transfer.CodeFeeAccountUnderfunded,
		transfer.CodeServiceSideFailure, transfer.CodeFeeAboveCap} {
		cases = append(cases, struct {
			name     string
			route    string
			r        req
			transfer func(context.Context, transfer.Input) (transfer.Outcome, error)
			view     func(context.Context, string, string) (transfer.View, error)
			history  func(context.Context, string, int, string) (transfer.HistoryPage, error)
			cancel   func(context.Context, string, string, transfer.Canceller) (transfer.Cancellation, error)
			status   int
			code     string
		}{name: code, route: transfers, r: req{"POST", transfers, goodBody(wallet), json}, status: 503, code: code, transfer: failing(unavailable(code))})
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.svc.transfer, f.svc.view, f.svc.history, f.svc.cancel = c.transfer, c.view, c.history, c.cancel
			rec := f.do(c.r)
			if rec.Code != c.status {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.status, rec.Body)
			}
			hr := httptest.NewRequest(c.r.method, c.r.path, strings.NewReader(c.r.body))
			for k, v := range c.r.header {
				hr.Header.Set(k, v)
			}
			resp := rec.Result()
			if ok, errs := v.ValidateHttpResponse(hr, resp); !ok {
				for _, e := range errs {
					t.Errorf("%s %s -> %d does not conform: %s: %s", c.r.method, c.r.path, rec.Code, e.Message, e.Reason)
				}
				t.Logf("body: %s", rec.Body)
			}
			if c.code == "" {
				return
			}
			if got := regexp.MustCompile(`"code":"([A-Z_]+)"`).FindStringSubmatch(rec.Body.String()); got == nil || got[1] != c.code {
				t.Fatalf("body %s, want code %s", rec.Body, c.code)
			}
			if desc := responseDescription(t, doc, c.route, c.r.method, c.status); !strings.Contains(desc, c.code) {
				t.Errorf("openapi.yaml: the %d response of %s %s does not name %s: %q", c.status, c.r.method, c.route, c.code, desc)
			}
			seen[c.code] = true
		})
	}
	if resp := responseDescription(t, doc, transfers, "POST", 409); !strings.Contains(resp, "failingCode") {
		t.Error("the 409 response does not explain failingCode")
	}
	// Every code is answered by some case above, or is only a failingCode, or is one of the
	// handler's own answers outside the two operations (other paths and methods).
	outside := []string{transfer.CodeTimeout, transfer.CodeSubmissionFailed, transfer.CodeLeaseExpired, CodeMethodNotAllowed, CodeRouteNotFound}
	for _, code := range append(codeConstants(t, "../transfer"), codeConstants(t, ".")...) {
		if !seen[code] && !slices.Contains(outside, code) {
			t.Errorf("no case answers %s; add one", code)
		}
	}
}

// Every code the code base defines has its entry in README.md's "Problem types" (the anchor
// problem-<the kebab case its type URI ends in>) and its line in openapi.yaml; the README has no
// entry for a code that is gone.
func TestProblemTypesResolveToTheREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "\n### Problem types\n")
	if start < 0 {
		t.Fatal(`README.md has no section "### Problem types"`)
	}
	section := text[start+1:]
	if end := regexp.MustCompile(`\n#{1,3} `).FindStringIndex(section[1:]); end != nil {
		section = section[:end[0]+1]
	}
	spec, _ := loadOpenAPI(t)
	problemCode := parseOpenAPI(t, spec).Components.Schemas["ProblemCode"].Description
	anchor := regexp.MustCompile(`<a id="problem-([a-z0-9-]+)"></a>` + "`([A-Z0-9_]+)`")
	rows := map[string]string{} // anchor -> the code its row names
	for _, m := range anchor.FindAllStringSubmatch(section, -1) {
		rows[m[1]] = m[2]
	}
	codes := apiCodes(t)
	for _, code := range codes {
		typ := problemType(code)
		frag, ok := strings.CutPrefix(typ, ProblemTypeBase)
		if !ok || !strings.HasPrefix(ProblemTypeBase, "tag:") || !strings.HasSuffix(ProblemTypeBase, ":problem:") {
			t.Fatalf("type %q is not a tag URI naming a README.md row", typ)
		}
		if got, ok := rows[frag]; !ok || got != code {
			t.Errorf(`README.md's "Problem types" has no row <a id="problem-%s"></a>`+"`%s`"+` (the anchor of %s)`, frag, code, typ)
		}
		if !strings.Contains(problemCode, "- `"+code+"`") {
			t.Errorf("openapi.yaml's ProblemCode does not describe %s", code)
		}
	}
	for frag, code := range rows {
		if !slices.Contains(codes, code) || ProblemTypeBase+frag != problemType(code) {
			t.Errorf("README.md has a row %q for %s, which the code does not define under that anchor", frag, code)
		}
	}
	// The anchors appear once in the whole README (a second one would shadow the first).
	for frag := range rows {
		if n := strings.Count(text, `id="problem-`+frag+`"`); n != 1 {
			t.Errorf("README.md has the anchor problem-%s %d times", frag, n)
		}
	}
}

// The handler's problems carry the type of their code: ProblemTypeBase + lower kebab case.
func TestProblemTypeOfAnAnswer(t *testing.T) {
	f := newFixture(t)
	pd := problem(t, f.do(post(goodBody(wallet), map[string]string{IdempotencyKeyHeader: ""})), 400, transfer.CodeKeyMissing)
	if want := "tag:stellar-transfer-orchestrator,2026:problem:idempotency-key-missing"; pd.Type != want {
		t.Fatalf("type %q, want %q", pd.Type, want)
	}
}

// API Gateway's own answers ({"message"} as application/json) conform to the document on every
// operation, at each status it gives them. At 500 and 503, where the service answers problems
// too, both media types declare ServerError, one of Problem and GatewayMessage (a generator may
// parse every body of a status with its first media type's schema): each body passes as one of
// them (and only one: a problem has no message member, Problem takes no other), and a body that
// is neither passes as none.
// At 403, 429 and 504 only API Gateway answers: application/json only, and a problem is refused;
// but POST /transfers answers 429 DAILY_LIMIT_EXCEEDED itself, so its 429 declares both, as 500.
func TestOpenAPIGatewayAnswers(t *testing.T) {
	_, v := loadOpenAPI(t)
	viewPath := "/wallets/" + wallet + "/transfers/" + goodKey
	problemBody := map[string]any{"type": problemType(transfer.CodeStoreUnavailable), "title": "Store unavailable", "status": 503,
		"code": transfer.CodeStoreUnavailable, "classification": "retryable"}
	for _, status := range []int{403, 429, 500, 503, 504} {
		for _, r := range []req{post(goodBody(wallet), nil), {"GET", viewPath, "", nil}, {"GET", "/wallets/" + wallet + "/transfers?limit=5", "", nil}} {
			both := status == 500 || status == 503 || status == 429 && r.method == "POST"
			hr := httptest.NewRequest(r.method, r.path, strings.NewReader(r.body))
			for k, val := range r.header {
				hr.Header.Set(k, val)
			}
			answer := func(contentType string, body any) bool {
				rec := httptest.NewRecorder()
				writeJSON(rec, status, contentType, body)
				ok, _ := v.ValidateHttpResponse(hr, rec.Result())
				return ok
			}
			if !answer("application/json", map[string]string{"message": "Forbidden"}) {
				t.Errorf("API Gateway's %d on %s %s does not conform", status, r.method, r.path)
			}
			if got := answer("application/problem+json", problemBody); got != both {
				t.Errorf("a problem as a %d on %s %s conforms: %v, want %v", status, r.method, r.path, got, both)
			}
			if got := answer("application/json", problemBody); got != both {
				t.Errorf("a problem as application/json, a %d on %s %s, conforms: %v, want %v", status, r.method, r.path, got, both)
			}
			for _, ct := range []string{"application/json", "application/problem+json"} {
				if answer(ct, map[string]string{"error": "neither"}) {
					t.Errorf("a body that is neither a problem nor a gateway message passes as a %d %s on %s %s", status, ct, r.method, r.path)
				}
			}
		}
	}
}

// A method a path does not take answers the 405 each operation declares: a problem and Allow.
func TestOpenAPIMethodNotAllowed(t *testing.T) {
	spec, v := loadOpenAPI(t)
	doc := parseOpenAPI(t, spec)
	for _, c := range []struct{ method, path, route, declared, allow string }{
		{"PUT", "/transfers", "/transfers", "POST", "POST"},
		{"DELETE", "/wallets/" + wallet + "/transfers", "/wallets/{walletAddress}/transfers", "GET", "GET, HEAD"},
		{"PATCH", "/wallets/" + wallet + "/transfers/" + goodKey, "/wallets/{walletAddress}/transfers/{idempotencyKey}", "GET", "DELETE, GET, HEAD"},
	} {
		f := newFixture(t)
		rec := f.do(req{c.method, c.path, "", nil})
		if rec.Code != 405 || rec.Header().Get("Allow") != c.allow {
			t.Fatalf("%s %s: %d, Allow %q; want 405, Allow %q", c.method, c.path, rec.Code, rec.Header().Get("Allow"), c.allow)
		}
		// Validated as the answer of the path's operation, which declares it.
		hr := httptest.NewRequest(c.declared, c.path, nil)
		if c.declared == "POST" {
			hr.Header.Set("Content-Type", "application/json")
			hr.Header.Set(IdempotencyKeyHeader, goodKey)
		}
		if ok, errs := v.ValidateHttpResponse(hr, rec.Result()); !ok {
			t.Errorf("%s %s -> 405 does not conform to the declared 405: %v", c.method, c.path, errs)
		}
		if desc := responseDescription(t, doc, c.route, c.declared, 405); !strings.Contains(desc, CodeMethodNotAllowed) || !strings.Contains(desc, "Allow") {
			t.Errorf("the 405 of %s %s does not name %s and Allow: %q", c.declared, c.path, CodeMethodNotAllowed, desc)
		}
	}
}

// Both forms of the Idempotency-Key header conform to the document, and a malformed String
// does not.
func TestOpenAPIKeyForms(t *testing.T) {
	_, v := loadOpenAPI(t)
	for key, want := range map[string]bool{goodKey: true, `"` + goodKey + `"`: true, `"` + goodKey: false, `"short"`: false} {
		hr := httptest.NewRequest("POST", "/transfers", strings.NewReader(goodBody(wallet)))
		hr.Header.Set("Content-Type", "application/json")
		hr.Header.Set(IdempotencyKeyHeader, key)
		if ok, errs := v.ValidateHttpRequest(hr); ok != want {
			t.Errorf("Idempotency-Key %s: conforms %v, want %v (%v)", key, ok, want, errs)
		}
	}
}

// The document's security and servers say what template.yaml deploys: every route of the HTTP
// API has AWS_IAM authorization, or NONE when ApiAuthorization says so (hence the empty
// alternative); the stage is $default (no stage segment in the server URL); the integration's
// timeout is the 30 seconds the 503 and 504 answers name; the throttling parameters the 429 names
// exist.
func TestOpenAPIMatchesTheTemplate(t *testing.T) {
	spec, _ := loadOpenAPI(t)
	doc := parseOpenAPI(t, spec)
	tpl, err := cfntemplate.Load("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var routes, iamOrNone int
	for name, r := range tpl.Resources {
		switch r.Type {
		case "AWS::ApiGatewayV2::Route":
			routes++
			auth := r.Properties["AuthorizationType"]
			if reflect.DeepEqual(auth, map[string]any{"Fn::If": []any{"IamAuthorization", "AWS_IAM", "NONE"}}) {
				iamOrNone++
			} else if auth != "AWS_IAM" {
				t.Errorf("route %s has AuthorizationType %v; the document says AWS_IAM (or NONE by parameter)", name, auth)
			}
		case "AWS::ApiGatewayV2::Stage":
			if r.Properties["StageName"] != "$default" {
				t.Errorf("stage %s is %v; the document's server URL has no stage segment", name, r.Properties["StageName"])
			}
		case "AWS::ApiGatewayV2::Integration":
			if ms, _ := r.Properties["TimeoutInMillis"].(int); ms != 30000 {
				t.Errorf("integration %s times out after %v ms; the document says 30 seconds", name, r.Properties["TimeoutInMillis"])
			}
		}
	}
	if routes < 3 {
		t.Fatalf("template.yaml has %d routes", routes)
	}
	scheme := doc.Components.SecuritySchemes["sigv4"]
	if scheme["type"] != "apiKey" || scheme["in"] != "header" || scheme["name"] != "Authorization" || scheme["x-amazon-apigateway-authtype"] != "awsSigv4" {
		t.Errorf("securitySchemes.sigv4 = %v; want API Gateway's SigV4 form", scheme)
	}
	var sigv4, anonymous bool
	for _, req := range doc.Security {
		_, has := req["sigv4"]
		sigv4 = sigv4 || has && len(req) == 1
		anonymous = anonymous || len(req) == 0
	}
	if !sigv4 || anonymous != (iamOrNone > 0) {
		t.Errorf("security %v: want sigv4, and the empty alternative exactly when a route can be NONE (%d can)", doc.Security, iamOrNone)
	}
	for _, p := range []string{"ApiAuthorization", "ChannelCount"} {
		if _, ok := tpl.Parameters[p]; !ok || !bytes.Contains(spec, []byte(p)) {
			t.Errorf("the parameter %s is not in the template or not named in the document", p)
		}
	}
	var deployed, local bool
	for _, s := range doc.Servers {
		switch {
		case s.URL == "https://{apiId}.execute-api.{region}.{urlSuffix}":
			deployed = s.Variables["apiId"].Default != "" && s.Variables["region"].Default != "" &&
				slices.Equal(s.Variables["urlSuffix"].Enum, []string{"amazonaws.com", "amazonaws.com.cn"})
		case s.URL == "http://127.0.0.1:3000":
			local = true
		}
	}
	if !deployed || !local {
		t.Errorf("servers %+v: want the execute-api URL with its variables and the local stack", doc.Servers)
	}
	if d := doc.Components.Responses["Unavailable"].Description; !strings.Contains(d, "30 seconds") {
		t.Errorf("the 503 response does not name the integration's 30 seconds: %q", d)
	}
}

// The Idempotency-Key header's pattern in the document is the grammar the service parses: a
// value matches it exactly when parseKeyHeader takes it (with the default maximum length), but
// for a key holding a secret seed, which matches and is refused. Client generators and
// schemathesis build and check header values from this pattern.
func keyFieldPattern(t testing.TB) *regexp.Regexp {
	t.Helper()
	spec, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d openAPIDoc
	if err := yaml.Unmarshal(spec, &d); err != nil {
		t.Fatal(err)
	}
	p := d.Components.Schemas["IdempotencyKeyField"].Pattern
	if p == "" {
		t.Fatal("openapi.yaml: IdempotencyKeyField has no pattern")
	}
	return regexp.MustCompile(p)
}

// keyHeaderTaken reports whether the service takes v as the one Idempotency-Key header.
func keyHeaderTaken(v string) bool {
	_, err := parseKeyHeader(transfer.Rules{}, http.Header{IdempotencyKeyHeader: {v}})
	return err == nil
}

func TestOpenAPIKeyPatternIsTheParser(t *testing.T) {
	pattern := keyFieldPattern(t)
	k := "order-00000001"
	for _, c := range []struct {
		v    string
		want bool
	}{
		{k, true}, {`"` + k + `"`, true}, {strings.Repeat("a", 255), true}, {strings.Repeat("a", 256), false},
		{"short", false}, {`"short"`, false}, {`""`, false}, {`"` + k, false}, {k + `"`, false},
		{`"` + k + `";a`, true}, {`"` + k + `";a=1;b=?0`, true}, {`"` + k + `"; a=1`, true}, {`"` + k + `";  *x.y-z_1=tok/en:1`, true},
		{`"` + k + `";a=-123456789012345`, true}, {`"` + k + `";a=1234567890123456`, false},
		{`"` + k + `";a=123456789012.123`, true}, {`"` + k + `";a=1234567890123.1`, false}, {`"` + k + `";a=1.1234`, false}, {`"` + k + `";a=1.`, false},
		{`"` + k + `";a="x \" \\ y"`, true}, {`"` + k + `";a="x \n"`, false}, {`"` + k + `";a="x`, false},
		{`"` + k + `";a=:aGk=:`, true}, {`"` + k + `";a=::`, true}, {`"` + k + `";a=:aGk:`, false}, {`"` + k + `";a=:a*==:`, false},
		{`"` + k + `";a=?1`, true}, {`"` + k + `";a=?2`, false},
		{`"` + k + `";a=@1659578233`, true}, {`"` + k + `";a=@-1`, true}, {`"` + k + `";a=@1.5`, false},
		{`"` + k + `";a=%"caf%c3%a9 \ ok"`, true}, {`"` + k + `";a=%"%f0%9f%98%80"`, true},
		{`"` + k + `";a=%"%c3"`, false}, {`"` + k + `";a=%"%ed%a0%80"`, false}, {`"` + k + `";a=%"%C3%A9"`, false}, {`"` + k + `";a=%"%"`, false},
		{`"` + k + `";A=1`, false}, {`"` + k + `";1a=1`, false}, {`"` + k + `";`, false}, {`"` + k + `";a=`, false}, {`"` + k + `" ;a`, false},
		{`"` + k + `";a=1,b`, false}, {`"` + k + `";a=(1)`, false}, {`"` + k + `"x`, false},
		{`"order\-0001"`, false}, {`"order\"00001"`, false}, {`?1`, false}, {`order-0001;a=1`, false},
	} {
		if got := keyHeaderTaken(c.v); got != c.want {
			t.Errorf("the service takes Idempotency-Key %s: %v, the case says %v", c.v, got, c.want)
		}
		if got := pattern.MatchString(c.v); got != c.want {
			t.Errorf("openapi.yaml's pattern matches Idempotency-Key %s: %v, the service takes it: %v", c.v, got, c.want)
		}
	}
	// The one difference, said in the document: a key holding a secret seed matches and is refused.
	seed := randomAddress(versionSeed)
	if !pattern.MatchString(seed) || keyHeaderTaken(seed) {
		t.Error("a seed as the key: the pattern should match it and the service refuse it")
	}
}

// FuzzOpenAPIKeyPattern: for any header value net/http can deliver (no surrounding white space),
// the document's pattern and the service agree, seeds aside.
func FuzzOpenAPIKeyPattern(f *testing.F) {
	pattern := keyFieldPattern(f)
	for _, s := range []string{"order-00000001", `"order-00000001"`, `"order-00000001";a=%"%e2%82%ac"`, `"order-00000001";b=:AAAA:;c="x"`, `"order-00000001";d=*t;e=@0`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if strings.Trim(v, " \t") != v || logging.ContainsSeed(v) {
			t.Skip()
		}
		if m, taken := pattern.MatchString(v), keyHeaderTaken(v); m != taken {
			t.Fatalf("Idempotency-Key %q: the pattern matches %v, the service takes it %v", v, m, taken)
		}
	})
}

// The fields each kind of object may carry (OpenAPI 3.1.0, section 4.8, and the JSON Schema
// 2020-12 keywords with OpenAPI's own), besides x- extensions. OpenAPI 3.1 lets a schema carry
// unknown keywords, so the validators take a description that YAML split into stray keys (an
// unquoted ", " inside a { } flow mapping: `description: the amount, e.g. "1000.5"` becomes a
// description and a key `e.g. "1000.5"` with no value); this walk refuses them.
var openAPIFields = map[string][]string{
	"root":           {"openapi", "info", "jsonSchemaDialect", "servers", "paths", "webhooks", "components", "security", "tags", "externalDocs"},
	"info":           {"title", "summary", "description", "termsOfService", "contact", "license", "version"},
	"license":        {"name", "identifier", "url"},
	"server":         {"url", "description", "variables"},
	"serverVariable": {"enum", "default", "description"},
	"tag":            {"name", "description", "externalDocs"},
	"components":     {"schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"},
	"pathItem":       {"$ref", "summary", "description", "get", "put", "post", "delete", "options", "head", "patch", "trace", "servers", "parameters"},
	"operation":      {"tags", "summary", "description", "externalDocs", "operationId", "parameters", "requestBody", "responses", "callbacks", "deprecated", "security", "servers"},
	"parameter":      {"name", "in", "description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"},
	"header":         {"description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"},
	"requestBody":    {"description", "content", "required"},
	"mediaType":      {"schema", "example", "examples", "encoding"},
	"response":       {"description", "headers", "content", "links"},
	"securityScheme": {"type", "description", "name", "in", "scheme", "bearerFormat", "flows", "openIdConnectUrl"},
	"reference":      {"$ref", "summary", "description"},
	"schema": {"$schema", "$id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$defs", "$comment", "$vocabulary",
		"type", "enum", "const", "title", "description", "default", "examples", "example", "deprecated", "readOnly", "writeOnly",
		"format", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
		"items", "prefixItems", "contains", "minContains", "maxContains", "minItems", "maxItems", "uniqueItems", "unevaluatedItems",
		"properties", "patternProperties", "additionalProperties", "propertyNames", "required", "minProperties", "maxProperties",
		"dependentRequired", "dependentSchemas", "unevaluatedProperties", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
		"contentEncoding", "contentMediaType", "contentSchema", "discriminator", "xml", "externalDocs"},
}

// openAPIStrayKeys walks the document and returns, as "path: problem", every key its object may
// not carry and every key whose value is null (YAML's reading of a key with no value).
func openAPIStrayKeys(root *yaml.Node) []string {
	var out []string
	var walk func(n *yaml.Node, kind, at string)
	each := func(n *yaml.Node, kind, at string) { // a map of name -> object, or a list of objects
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				walk(n.Content[i+1], kind, at+"/"+n.Content[i].Value)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				walk(c, kind, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk = func(n *yaml.Node, kind, at string) {
		if n.Kind != yaml.MappingNode {
			return
		}
		allowed := openAPIFields[kind]
		if kind != "schema" && kind != "pathItem" {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == "$ref" {
					allowed = openAPIFields["reference"]
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			where := at + "/" + k
			if v.Tag == "!!null" {
				out = append(out, fmt.Sprintf("%s (line %d): a key with no value", where, n.Content[i].Line))
			}
			if !strings.HasPrefix(k, "x-") && !slices.Contains(allowed, k) {
				out = append(out, fmt.Sprintf("%s (line %d): %q is not a field of a %s object", where, n.Content[i].Line, k, kind))
				continue
			}
			switch kind + "." + k {
			case "root.info":
				walk(v, "info", where)
			case "info.license":
				walk(v, "license", where)
			case "root.servers", "pathItem.servers", "operation.servers":
				each(v, "server", where)
			case "server.variables":
				each(v, "serverVariable", where)
			case "root.tags":
				each(v, "tag", where)
			case "root.paths":
				each(v, "pathItem", where)
			case "root.components":
				walk(v, "components", where)
			case "components.schemas", "schema.properties", "schema.$defs", "schema.patternProperties", "schema.dependentSchemas",
				"schema.allOf", "schema.anyOf", "schema.oneOf", "schema.prefixItems":
				each(v, "schema", where)
			case "components.responses", "operation.responses":
				each(v, "response", where)
			case "components.parameters", "pathItem.parameters", "operation.parameters":
				each(v, "parameter", where)
			case "components.headers", "response.headers":
				each(v, "header", where)
			case "components.securitySchemes":
				each(v, "securityScheme", where)
			case "components.requestBodies":
				each(v, "requestBody", where)
			case "operation.requestBody":
				walk(v, "requestBody", where)
			case "requestBody.content", "response.content", "parameter.content", "header.content":
				each(v, "mediaType", where)
			case "mediaType.schema", "parameter.schema", "header.schema", "schema.items", "schema.additionalProperties", "schema.not",
				"schema.if", "schema.then", "schema.else", "schema.contains", "schema.propertyNames", "schema.unevaluatedItems",
				"schema.unevaluatedProperties", "schema.contentSchema":
				walk(v, "schema", where)
			}
			if kind == "pathItem" && slices.Contains([]string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}, k) {
				walk(v, "operation", where)
			}
		}
	}
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		walk(root.Content[0], "root", "#")
	}
	return out
}

func TestOpenAPIHasNoStrayKeys(t *testing.T) {
	spec, _ := loadOpenAPI(t)
	var root yaml.Node
	if err := yaml.Unmarshal(spec, &root); err != nil {
		t.Fatal(err)
	}
	for _, s := range openAPIStrayKeys(&root) {
		t.Errorf("openapi.yaml: %s", s)
	}
	// The walk reaches the places such keys hide (a property's schema, a response's header, a
	// server variable) and finds them there.
	var broken yaml.Node
	if err := yaml.Unmarshal([]byte(`openapi: 3.1.0
info: { title: t, version: "1" }
servers: [{ url: "http://x", variables: { v: { default: a, description: one, two } } }]
paths:
  /x:
    get:
      responses:
        '200': { description: ok, headers: { H: { description: a, b, schema: { type: string } } } }
components:
  schemas:
    S:
      properties:
        amount: { type: string, description: the amount, e.g. "1000.5" }
        at: { type: string, description: when (RFC 3339, UTC, milliseconds) }
        items: { type: array, items: { type: string, descripton: typo } }
`), &broken); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(openAPIStrayKeys(&broken), "\n")
	for _, want := range []string{`variables/v/two`, `headers/H/b`, `amount/e.g. "1000.5"`, `at/UTC`, `at/milliseconds)`, `items/items/descripton`} {
		if !strings.Contains(got, want) {
			t.Errorf("the walk misses %s in the broken document; it found:\n%s", want, got)
		}
	}
}
