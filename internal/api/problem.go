package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/stellar-transfer/orchestrator/internal/logging"
	"github.com/stellar-transfer/orchestrator/internal/transfer"
)

// ProblemTypeBase prefixes every problem's type URI; the code in lower kebab case follows it.
// The URI is a tag URI (RFC 4151): a name for the problem type, not an address, since the
// project has no address of its own that anyone has checked; RFC 9457 section 3.1.1 allows a
// type that is not dereferenced. What a type means, and what to do about it, is the row of
// README.md's "Problem types" whose anchor is id="problem-<the same kebab case>" (checked by this
// package's tests).
const ProblemTypeBase = "tag:stellar-transfer-orchestrator,2026:problem:"

// Codes of the HTTP layer itself (the domain's are transfer.Code*).
const (
	CodeUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	CodeRequestTooLarge      = "REQUEST_TOO_LARGE"
	CodeMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	CodeRouteNotFound        = "NOT_FOUND"
)

// ProblemDetails is an RFC 9457 problem details object with this API's extension members.
type ProblemDetails struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail,omitempty"`
	Instance string `json:"instance,omitempty"`

	Code           string                  `json:"code"`
	Classification transfer.Classification `json:"classification"`
	// RetryAfterMs is how long to wait before retrying, in milliseconds (rounded up).
	RetryAfterMs    int64  `json:"retryAfterMs,omitempty"`
	TraceID         string `json:"traceId,omitempty"`
	TransactionHash string `json:"transactionHash,omitempty"`
	// OperationIndex is the 0-based index of the transfer's operation in TransactionHash's
	// transaction, present only when that transaction paid several transfers (a batch:
	// transfer.OperationIndexOf); an extension member (RFC 9457 section 3.2).
	OperationIndex *int     `json:"operationIndex,omitempty"`
	ResultCodes    []string `json:"resultCodes,omitempty"`
	FailingCode    string   `json:"failingCode,omitempty"`
	// State is the transfer's state in a cancellation's problem: TRANSFER_NOT_CANCELLABLE
	// (in_flight, in_doubt, success, error) and TRANSFER_CANCELLED (cancelled).
	State string `json:"state,omitempty"`
	// Limit names the limit that refused the transfer (AMOUNT_ABOVE_LIMIT: "per-transfer",
	// "wallet daily" or "asset daily"; DAILY_LIMIT_EXCEEDED: "wallet" or "asset"), LimitCap its cap
	// as a decimal amount of the asset.
	Limit    string `json:"limit,omitempty"`
	LimitCap string `json:"limitCap,omitempty"`
}

// titles are the fixed summaries per code (RFC 9457 section 3.1.3: the title does not change
// between occurrences of a type). An unknown code falls back to its words in sentence case.
var titles = map[string]string{
	transfer.CodeKeyMissing:             "Idempotency-Key header missing",
	transfer.CodeKeyInvalid:             "Idempotency-Key invalid",
	transfer.CodeRequestInvalid:         "Request invalid",
	transfer.CodeInvalidAddress:         "Invalid wallet address",
	transfer.CodeInvalidAmount:          "Invalid amount",
	transfer.CodeInvalidAsset:           "Invalid asset",
	transfer.CodeOperationNotSupp:       "Operation not supported",
	transfer.CodeInvalidMemo:            "Invalid memo",
	transfer.CodeMemoNotSupported:       "Memo or muxed destination not supported",
	transfer.CodeKeyConflict:            "Idempotency-Key reused with a different request",
	transfer.CodeInDoubt:                "Transfer in doubt",
	transfer.CodeInProgress:             "Transfer in progress",
	transfer.CodeTimeout:                "Transfer timed out",
	transfer.CodeCircuitOpen:            "Network circuit open",
	transfer.CodeSimulationError:        "Simulation failed",
	transfer.CodeRestoreRequired:        "Ledger restore required",
	transfer.CodeRPCError:               "RPC error",
	transfer.CodeSubmissionFailed:       "Submission failed",
	transfer.CodeInternalError:          "Internal error",
	transfer.CodeTransactionFailed:      "Transaction failed",
	transfer.CodeTransactionExpired:     "Transaction expired",
	transfer.CodeNetworkUnavailable:     "Network unavailable",
	transfer.CodeStoreUnavailable:       "Store unavailable",
	transfer.CodeNotFound:               "Transfer not found",
	transfer.CodeChannelsBusy:           "Channel accounts busy",
	transfer.CodeSigningKeysUnavailable: "Signing keys unavailable",
	transfer.CodeVaultUnderfunded:       "Vault underfunded",
	transfer.CodeFeeAccountUnderfunded:  "Fee account underfunded",
	transfer.CodeServiceSideFailure:     "Failed on the service's side",
	transfer.CodeConfigurationInvalid:   "Configuration invalid",
	transfer.CodeFeeAboveCap:            "Network fee above the cap",
	transfer.CodeAmountAboveLimit:       "Amount above the limit",
	transfer.CodeDailyLimitExceeded:     "Daily limit exceeded",
	transfer.CodeLeaseExpired:           "Lease expired",
	transfer.CodeLimitInvalid:           "Page size invalid",
	transfer.CodeCursorInvalid:          "Cursor invalid",
	transfer.CodeNotCancellable:         "Transfer not cancellable",
	transfer.CodeCancelled:              "Transfer cancelled",
	CodeUnsupportedMediaType:            "Unsupported media type",
	CodeRequestTooLarge:                 "Request body too large",
	CodeMethodNotAllowed:                "Method not allowed",
	CodeRouteNotFound:                   "Not found",
}

// problemType is the type URI of a code: ProblemTypeBase + lower kebab case, e.g.
// ProblemTypeBase + "idempotency-key-missing" for IDEMPOTENCY_KEY_MISSING.
func problemType(code string) string {
	return ProblemTypeBase + strings.ReplaceAll(strings.ToLower(code), "_", "-")
}

func problemTitle(code string, status int) string {
	if t, ok := titles[code]; ok {
		return t
	}
	if code == "" {
		return http.StatusText(status)
	}
	words := strings.ToLower(strings.ReplaceAll(code, "_", " "))
	return strings.ToUpper(words[:1]) + words[1:]
}

// newProblem renders p with status (statusOf for a domain problem). A status outside 400-599
// becomes 500: a problem that says "success" is a bug, not a success.
func newProblem(p transfer.Problem, status int, r *http.Request) ProblemDetails {
	if status < 400 || status > 599 {
		status = http.StatusInternalServerError
	}
	code := p.Code
	if code == "" {
		code = transfer.CodeInternalError
	}
	class := p.Classification
	if class == "" {
		class = transfer.Indeterminate
	}
	detail := p.Detail
	if detail == "" {
		detail = http.StatusText(status)
	}
	pd := ProblemDetails{
		Type:            problemType(code),
		Title:           problemTitle(code, status),
		Status:          status,
		Detail:          logging.Clip(detail, maxDetail),
		Code:            code,
		Classification:  class,
		RetryAfterMs:    ceilMillis(p.RetryAfter),
		TransactionHash: p.TransactionHash,
		OperationIndex:  p.OperationIndex,
		ResultCodes:     p.ResultCodes,
		FailingCode:     p.FailingCode,
		State:           p.State,
		Limit:           p.Limit,
		LimitCap:        p.LimitCap,
	}
	if r != nil {
		pd.Instance = instanceOf(r.URL.Path)
	}
	return pd
}

// instanceOf is a problem's instance for a request path as decoded (URL.Path; for an event
// whose path does not decode, lenientUnescape's reading of it): secret seeds redacted in the
// decoded text, where "/wallets/%53ABC..." is "/wallets/SABC...", then clipped to maxInstance,
// then escaped again so that the instance stays a URI reference. A client may paste a seed into
// a path by mistake; it must never come back in an answer, escaped or not.
func instanceOf(decodedPath string) string {
	return (&url.URL{Path: logging.Clip(decodedPath, maxInstance)}).EscapedPath()
}

// maxInstance and maxDetail bound what a problem echoes of the request (its path, quoted input):
// the problem identifies the request, it need not carry input of any length back.
const (
	maxInstance = 256
	maxDetail   = 512
)

// internalProblem is what any error that is not a transfer.ProblemError becomes. Its detail is
// fixed: the error's own text may name internals and is only logged. Classification is
// indeterminate (README.md, "Problem types": INTERNAL_ERROR; unknown failures default to indeterminate).
func internalProblem(r *http.Request) ProblemDetails {
	return newProblem(transfer.Problem{
		Code:           transfer.CodeInternalError,
		Classification: transfer.Indeterminate,
		Detail:         "An internal error occurred. Retrying with the same Idempotency-Key is safe; quote the traceId when reporting it.",
	}, http.StatusInternalServerError, r)
}

// httpProblem is a problem of the HTTP layer (terminal: the same request fails the same way).
func httpProblem(r *http.Request, status int, code, detail string) ProblemDetails {
	return newProblem(transfer.Problem{Code: code, Classification: transfer.Terminal, Detail: detail}, status, r)
}

// problemFor maps err with errors.As to a transfer.ProblemError; anything else is an internal
// error. ok reports whether err was a ProblemError.
func problemFor(err error, r *http.Request) (pd ProblemDetails, ok bool) {
	var pe transfer.ProblemError
	if errors.As(err, &pe) {
		p := pe.Problem()
		return newProblem(p, statusOf(p), r), true
	}
	return internalProblem(r), false
}

// ceilMillis is d in whole milliseconds, rounded up; 0 for d <= 0.
func ceilMillis(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// retryAfterSeconds is the Retry-After header's delay-seconds (RFC 9110 section 10.2.3) for ms
// milliseconds: whole seconds, rounded up, at least 1.
func retryAfterSeconds(ms int64) string {
	s := (ms + 999) / 1000
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// writeProblem writes pd as application/problem+json, with Retry-After when RetryAfterMs is set.
func writeProblem(w http.ResponseWriter, r *http.Request, pd ProblemDetails) {
	if st := stateOf(r.Context()); st != nil {
		st.code = pd.Code
		if pd.TraceID == "" {
			pd.TraceID = st.traceID
		}
	}
	h := w.Header()
	if pd.RetryAfterMs > 0 {
		h.Set("Retry-After", retryAfterSeconds(pd.RetryAfterMs))
	}
	writeJSON(w, pd.Status, "application/problem+json", pd)
}

// writeJSON writes v as JSON with status. HTML escaping is off: no response is meant for a browser
// to render, and details quote client input.
func writeJSON(w http.ResponseWriter, status int, contentType string, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Only a bug (an unencodable value) gets here; never send half a body.
		status, contentType = http.StatusInternalServerError, "application/problem+json"
		buf.Reset()
		buf.WriteString(`{"type":"` + problemType(transfer.CodeInternalError) + `","title":"Internal error","status":500,"code":"INTERNAL_ERROR","classification":"indeterminate"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", contentType)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
